"""The config entries DescribeConfigs reports for a BROKER resource.

Two families of keys make up a broker's configuration:

* the broker's own keys, ``broker.config.BROKER_KEYS`` (``node.id``,
  ``num.partitions`` ...), with their current values;
* the broker-level defaults of topic configs (``log.segment.bytes``,
  ``log.retention.ms``, ``log.cleaner.*`` ...), owned by the storage layer.

A key whose KafkaConfig default is null (``advertised.listeners``,
``ssl.keystore.location``, the passwords ...) is null when unset, with no
DEFAULT_CONFIG synonym, as Kafka's ``staticDefaultConfigs`` drops nulls.
Each entry gets Kafka's source, the most specific place its value is set:
DYNAMIC_BROKER_CONFIG (2) and DYNAMIC_DEFAULT_BROKER_CONFIG (3) for a dynamic
broker config of this node or of the cluster (``broker/dynamic_config.py``),
STATIC_BROKER_CONFIG (4) when the key is set in ``server.properties`` or an
override (even to its default value), DEFAULT_CONFIG (5) otherwise, with the
synonym chain Kafka shows (those places, most specific first). An entry is
read-only unless Kafka lets its key change at runtime. ``default_configs``
answers the cluster-default resource (name ``""``): its dynamic configs only.
Entries are sorted by name. Kafka's PASSWORD keys (``ssl.keystore.password`` ...) are
sensitive: their value is null in every entry and synonym. Per-listener keys
(``listener.name.<l>.<key>``) are listed whether set in ``server.properties``
or dynamically (``_listener_entries``). ``super.users`` and
``allow.everyone.if.no.acl.found`` belong to Kafka's authorizer, not its
``KafkaConfig``: Kafka lists them only when set, as any key of unknown type
(sensitive, null, read-only); the replication throttles
(``leader.replication.throttled.rate`` ...) are its ``DynamicConfig.Broker``
keys, listed only when set. Each key's type is Kafka's (``_KAFKA_TYPES``,
else the type of its default). ``read_only`` is Kafka's: false exactly for
the keys of its ``AllDynamicConfigs``, which holds listener keys this broker
changes only per listener and not the replication throttles. Kafka's keys
that do nothing here (``kafka_keys.py``: ``num.replica.fetchers`` ...) are
listed when set, as set: STATIC_BROKER_CONFIG, with Kafka's type, read-only
(nothing changes them at runtime here), a PASSWORD one (``sasl.jaas.config``)
sensitive with its value null.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..config import BROKER_KEYS, Key
from ..dynamic_config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, dynamic_key
from ..kafka_keys import KAFKA_KEYS, sensitive
from ..security_keys import SSL_PASSWORD_KEYS
from ._admin import CONFIG_TYPES, DEFAULT_CONFIG, STATIC_BROKER_CONFIG, source_id, type_id
from ._config_synonyms import places, synonyms

# Kafka's ConfigDef types of the broker keys we serve; others follow their parser.
_KAFKA_TYPES = {
    "log.retention.check.interval.ms": "LONG",
    "offsets.topic.replication.factor": "SHORT",
    "share.coordinator.state.topic.replication.factor": "SHORT",
    "share.coordinator.state.topic.min.isr": "SHORT",
    "sasl.server.callback.handler.class": "CLASS",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": "LONG",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "LONG",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "LONG",
    "sasl.oauthbearer.expected.audience": "LIST",
    "group.coordinator.rebalance.protocols": "LIST",
    "group.consumer.assignors": "LIST",
    "sasl.enabled.mechanisms": "LIST",
    "process.roles": "LIST",
    "controller.quorum.voters": "LIST",
    "controller.quorum.bootstrap.servers": "LIST",
    "ssl.enabled.protocols": "LIST",
    "ssl.cipher.suites": "LIST",
    "ssl.engine.factory.class": "CLASS",
    "connections.max.idle.ms": "LONG",
    "metrics.sample.window.ms": "LONG",
    "connections.max.reauth.ms": "LONG",
    "offsets.retention.check.interval.ms": "LONG",
    "transaction.state.log.replication.factor": "SHORT",
    "replica.alter.log.dirs.io.max.bytes.per.second": "LONG",
    "leader.replication.throttled.rate": "LONG",
    "follower.replication.throttled.rate": "LONG",
}
# The authorizer's own keys: not KafkaConfig's, so Kafka lists them only when set, and as it lists any key
# of unknown type: sensitive (value null), read-only.
_AUTHORIZER_KEYS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})
# Keys Kafka counts among its dynamic configs (DynamicBrokerConfig.AllDynamicConfigs: DynamicListenerConfig's,
# the SSL keystore and truststore keys) that change here only per listener or in server.properties: they are
# still described as not read-only.
_LISTENER_DYNAMIC = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
})  # fmt: skip
# Keys whose KafkaConfig default is null: described null when unset, with no DEFAULT_CONFIG synonym.
_NULL_DEFAULTS = frozenset({
    "advertised.listeners", "broker.rack", "controller.listener.names", "inter.broker.listener.name", "log.dirs",
    "sasl.server.callback.handler.class", "ssl.keystore.location", "ssl.truststore.location", "ssl.provider",
    "ssl.secure.random.implementation", "ssl.engine.factory.class", "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.token.endpoint.url",
}) | SSL_PASSWORD_KEYS  # fmt: skip
# The replication throttles: Kafka's DynamicConfig.Broker keys, not KafkaConfig's, so listed only when set
# and, absent from AllDynamicConfigs, read-only (though AlterConfigs changes them).
_QUOTA_KEYS = frozenset({"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                         "replica.alter.log.dirs.io.max.bytes.per.second"})  # fmt: skip
# Kafka's ListenerMechanismConfigs: keys a listener may set per SASL mechanism (listener.name.l.plain.<key>)
_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                   "sasl.server.callback.handler.class", "connections.max.reauth.ms")  # fmt: skip
_KEYS = {k.name: k for k in BROKER_KEYS}


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
    if isinstance(value, tuple):  # a Kafka LIST
        return ",".join(value)
    return str(value)


def _type_of(key: Key) -> int:
    name = _KAFKA_TYPES.get(key.name)
    if name is None:  # else from the default's Python type (a parser may be any function)
        name = {bool: "BOOLEAN", int: "INT", tuple: "LIST"}.get(type(key.default), "STRING")
    return CONFIG_TYPES[name]


def _key_entry(key: Key, static: Any, explicit: bool, dynamic: list) -> BrokerConfigEntry:
    """``static``: the key's value in server.properties (or its default); ``dynamic``: its dynamic synonyms."""
    synonyms = [(n, v, source_id(s)) for n, v, s in dynamic]
    if explicit:  # set in server.properties or an override, even to its default value (as Kafka reports)
        synonyms.append((key.name, format_value(static), STATIC_BROKER_CONFIG))
    if key.name not in _NULL_DEFAULTS:
        synonyms.append((key.name, format_value(key.default), DEFAULT_CONFIG))
    _name, current, source = synonyms[0] if synonyms else (key.name, None, DEFAULT_CONFIG)
    read_only = key.name in _QUOTA_KEYS or not (dynamic_key(key.name) or key.name in _LISTENER_DYNAMIC)
    if key.name in _AUTHORIZER_KEYS:
        synonyms = [(name, None, kind) for name, _, kind in synonyms if kind != DEFAULT_CONFIG]
        return BrokerConfigEntry(key.name, None, source, True, True, CONFIG_TYPES["UNKNOWN"], None, synonyms)
    if key.name in SSL_PASSWORD_KEYS:  # Kafka's PASSWORD type: never shown, even when unset
        synonyms = [(name, None, kind) for name, _, kind in synonyms]
        return BrokerConfigEntry(key.name, None, source, read_only, True, CONFIG_TYPES["PASSWORD"], key.doc,
                                 synonyms)  # fmt: skip
    return BrokerConfigEntry(key.name, current, source, read_only, False, _type_of(key), key.doc or None, synonyms)


def broker_configs(broker: Any) -> list[BrokerConfigEntry]:
    """Every broker-level config of this node, as DescribeConfigs entries."""
    config, dynamic = broker.config, broker.dynamic_config
    entries = {
        k.name: _key_entry(k, dynamic.static_values.get(k.name, getattr(config, k.attr)), k.name in config.explicit,
                           dynamic.synonyms(k.name))
        for k in BROKER_KEYS if _listed(k.name, config, dynamic)
    }  # fmt: skip
    for entry in _log_entries(broker) + _listener_entries(broker) + _unused_entries(config.unused):
        entries.setdefault(entry.name, entry)
    return [entries[name] for name in sorted(entries)]


def _unused_entries(unused: dict[str, str]) -> list[BrokerConfigEntry]:
    """Kafka's keys with no effect here that ``server.properties`` sets: as set, read-only, passwords hidden."""
    entries = []
    for name, text in unused.items():
        kind, reason = KAFKA_KEYS[name]
        value = None if sensitive(name) else text
        entries.append(BrokerConfigEntry(name, value, STATIC_BROKER_CONFIG, True, sensitive(name), CONFIG_TYPES[kind],
                                         f"no effect in this broker: {reason}", [(name, value, STATIC_BROKER_CONFIG)]))
    return entries


def _listed(name: str, config: Any, dynamic: Any) -> bool:
    """Whether Kafka lists a broker key: a KafkaConfig key always, another only when set."""
    if name in _AUTHORIZER_KEYS:
        return name in config.explicit
    return name not in _QUOTA_KEYS or name in config.explicit or bool(dynamic.synonyms(name))


def default_configs(broker: Any) -> list[BrokerConfigEntry]:
    """The cluster-wide default resource's entries: each dynamic default config, as Kafka describes it
    (its type and documentation those of the node's entry for the key)."""
    level, source = broker.dynamic_config.levels[""], source_id(DYNAMIC_DEFAULT)
    node = {e.name: e for e in broker_configs(broker)}
    return [attrs.evolve(node[name], value=level[name], source=source, synonyms=[(name, level[name], source)])
            for name in sorted(level)]  # fmt: skip


def _listener_base(name: str) -> str:
    """The broker key a per-listener key overrides (Kafka's ``brokerConfigSynonyms``): a SASL mechanism's
    key (``plain.sasl.jaas.config``) its mechanism-less name, any other the name after the listener."""
    rest = name[len("listener.name."):].partition(".")[2]
    return next((key for key in _MECHANISM_KEYS if rest.endswith(key)), rest)


def _listener_entries(broker: Any) -> list[BrokerConfigEntry]:
    """Every per-listener key, set in ``server.properties`` or dynamically, as Kafka's ``ConfigHelper``
    lists the originals: the synonyms of the key and then of its base key, place by place (this node's
    dynamic configs, the cluster's, ``server.properties``, Kafka's default), typed as the base key, and
    read-only (Kafka's set of dynamic keys holds no prefixed name). Passwords and keys of unknown type
    (``oauthbearer.sasl.oauthbearer.*``) are sensitive: never shown."""
    dynamic, config = broker.dynamic_config, broker.config
    static = dynamic.static_listeners
    node, cluster = dynamic.levels[dynamic.node], dynamic.levels[""]
    entries = []
    for name in sorted(set(static) | {n for n in dynamic.names() if n.startswith("listener.name.")}):
        base = _listener_base(name)
        key = _KEYS.get(base)
        chain = [(n, level[n], source_id(src)) for src, level in ((DYNAMIC_BROKER, node), (DYNAMIC_DEFAULT, cluster))
                 for n in (name, base) if n in level]  # fmt: skip
        chain += [(name, static[name], STATIC_BROKER_CONFIG)] if name in static else []
        if key is not None:
            if key.name in config.explicit:
                value = dynamic.static_values.get(key.name, getattr(config, key.attr))
                chain.append((base, format_value(value), STATIC_BROKER_CONFIG))
            if key.name not in _NULL_DEFAULTS:  # Kafka has no default synonym for a null default
                chain.append((base, format_value(key.default), DEFAULT_CONFIG))
        while chain and chain[0][0] != name:
            chain.pop(0)
        kind = _listener_type(base, key)
        secret = kind in (CONFIG_TYPES["PASSWORD"], CONFIG_TYPES["UNKNOWN"])
        if secret:
            chain = [(n, None, src) for n, _v, src in chain]
        value, source = (chain[0][1], chain[0][2]) if chain else (None, DEFAULT_CONFIG)
        entries.append(BrokerConfigEntry(name, value, source, True, secret, kind, None, chain))
    return entries


def _listener_type(base: str, key: Key | None) -> int:
    if base in SSL_PASSWORD_KEYS or base == "sasl.jaas.config":
        return CONFIG_TYPES["PASSWORD"]
    if base in ("sasl.login.callback.handler.class", "sasl.login.class"):
        return CONFIG_TYPES["CLASS"]
    return CONFIG_TYPES["UNKNOWN"] if key is None else _type_of(key)


def _log_entries(broker: Any) -> list[BrokerConfigEntry]:
    """Broker-level topic defaults (``log.segment.bytes`` ...) and other storage keys.

    Each is listed with the synonyms Kafka's ``ConfigHelper`` gives it
    (``_config_synonyms.py``): where it is set dynamically
    (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG), in
    ``server.properties`` (STATIC_BROKER_CONFIG) and Kafka's default, with the
    other names of its family (``log.retention.hours`` after
    ``log.retention.ms``); its value is the most specific one set, null for a
    key set nowhere whose Kafka default is null (``log.retention.ms``).
    Storage keys that are not topic defaults (``log.cleaner.threads``,
    ``log.retention.hours`` ...) are listed too, with Kafka's type and default
    (``storage.config.OTHER_BROKER_DEFAULTS``).
    """
    from storage import TOPIC_CONFIGS
    from storage.config import OTHER_BROKER_DEFAULTS

    where = places(broker)
    dynamic, static = broker.dynamic_config, broker.config.log_props
    names = {s.broker_key: (type_id(s.type), s.doc or None) for s in TOPIC_CONFIGS if s.broker_key}
    for name in (set(static) | dynamic.names() | set(OTHER_BROKER_DEFAULTS)) - {k.name for k in BROKER_KEYS}:
        if not name.startswith("listener.name.") and name not in names:
            names[name] = (CONFIG_TYPES[OTHER_BROKER_DEFAULTS.get(name, ("UNKNOWN", None))[0]], None)
    entries = []
    for name in sorted(names):
        chain = synonyms(name, where)
        kind, doc = names[name]
        entries.append(BrokerConfigEntry(name, chain[0][1] if chain else None, chain[0][2] if chain else DEFAULT_CONFIG,
                                         not dynamic_key(name), False, kind, doc, chain))  # fmt: skip
    return entries
