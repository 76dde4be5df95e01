"""BROKER_LOGGER config resources (type 8): the broker's loggers and their levels, changed at runtime.

Kafka lets ``kafka-configs.sh --entity-type broker-loggers`` read and set
its log4j levels through DescribeConfigs and IncrementalAlterConfigs
(KIP-412). Here the loggers are Python's: ``root`` and every logger the
process has made (``broker``, ``storage.log``, ...), each with its
effective level under Kafka's names (FATAL, ERROR, WARN, INFO, DEBUG,
TRACE: the table of ``log_levels.py``, which the image's ``KAFKA_LOG4J_*``
variables use too).

* Describe: the resource name must be this ``node.id`` ("Broker id must not
  be empty", "Broker id must be an integer, but it is: x", "Unexpected broker
  id, expected 1 but received 2": INVALID_REQUEST, as Kafka's ConfigHelper);
  every logger is a config entry with source DYNAMIC_BROKER_LOGGER_CONFIG,
  not read-only, no synonyms.
* Alter (Kafka's ``RuntimeLoggerManager``): the name must be this node id
  ("Node id must be an integer, but it is: x", "Unexpected node id. Expected
  1, but received 2"); SET needs an existing logger ("Logger x does not
  exist!", INVALID_CONFIG) and a valid level (INVALID_CONFIG naming the valid
  ones); DELETE makes the logger inherit its parent's level again, except
  for ``root`` (INVALID_REQUEST); APPEND and SUBTRACT are INVALID_REQUEST.
  A principal not allowed ALTER_CONFIGS on the cluster is refused
  CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed." after the
  null values are checked and before anything else.
  Every operation is checked before any is applied; ``validate_only``
  applies none. The legacy AlterConfigs does not take this resource type.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from protocol import ErrorCode

from ..log_levels import LEVELS, ROOT, VALID_LEVELS, kafka_level
from ._admin import is_java_int

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class LoggerError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@attrs.frozen
class LoggerEntry:
    """One logger as a DescribeConfigs entry (the attributes ``describe_configs._entry`` reads)."""

    name: str
    value: str
    read_only: bool = False
    sensitive: bool = False
    source: str = "DYNAMIC_BROKER_LOGGER_CONFIG"
    synonyms: tuple = ()
    type: None = None
    doc: None = None


def _loggers() -> dict[str, logging.Logger]:
    known = {n: lg for n, lg in logging.root.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    return {ROOT: logging.root, **known}


def describe_entries(node_id: int, resource_name: str | None) -> list[LoggerEntry]:
    """Every logger with its effective level; raises LoggerError for a name that is not this node."""
    if not resource_name:
        raise LoggerError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if not is_java_int(resource_name):
        raise LoggerError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {resource_name}")
    if int(resource_name) != node_id:
        message = f"Unexpected broker id, expected {node_id} but received {resource_name}"
        raise LoggerError(ErrorCode.INVALID_REQUEST, message)
    return [LoggerEntry(name, kafka_level(lg.getEffectiveLevel())) for name, lg in sorted(_loggers().items())]


def alter(node_id: int, resource_name: str | None, configs: list[Any], validate_only: bool,
          authorized: bool = True) -> None:  # fmt: skip
    """Check every operation, then (unless ``validate_only``) apply them in order; raises LoggerError."""
    nulls = [c.name for c in configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        raise LoggerError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    if not authorized:
        raise LoggerError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    if not is_java_int(resource_name):
        raise LoggerError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}")
    if int(resource_name) != node_id:
        raise LoggerError(ErrorCode.INVALID_REQUEST,
                          f"Unexpected node id. Expected {node_id}, but received {resource_name}")  # fmt: skip
    loggers = _loggers()
    for c in configs:
        _check(c, loggers)
    if validate_only:
        return
    for c in configs:
        loggers[c.name].setLevel(LEVELS[c.value] if c.config_operation == SET else logging.NOTSET)


def _check(c: Any, loggers: dict[str, logging.Logger]) -> None:
    if c.config_operation in (APPEND, SUBTRACT):
        op = "APPEND" if c.config_operation == APPEND else "SUBTRACT"
        raise LoggerError(ErrorCode.INVALID_REQUEST, f"{op} operation is not allowed for the BROKER_LOGGER resource")
    if c.config_operation not in (SET, DELETE):
        message = f"Unknown operation type {c.config_operation} is not allowed for the BROKER_LOGGER resource"
        raise LoggerError(ErrorCode.INVALID_REQUEST, message)
    if c.name not in loggers:
        raise LoggerError(ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!")
    if c.config_operation == DELETE and c.name == ROOT:
        raise LoggerError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    if c.config_operation == SET and c.value not in LEVELS:
        raise LoggerError(ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {c.name} to {c.value} as it is "
                          f"not a supported log level. Valid log levels are {VALID_LEVELS}")  # fmt: skip
