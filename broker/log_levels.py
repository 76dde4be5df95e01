"""Kafka's log levels on Python's loggers: one table, for BROKER_LOGGER configs and ``KAFKA_LOG4J_*``.

Kafka's loggers are log4j's, with the levels FATAL, ERROR, WARN, INFO,
DEBUG and TRACE; the broker's are Python's (``kafka.authorizer.logger``,
``broker.connection``, ``minibroker`` ...). ``LEVELS`` maps each Kafka name
to a Python level (TRACE is level 5, below DEBUG, registered here); these
are the levels a BROKER_LOGGER config may be set to. log4j also has OFF
(above FATAL: nothing is logged) and ALL (below TRACE), which a log4j
configuration, and so the image's variables, may name (``LOG4J_LEVELS``).
``kafka_level`` names a Python level the log4j way. Two readers use them:
the BROKER_LOGGER config resource (``handlers/_broker_loggers.py``,
DescribeConfigs and IncrementalAlterConfigs) and the apache/kafka image's
logging variables (``env_logging.py``).
"""

from __future__ import annotations

import logging

ROOT = "root"
TRACE = 5
LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG, "TRACE": TRACE}  # fmt: skip
VALID_LEVELS = ", ".join(sorted(LEVELS))
LOG4J_LEVELS = {**LEVELS, "OFF": logging.CRITICAL + 10, "ALL": 1}
logging.addLevelName(TRACE, "TRACE")


def kafka_level(level: int) -> str:
    """The log4j name of a Python level: the most severe log4j level not above it."""
    return max(((value, name) for name, value in LOG4J_LEVELS.items() if value <= level), default=(1, "ALL"))[1]


def python_logger(name: str) -> logging.Logger:
    """The logger Kafka's name ``name`` stands for (``root`` is Python's root logger)."""
    return logging.root if name == ROOT else logging.getLogger(name)
