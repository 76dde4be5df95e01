"""The broker keys of consumer groups (KIP-848) and share groups (KIP-932), as Kafka's GroupCoordinatorConfig and
ShareGroupConfig define them.

``GROUP_KEY_SPECS`` lists each key's name, attribute, parser, default, check and
help text; ``config.py`` makes them ``Key``s among the other broker keys. The
session, heartbeat and record-lock timings have a default, a lowest and a
highest value (``GROUP_PROTOCOL_KEYS``); the lists are Kafka's LISTs of names
(not empty, no duplicates, ``classic`` always among the rebalance protocols),
and the migration policy is read case-insensitively, as Kafka reads it.
"""

from __future__ import annotations

from typing import Callable

from storage.config_values import Refused

from .config_values import INT, ConfigError, at_least, between

# Default, lowest and highest of the timing keys (Kafka's GroupCoordinatorConfig and ShareGroupConfig); they also
# give the group configs (``group_configs.py``) their defaults and the bounds they are checked against.
GROUP_PROTOCOL_KEYS: dict[str, tuple[int, int, int | None]] = {
    "group.consumer.session.timeout.ms": (45_000, 1, None),
    "group.consumer.min.session.timeout.ms": (45_000, 1, None),
    "group.consumer.max.session.timeout.ms": (60_000, 1, None),
    "group.consumer.heartbeat.interval.ms": (5_000, 1, None),
    "group.consumer.min.heartbeat.interval.ms": (5_000, 1, None),
    "group.consumer.max.heartbeat.interval.ms": (15_000, 1, None),
    "group.share.session.timeout.ms": (45_000, 1, None),
    "group.share.min.session.timeout.ms": (45_000, 1, None),
    "group.share.max.session.timeout.ms": (60_000, 1, None),
    "group.share.heartbeat.interval.ms": (5_000, 1, None),
    "group.share.min.heartbeat.interval.ms": (5_000, 1, None),
    "group.share.max.heartbeat.interval.ms": (15_000, 1, None),
    "group.share.record.lock.duration.ms": (30_000, 1_000, 3_600_000),
    "group.share.min.record.lock.duration.ms": (15_000, 1_000, 30_000),
    "group.share.max.record.lock.duration.ms": (60_000, 30_000, 3_600_000),
}


CONSUMER_GROUP_ASSIGNORS = ("uniform", "range")  # Kafka's built-in server-side assignors, in its order
GROUP_TYPES = ("classic", "consumer", "share", "streams")  # Kafka's GroupType names (share, streams: not served)


def _name_list(allowed: tuple[str, ...], required: str | None = None) -> Callable[[str], tuple[str, ...]]:
    """A Kafka LIST of names from ``allowed``: not empty, no duplicates (and ``required`` among them)."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n.strip() for n in text.split(",") if n.strip())
        for name in names:  # Kafka's ValidList: the first name not allowed is refused
            if name not in allowed:
                raise Refused(f"String must be one of: {', '.join(allowed)}", name)
        if not names or len(set(names)) != len(names):
            raise Refused("the list must not be empty or name one twice")
        if required is not None and required not in names:  # Kafka's KafkaConfig check, in its words
            raise ConfigError(f"Disabling the '{required}' protocol is not supported.")
        return names

    return parse


MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")  # Kafka's ConsumerGroupMigrationPolicy


def _migration_policy(text: str) -> str:
    """Kafka's case-insensitive ``group.consumer.migration.policy``, kept lower case."""
    if text.strip().lower() not in MIGRATION_POLICIES:
        raise ValueError(f"String must be one of (case insensitive): {', '.join(MIGRATION_POLICIES)}")
    return text.strip().lower()


GROUP_KEY_SPECS: list[tuple] = [  # (name, attribute, parse, default, check, doc): config.Key's fields
    *((n, n.replace(".", "_"), INT, d, between(low, high), "default or bound of group configs")
      for n, (d, low, high) in GROUP_PROTOCOL_KEYS.items()),
    ("group.coordinator.rebalance.protocols", "group_coordinator_rebalance_protocols",
        _name_list(GROUP_TYPES, "classic"), ("classic", "consumer"), None,
        "rebalance protocols served; without consumer, ConsumerGroupHeartbeat and ConsumerGroupDescribe are off"),
    ("group.consumer.max.size", "group_consumer_max_size", INT, 2**31 - 1, at_least(1),
        "most members of one consumer group (KIP-848)"),
    ("group.consumer.assignors", "group_consumer_assignors", _name_list(CONSUMER_GROUP_ASSIGNORS),
        CONSUMER_GROUP_ASSIGNORS, None, "server-side assignors of consumer groups; the first is the default"),
    ("group.consumer.migration.policy", "group_consumer_migration_policy", _migration_policy, "bidirectional",
        None, "online migration of groups with members: bidirectional, upgrade (classic to consumer), downgrade, "
        "disabled"),
]  # fmt: skip
