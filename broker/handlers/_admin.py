"""Helpers shared by the admin handlers: config resources, sources, types, epochs.

Kafka names a config owner with a ``resource_type`` (2 = TOPIC, 4 = BROKER,
8 = BROKER_LOGGER, 32 = GROUP) and a ``resource_name`` (the topic, the broker
id as a string, or the group). Config entries carry a *source* (where the
value came from) and, in DescribeConfigs v3+, a *type*; both are small ids on the wire
(``DescribeConfigsResponse.ConfigSource`` and ``ConfigType`` in Kafka). The
storage layer may describe them as ids, names or enums: ``source_id`` and
``type_id`` accept all three.

``MAX_PARTITIONS_PER_REQUEST`` is the KRaft controller's bound on the
partitions one CreateTopics or CreatePartitions request may create (its
records per user operation): past it CreateTopics fails as a whole and
CreatePartitions fails the topics that would cross it, with POLICY_VIOLATION.

The single-node model has one leader epoch, 0, for every partition.
``leader_epoch_error`` applies Kafka's fencing rule to a client's
``current_leader_epoch``: -1 means "not given"; below the leader's epoch is
FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from protocol import ErrorCode

from ..log_validator import LEADER_EPOCH  # noqa: F401 (the handlers take it from here)

# authorized_operations when a request did not ask for them (the bitfields: RequestContext.authorized_operations)
NO_OPERATIONS = -(2**31)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32

_INTEGER = re.compile(r"[+-]?[0-9]+")


def is_java_int(text: str | None) -> bool:
    """Whether Java's ``Integer.parseInt`` would read ``text`` (how Kafka reads a broker id resource name)."""
    return bool(text) and _INTEGER.fullmatch(text) is not None
# Kafka calls code 39 INVALID_REPLICA_ASSIGNMENT; protocol.errors spells it differently.
INVALID_REPLICA_ASSIGNMENT = ErrorCode.INVALID_REPLICA_ASSIGNMENT
MAX_PARTITIONS_PER_REQUEST = 10_000
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."  # Kafka's default for the error
NO_EPOCH = -1

CONFIG_SOURCES = {
    "UNKNOWN": 0,
    "UNKNOWN_CONFIG": 0,
    "TOPIC_CONFIG": 1,
    "DYNAMIC_TOPIC_CONFIG": 1,
    "DYNAMIC_BROKER_CONFIG": 2,
    "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4,
    "DEFAULT_CONFIG": 5,
    "DYNAMIC_BROKER_LOGGER_CONFIG": 6,
    "CLIENT_METRICS_CONFIG": 7,
    "DYNAMIC_CLIENT_METRICS_CONFIG": 7,
    "GROUP_CONFIG": 8,
    "DYNAMIC_GROUP_CONFIG": 8,
}
DEFAULT_CONFIG = CONFIG_SOURCES["DEFAULT_CONFIG"]
STATIC_BROKER_CONFIG = CONFIG_SOURCES["STATIC_BROKER_CONFIG"]
TOPIC_CONFIG = CONFIG_SOURCES["TOPIC_CONFIG"]

CONFIG_TYPES = {
    "UNKNOWN": 0,
    "BOOLEAN": 1,
    "STRING": 2,
    "INT": 3,
    "SHORT": 4,
    "LONG": 5,
    "DOUBLE": 6,
    "LIST": 7,
    "CLASS": 8,
    "PASSWORD": 9,
}
LIST_TYPE = CONFIG_TYPES["LIST"]


def _id_of(value: Any, table: dict[str, int]) -> int:
    if isinstance(value, int):  # also IntEnum
        return int(value)
    name = getattr(value, "name", value)
    return table.get(str(name).upper(), 0)


def source_id(value: Any) -> int:
    """A config source as Kafka's id (1 = topic override ... 5 = default ... 8 = group config)."""
    return _id_of(value, CONFIG_SOURCES)


def type_id(value: Any) -> int:
    """A config type as Kafka's id (1 = BOOLEAN ... 7 = LIST ... 9 = PASSWORD)."""
    return _id_of(value, CONFIG_TYPES)


def synonym_parts(synonym: Any) -> tuple[str, str | None, int]:
    """``(name, value, source id)`` of a storage synonym (a tuple or an object)."""
    if isinstance(synonym, tuple):
        name, value, source = synonym
    else:
        name, value, source = synonym.name, synonym.value, synonym.source
    return name, value, source_id(source)


def null_config_error(names: Iterable[str]) -> str | None:
    """Kafka refuses null topic config values (``InvalidConfigurationException``)."""
    nulls = list(names)
    if not nulls:
        return None
    return "Null value not supported for topic configs: " + ",".join(nulls)


def leader_epoch_error(current_leader_epoch: int) -> ErrorCode | None:
    """Kafka's check of a client's ``current_leader_epoch`` against ours (0)."""
    if current_leader_epoch == NO_EPOCH or current_leader_epoch == LEADER_EPOCH:
        return None
    if current_leader_epoch < LEADER_EPOCH:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


def broker_resource_error(node_id: int, name: str | None) -> str | None:
    """Kafka's check of a BROKER resource name: empty (cluster default) or our id."""
    if not name:
        return None
    if not is_java_int(name):
        return f"Broker id must be an integer, but it is: {name}"
    if int(name) != node_id:
        return f"Unexpected broker id, expected {node_id} or empty string, but received {name}"
    return None
