"""The synonyms DescribeConfigs lists for storage keys, as Kafka's ``ConfigHelper.configSynonyms`` builds them.

A broker key belongs to a family of names that can set the same thing
(``DynamicBrokerConfig.brokerConfigSynonyms``): ``log.retention.ms``,
``.minutes``, ``.hours``; ``log.roll.ms``, ``.hours``; ``log.roll.jitter.ms``,
``.hours``; ``log.flush.interval.ms`` with ``log.flush.scheduler.interval.ms``
(not the other way round); any other key is a family of one. The synonyms of
a key are found by walking the places a value can be set, most specific first
(this node's dynamic configs, the cluster-wide dynamic defaults,
``server.properties``, Kafka's defaults), and within each place the family in
its order, keeping every name that is set there. Kafka's defaults hold no
entry for a key whose default is null (``log.retention.ms``,
``log.retention.minutes``, ``log.roll.ms``, ``log.roll.jitter.ms``,
``log.flush.interval.ms``). Leading synonyms of other names than the key
described are then dropped, so with only ``log.retention.hours`` set a
topic's ``retention.ms`` (whose broker key is ``log.retention.ms``) lists no
synonym and its source is DEFAULT_CONFIG, and the broker's
``log.retention.ms`` is null, as Kafka shows them; with ``log.retention.ms``
set the hours follow it.

This is the DescribeConfigs view only: the value a topic gets, and the source
CreateTopics reports (Kafka's ``KafkaConfigSchema``), take the first synonym
set anywhere (``storage.config``).
"""

from __future__ import annotations

from typing import Any

import attrs

from storage.config import OTHER_BROKER_DEFAULTS, SPECS, broker_key_spec

from ._admin import CONFIG_SOURCES, DEFAULT_CONFIG, STATIC_BROKER_CONFIG, source_id

_FAMILIES = (
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
)
_NO_DEFAULT = frozenset({"log.retention.ms", "log.retention.minutes", "log.roll.ms", "log.roll.jitter.ms",
                         "log.flush.interval.ms"})  # fmt: skip
_TOPIC_CONFIG = CONFIG_SOURCES["DYNAMIC_TOPIC_CONFIG"]
Synonym = tuple[str, "str | None", int]


def family(name: str) -> tuple[str, ...]:
    """The names that can set broker key ``name``, in Kafka's order."""
    for names in _FAMILIES:
        if name in names and name != "log.flush.scheduler.interval.ms":
            return names
    return (name,)


def kafka_default(name: str) -> str | None:
    """Kafka's default text of storage key ``name``; None where Kafka's default is null."""
    if name in _NO_DEFAULT:
        return None
    spec = broker_key_spec(name)
    if spec is not None:
        return spec.default_text
    return OTHER_BROKER_DEFAULTS.get(name, (None, None))[1]


def places(broker: Any) -> list[tuple[int, dict[str, str]]]:
    """Where a storage key can be set, most specific first, with the source id of each."""
    dynamic = broker.dynamic_config
    return [
        (source_id("DYNAMIC_BROKER_CONFIG"), dynamic.levels[dynamic.node]),
        (source_id("DYNAMIC_DEFAULT_BROKER_CONFIG"), dynamic.levels[""]),
        (STATIC_BROKER_CONFIG, broker.config.log_props),
    ]


def synonyms(name: str, where: list[tuple[int, dict[str, str]]]) -> list[Synonym]:
    """Broker key ``name``'s synonyms, most specific first, as Kafka's ``configSynonyms`` lists them."""
    names = family(name)
    found = [(n, props[n], source) for source, props in where for n in names if n in props]
    found += [(n, kafka_default(n), DEFAULT_CONFIG) for n in names if kafka_default(n) is not None]
    while found and found[0][0] != name:
        found.pop(0)
    return found


def topic_entries(broker: Any, entries: list) -> list:
    """The storage layer's rows of a topic with Kafka's DescribeConfigs synonyms and sources: the topic's
    override, if any, then the synonyms of the config's broker key."""
    where = places(broker)
    out = []
    for e in entries:
        spec = SPECS.get(e.name)
        chain = [s for s in (e.synonyms[:1]) if source_id(s[2]) == _TOPIC_CONFIG]
        if spec is not None and spec.broker_key:
            chain += synonyms(spec.broker_key, where)
        source = chain[0][2] if chain else DEFAULT_CONFIG
        out.append(attrs.evolve(e, source=source, synonyms=tuple(chain)))
    return out
