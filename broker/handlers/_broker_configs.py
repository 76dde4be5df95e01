"""The config entries DescribeConfigs reports for a BROKER resource.

Two families of keys make up a broker's configuration:

* the broker's own keys, ``broker.config.BROKER_KEYS`` (``node.id``,
  ``num.partitions`` ...), with their current values;
* the broker-level defaults of topic configs (``log.segment.bytes``,
  ``log.retention.ms``, ``log.cleaner.*`` ...), owned by the storage layer.

Each entry gets Kafka's source: STATIC_BROKER_CONFIG (4) when the key is set
in ``server.properties`` or an override (even to its default value),
DEFAULT_CONFIG (5) otherwise, with
the synonym chain Kafka shows (the static value, then the default). Every
entry is read-only: this broker has no dynamic broker configs. Entries are
sorted by name. Kafka's PASSWORD keys (``ssl.keystore.password`` ...) are
sensitive: their value is null in every entry and synonym.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..config import BROKER_KEYS, SSL_PASSWORD_KEYS, Key
from ._admin import CONFIG_TYPES, DEFAULT_CONFIG, STATIC_BROKER_CONFIG, source_id, type_id

# Kafka's ConfigDef types of the broker keys we serve; others follow their parser.
_KAFKA_TYPES = {
    "log.retention.check.interval.ms": "LONG",
    "offsets.topic.replication.factor": "SHORT",
}


@attrs.frozen
class BrokerConfigEntry:
    """Same shape as the storage layer's ``ConfigEntry``."""

    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    type: int
    doc: str | None
    synonyms: list = attrs.field(factory=list)


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _type_of(key: Key) -> int:
    name = _KAFKA_TYPES.get(key.name)
    if name is None:
        name = {int: "INT", str: "STRING"}.get(key.parse, "BOOLEAN")  # type: ignore[call-overload]
    return CONFIG_TYPES[name]


def _key_entry(key: Key, value: Any, explicit: bool) -> BrokerConfigEntry:
    default = format_value(key.default)
    current = format_value(value)
    synonyms = [(key.name, default, DEFAULT_CONFIG)]
    source = DEFAULT_CONFIG
    if explicit:  # set in server.properties or an override, even to its default value (as Kafka reports)
        synonyms.insert(0, (key.name, current, STATIC_BROKER_CONFIG))
        source = STATIC_BROKER_CONFIG
    if key.name in SSL_PASSWORD_KEYS:  # Kafka's PASSWORD type: never shown, even when unset
        synonyms = [(name, None, kind) for name, _, kind in synonyms]
        return BrokerConfigEntry(key.name, None, source, True, True, CONFIG_TYPES["PASSWORD"], key.doc, synonyms)
    return BrokerConfigEntry(key.name, current, source, True, False, _type_of(key), key.doc or None, synonyms)


def broker_configs(broker: Any) -> list[BrokerConfigEntry]:
    """Every broker-level config of this node, as DescribeConfigs entries."""
    config = broker.config
    entries = {k.name: _key_entry(k, getattr(config, k.attr), k.name in config.explicit) for k in BROKER_KEYS}
    for entry in _log_entries(broker):
        entries.setdefault(entry.name, entry)
    return [entries[name] for name in sorted(entries)]


def _log_entries(broker: Any) -> list[BrokerConfigEntry]:
    """Broker-level topic defaults (``log.segment.bytes`` ...) and other storage keys.

    The storage layer's description of a topic without overrides carries, per
    topic config, the broker key that sets its default (its DEFAULT_CONFIG
    synonym) and the value set in ``server.properties`` if any (its
    STATIC_BROKER_CONFIG synonym). Storage keys that are not topic defaults
    (``log.cleaner.threads``, ``log.retention.hours`` ...) are listed when set.
    """
    from storage import TOPIC_CONFIGS

    entries = []
    for spec, described in zip(TOPIC_CONFIGS, broker.topics.manager.describe_overrides({})):
        if not spec.broker_key or described.name != spec.name:
            continue
        default = (spec.broker_key, spec.default_text, DEFAULT_CONFIG)
        synonyms = [(n, v, source_id(src)) for n, v, src in described.synonyms]
        static = [s for s in synonyms if s[0] == spec.broker_key and s[2] == STATIC_BROKER_CONFIG]
        chain = static[:1] + [default]
        value, source = chain[0][1], chain[0][2]
        entries.append(BrokerConfigEntry(spec.broker_key, value, source, True, False, type_id(spec.type),
                                         spec.doc or None, chain))  # fmt: skip
    covered = {e.name for e in entries}
    for name, text in broker.config.log_props.items():
        if name not in covered:
            synonyms = [(name, text, STATIC_BROKER_CONFIG)]
            entries.append(BrokerConfigEntry(name, text, STATIC_BROKER_CONFIG, True, False, 0, None, synonyms))
    return entries
