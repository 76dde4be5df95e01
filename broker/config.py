"""Broker configuration: Kafka's ``server.properties`` keys, typed and checked.

``BrokerConfig.load(path, overrides)`` reads a properties file as Kafka
reads it (``properties.py``: Java's format, ISO 8859-1), applies
``--override key=value`` pairs (the ``kafka-server-start.sh`` convention),
trims each value as Kafka's ``ConfigDef`` does, and checks every key: an
unknown key or a bad value raises ``ConfigError`` naming the key, so the
broker refuses to start rather than silently ignoring a typo (a key Kafka
removed is named with what replaced it). Keys Kafka defines that do nothing
here (``num.replica.fetchers``, ``zookeeper.connect`` ...) are accepted with
a warning (``kafka_keys.py``; kept in ``unused``). The older names
``log.dir`` and ``broker.id`` are read as Kafka reads them (``_synonyms``).

Broker keys are declared in ``BROKER_KEYS`` (Kafka name, Kafka type, default,
check); the ``ssl.*`` and ``sasl.oauthbearer.*`` ones are listed in
``security_keys.py``. A bad value is refused in Kafka's words ("Invalid value
abc for configuration num.partitions: Not a number of type INT",
``config_values.py``). Keys that are broker-level defaults of topic configs
(``log.segment.bytes`` for ``segment.bytes``, ``log.cleaner.*`` ...) belong to
the storage layer's config model and are handed to it as ``log_props``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import attrs

from storage.config import is_storage_key
from storage.config_values import Refused

from .authorizer import AUTHORIZER_CLASSES
from .config_values import BOOLEAN, INT, LONG, SHORT, Check, ConfigError, at_least, between, one_of, parse_value
from .group_keys import GROUP_KEY_SPECS
from .kafka_keys import KAFKA_KEYS, split_unused, unknown_key, warn_unused
from .properties import MalformedProperties, java_trim, load_properties
from .security_keys import KAFKA_PROTOCOL_MAP, OAUTHBEARER_KEYS, SECURITY_PROTOCOLS, SSL_KEYS

log = logging.getLogger(__name__)


_POSITIVE, _NON_NEGATIVE = at_least(1), at_least(0)


def _node_id(value: int) -> None:
    if value < 0:  # Kafka's KRaft check (KafkaConfig.validateValues)
        raise ConfigError("Missing configuration `node.id` which is required when `process.roles` is defined (i.e. "
                          "when running in KRaft mode).", "node.id")


def _buffer_size(value: int) -> None:
    """Kafka takes any number and fails each connection on 0 or below -1 (Java's setSendBufferSize); refused here."""
    if value != -1 and value < 1:
        raise Refused("Value must be -1 (the OS default) or at least 1", value)


def _roles(text: str) -> str:
    """Kafka's ``ValidList.in("broker", "controller")``; the broker role is needed here (a controller alone is not
    served)."""
    roles = [r.strip() for r in text.split(",") if r.strip()]
    for role in roles:
        if role not in ("broker", "controller"):
            raise Refused("String must be one of: broker, controller", role)
    if "broker" not in roles:
        raise Refused("the broker role is required: a controller alone is not served here")
    return text


def _authorizer_class(text: str) -> str:
    if text not in ("", *AUTHORIZER_CLASSES):
        raise Refused(f"Class {text} could not be found.")
    return text


@attrs.frozen
class Key:
    name: str
    attr: str
    parse: Callable[[str], Any]
    default: Any
    check: Check | None = None  # raises Refused (or a whole ConfigError) for a value parsed but not allowed
    doc: str = ""


BROKER_KEYS: tuple[Key, ...] = (
    Key("node.id", "node_id", INT, 1, _node_id, "id of this broker in Metadata"),
    Key("broker.rack", "broker_rack", str, None, None, "rack of this broker in Metadata and DescribeCluster"),
    Key("listeners", "listeners", str, "PLAINTEXT://:9092", None, "where the broker accepts connections"),
    Key("advertised.listeners", "advertised_listeners", str, "", None, "what Metadata tells clients"),
    Key("log.dirs", "log_dirs", str, "./data", None, "comma-separated data directories"),
    Key("num.partitions", "num_partitions", INT, 1, _POSITIVE, "partitions of auto-created topics"),
    Key("default.replication.factor", "default_replication_factor", INT, 1, _POSITIVE, "accepted; single node"),
    Key("auto.create.topics.enable", "auto_create_topics_enable", BOOLEAN, True, None, "Metadata creates topics"),
    Key("delete.topic.enable", "delete_topic_enable", BOOLEAN, True, None, "DeleteTopics allowed"),
    Key("listener.security.protocol.map", "listener_security_protocol_map", str, KAFKA_PROTOCOL_MAP, None,
        "listener name -> security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),  # fmt: skip
    Key("sasl.enabled.mechanisms", "sasl_enabled_mechanisms", str, "GSSAPI", None,
        "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"),  # fmt: skip
    Key("sasl.mechanism.inter.broker.protocol", "sasl_mechanism_inter_broker_protocol", str, "GSSAPI", None,
        "must be enabled on the inter-broker listener if it is a SASL one (no inter-broker links on one node)"),
    Key("sasl.mechanism.controller.protocol", "sasl_mechanism_controller_protocol", str, "GSSAPI", None,
        "accepted; the controller listener is not bound"),  # fmt: skip
    Key("sasl.server.callback.handler.class", "sasl_server_callback_handler_class", str, "", None,
        "accepted; Kafka reads it only per listener and mechanism (listener.name.<l>.oauthbearer.sasl...)"),
    Key("sasl.server.max.receive.size", "sasl_server_max_receive_size", INT, 524_288, _POSITIVE,
        "largest frame a SASL_PLAINTEXT connection may send before it has logged in"),  # fmt: skip
    Key("max.connections", "max_connections", INT, 2**31 - 1, _NON_NEGATIVE,
        "connections the broker accepts at once (also per listener: listener.name.<l>.max.connections)"),
    Key("max.connection.creation.rate", "max_connection_creation_rate", INT, 2**31 - 1, _NON_NEGATIVE,
        "new connections per second the broker accepts (also per listener); past it accepting waits"),  # fmt: skip
    Key("max.connections.per.ip", "max_connections_per_ip", INT, 2**31 - 1, _NON_NEGATIVE,
        "connections from one address; more are closed at once"),  # fmt: skip
    Key("max.connections.per.ip.overrides", "max_connections_per_ip_overrides", str, "", None,
        "host:count pairs overriding max.connections.per.ip"),  # fmt: skip
    Key("connections.max.idle.ms", "connections_max_idle_ms", LONG, 600_000, _POSITIVE,
        "a connection with no request for this long is closed"),  # fmt: skip
    Key("connections.max.reauth.ms", "connections_max_reauth_ms", LONG, 0, None,
        "a SASL session's longest life (also listener.name.<l>.[<mechanism>.]...); 0: the credential's only"),
    Key("connection.failed.authentication.delay.ms", "connection_failed_authentication_delay_ms", INT, 100,
        _NON_NEGATIVE, "how long a connection whose SASL login failed stays open after the answer"),  # fmt: skip
    Key("controller.listener.names", "controller_listener_names", str, "", None, "not bound; in DescribeQuorum"),
    Key("inter.broker.listener.name", "inter_broker_listener_name", str, "", None,
        "must name a listener; exempt from the broker-wide max.connections and max.connection.creation.rate"),
    Key("security.inter.broker.protocol", "security_inter_broker_protocol", one_of(*SECURITY_PROTOCOLS), "PLAINTEXT",
        None, "without inter.broker.listener.name (setting both is an error), the inter-broker listener's name"),
    Key("process.roles", "process_roles", _roles, "broker", None, "accepted: broker, or broker,controller"),
    Key("controller.quorum.voters", "controller_quorum_voters", str, "", None, "this node's entry: DescribeQuorum"),
    Key("controller.quorum.bootstrap.servers", "controller_quorum_bootstrap_servers", str, "", None, "accepted"),
    Key("num.network.threads", "num_network_threads", INT, 3, _POSITIVE, "accepted; one event loop serves all"),
    Key("num.io.threads", "num_io_threads", INT, 8, _POSITIVE, "accepted; one event loop serves all"),
    Key("socket.send.buffer.bytes", "socket_send_buffer_bytes", INT, 102_400, _buffer_size,
        "SO_SNDBUF of client connections; -1 = the OS default"),  # fmt: skip
    Key("socket.receive.buffer.bytes", "socket_receive_buffer_bytes", INT, 102_400, _buffer_size,
        "SO_RCVBUF of client connections; -1 = the OS default"),  # fmt: skip
    Key("socket.request.max.bytes", "socket_request_max_bytes", INT, 104_857_600, _POSITIVE, "largest frame"),
    Key("prometheus.host", "prometheus_host", str, "0.0.0.0", None, "metrics endpoint host"),
    Key("prometheus.port", "prometheus_port", INT, 9404, between(0, 65535), "metrics endpoint port; 0 disables"),
    Key(
        "legacy.protocol.versions.enable",
        "legacy_protocol_versions_enable",
        BOOLEAN,
        True,
        None,
        "serve the versions Kafka 4.0 removed: Produce v0-2, Fetch v0-3 and other KIP-896 ones (false = 4.0)",
    ),
    Key("log.retention.check.interval.ms", "log_retention_check_interval_ms", LONG, 300_000, _POSITIVE, ""),
    Key("log.initial.task.delay.ms", "log_initial_task_delay_ms", LONG, 30_000, _NON_NEGATIVE,
        "the first retention check and checkpoint write come this long after startup, then every interval"),
    Key("log.flush.offset.checkpoint.interval.ms", "log_flush_offset_checkpoint_interval_ms", INT, 60_000, _POSITIVE, ""),
    Key("group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", INT, 3000, _NON_NEGATIVE, ""),
    Key("group.min.session.timeout.ms", "group_min_session_timeout_ms", INT, 6000, _NON_NEGATIVE, ""),
    Key("group.max.session.timeout.ms", "group_max_session_timeout_ms", INT, 1_800_000, _POSITIVE, ""),
    Key("group.max.size", "group_max_size", INT, 2**31 - 1, _POSITIVE, "most members of one classic group"),
    Key("offsets.topic.num.partitions", "offsets_topic_num_partitions", INT, 50, _POSITIVE, ""),
    Key("offsets.topic.replication.factor", "offsets_topic_replication_factor", SHORT, 1, _POSITIVE, "accepted"),
    Key("transaction.state.log.replication.factor", "transaction_state_log_replication_factor", SHORT, 3, _POSITIVE,
        "accepted; single node"),  # fmt: skip
    Key("transaction.state.log.min.isr", "transaction_state_log_min_isr", INT, 2, _POSITIVE, "accepted"),
    Key("offsets.topic.segment.bytes", "offsets_topic_segment_bytes", INT, 104_857_600, _POSITIVE, ""),
    Key("transaction.state.log.num.partitions", "transaction_state_log_num_partitions", INT, 50, _POSITIVE, ""),
    Key("transaction.state.log.segment.bytes", "transaction_state_log_segment_bytes", INT, 104_857_600, _POSITIVE,
        ""),  # fmt: skip
    Key("transaction.max.timeout.ms", "transaction_max_timeout_ms", INT, 900_000, _POSITIVE,
        "largest transaction.timeout.ms a producer may ask for"),  # fmt: skip
    Key("transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction_abort_timed_out_transaction_cleanup_interval_ms", INT, 10_000, _POSITIVE,
        "how often open transactions past their timeout are aborted"),  # fmt: skip
    Key("transactional.id.expiration.ms", "transactional_id_expiration_ms", INT, 604_800_000, _POSITIVE,
        "idle transactional ids are forgotten after this"),  # fmt: skip
    Key("transaction.remove.expired.transaction.cleanup.interval.ms",
        "transaction_remove_expired_transaction_cleanup_interval_ms", INT, 3_600_000, _POSITIVE, ""),
    Key("producer.id.expiration.check.interval.ms", "producer_id_expiration_check_interval_ms", INT, 600_000,
        _POSITIVE, "how often producer ids idle past producer.id.expiration.ms are forgotten"),  # fmt: skip
    Key("transaction.partition.verification.enable", "transaction_partition_verification_enable", BOOLEAN, True,
        None, "refuse transactional produce to a partition not added to the transaction (KIP-890)"),
    Key("max.request.partition.size.limit", "max_request_partition_size_limit", INT, 2000, _POSITIVE,
        "most partitions one DescribeTopicPartitions answer carries (the client may ask for fewer)"),
    Key("fetch.max.bytes", "fetch_max_bytes", INT, 55 * 1024 * 1024, at_least(1024),
        "most bytes a Fetch answer carries, whatever its max_bytes (the first batch still goes whole)"),
    Key("max.incremental.fetch.session.cache.slots", "max_incremental_fetch_session_cache_slots", INT, 1000,
        _NON_NEGATIVE, "incremental fetch sessions (KIP-227) kept at once, split over 8 shards"),  # fmt: skip
    Key("quota.window.num", "quota_window_num", INT, 11, _POSITIVE, "samples of a client quota's measure"),
    Key("quota.window.size.seconds", "quota_window_size_seconds", INT, 1, _POSITIVE,
        "length of one sample of a client quota's measure"),  # fmt: skip
    Key("metrics.num.samples", "metrics_num_samples", INT, 2, _POSITIVE,
        "samples of the broker's metrics that are not quotas (login, authorizer and throttle-time rates)"),
    Key("metrics.sample.window.ms", "metrics_sample_window_ms", LONG, 30_000, _POSITIVE,
        "length of one sample of the broker's metrics that are not quotas"),  # fmt: skip
    Key("controller.quota.window.num", "controller_quota_window_num", INT, 11, _POSITIVE,
        "samples of a controller_mutation_rate quota: its bucket holds this many windows of tokens"),  # fmt: skip
    Key("controller.quota.window.size.seconds", "controller_quota_window_size_seconds", INT, 1, _POSITIVE,
        "length of one sample of a controller_mutation_rate quota"),  # fmt: skip
    *(Key(name, name.replace(".", "_"), LONG, 2**63 - 1, _NON_NEGATIVE, doc) for name, doc in (
        ("replica.alter.log.dirs.io.max.bytes.per.second", "bytes per second moves between log dirs copy (Kafka: "
         "only set dynamically)"),
        ("leader.replication.throttled.rate", "accepted; one node has no followers to throttle"),
        ("follower.replication.throttled.rate", "accepted; one node has no followers to throttle"))),  # fmt: skip
    Key("authorizer.class.name", "authorizer_class_name", _authorizer_class, "", None,
        "StandardAuthorizer switches ACLs on (authorizer.py); empty: everything is allowed"),  # fmt: skip
    Key("super.users", "super_users", str, "", None, "principals allowed everything, separated by ';'"),
    Key("allow.everyone.if.no.acl.found", "allow_everyone_if_no_acl_found", BOOLEAN, False, None,
        "with an authorizer: a resource no ACL applies to is open to everyone"),  # fmt: skip
    *(Key(name, name.replace(".", "_"), parse, default, _POSITIVE, "accepted; share groups are not served")
      for name, parse, default in (("share.coordinator.state.topic.num.partitions", INT, 50),
                                   ("share.coordinator.state.topic.replication.factor", SHORT, 3),
                                   ("share.coordinator.state.topic.min.isr", SHORT, 2))),  # fmt: skip
    Key("offsets.retention.minutes", "offsets_retention_minutes", INT, 10080, _POSITIVE, ""),
    Key("offset.metadata.max.bytes", "offset_metadata_max_bytes", INT, 4096, None,
        "longest metadata of a committed offset, counted in Java chars (UTF-16 units) as Kafka counts it"),
    Key("offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms", LONG, 600_000, _POSITIVE, ""),
)
BROKER_KEYS += tuple(Key(*spec) for spec in GROUP_KEY_SPECS)  # group.consumer.*, group.share.* (group_keys.py)
# The security keys (``security_keys.py``): sasl.oauthbearer.* and ssl.*
BROKER_KEYS += tuple(Key(n, n.replace(".", "_"), parse, default, None, doc)
                     for n, (parse, default, doc) in OAUTHBEARER_KEYS.items())  # fmt: skip
BROKER_KEYS += tuple(Key(n, n.replace(".", "_"), str, d, None, doc) for n, (d, doc) in SSL_KEYS.items())
_BY_NAME = {k.name: k for k in BROKER_KEYS}
_BROKER_ID = Key("broker.id", "node_id", INT, 1, _node_id)  # Kafka's older name of node.id
OLDER_NAMES = frozenset({"broker.id", "log.dir"})  # of node.id and log.dirs (``_synonyms``)


LISTENER_PREFIX = "listener.name."
_LISTENER_KEYS = (  # after listener.name.<listener>.
    "sasl.enabled.mechanisms", "plain.sasl.jaas.config", "scram-sha-256.sasl.jaas.config",
    "scram-sha-512.sasl.jaas.config", "oauthbearer.sasl.jaas.config", "max.connections",
    "max.connection.creation.rate", *SSL_KEYS, "oauthbearer.sasl.server.callback.handler.class",
    "oauthbearer.sasl.login.callback.handler.class", *OAUTHBEARER_KEYS, *(f"oauthbearer.{k}" for k in OAUTHBEARER_KEYS),
    *(f"{m}connections.max.reauth.ms" for m in ("", "plain.", "scram-sha-256.", "scram-sha-512.", "oauthbearer.")),
)  # fmt: skip


def _listener_override(name: str, text: str) -> str:
    """A per-listener key (Kafka's ``listener.name.<listener>.<key>``): SASL, SSL and the connection limits."""
    listener, _, key = name[len(LISTENER_PREFIX):].partition(".")
    if not listener or key not in _LISTENER_KEYS:
        raise ConfigError(f"{name}: unknown configuration key (per-listener keys: {', '.join(_LISTENER_KEYS)})")
    if key in ("max.connections", "max.connection.creation.rate"):
        parse_value(name, text, INT, _NON_NEGATIVE)
    elif key.endswith("connections.max.reauth.ms"):
        parse_value(name, text, LONG, _NON_NEGATIVE)
    return text


def listener_setting(config: Any, listener: str, name: str, mechanism: str,
                     parse: Callable[[str], Any]) -> tuple[str, Any]:  # fmt: skip
    """``(the key that sets name, its value)`` for a listener's SASL ``mechanism``, as Kafka's SASL channel
    builder looks it up: ``listener.name.<l>.<mechanism>.<name>``, then ``listener.name.<l>.<name>`` (parsed
    with ``parse``), then the broker's ``name``."""
    prefix = f"{LISTENER_PREFIX}{listener.lower()}."
    for key in (f"{prefix}{mechanism.lower()}.{name}", f"{prefix}{name}"):
        if key in config.listener_overrides:
            return key, parse_value(key, config.listener_overrides[key].strip(), parse)
    value = getattr(config, name.replace(".", "_"))
    return name, value.strip() if isinstance(value, str) else value


def _parse_key(key: Key, text: str) -> Any:
    return parse_value(key.name, text, key.parse, key.check)


def _synonyms(props: dict[str, str]) -> dict[str, str]:
    """``props`` with Kafka's older names read as Kafka reads them: ``log.dirs`` if set, else ``log.dir``
    (``KafkaConfig.logDirs``), whichever line comes last; ``broker.id`` for ``node.id`` unless both are set,
    and then they must be equal (``KafkaConfig.validateValues``)."""
    props = dict(props)
    log_dir = props.pop("log.dir", None)
    if log_dir is not None:
        props.setdefault("log.dirs", log_dir)
    if "broker.id" in props:
        broker_id = _parse_key(_BROKER_ID, props.pop("broker.id"))
        if "node.id" not in props:
            props["node.id"] = str(broker_id)
        elif _parse_key(_BY_NAME["node.id"], props["node.id"]) != broker_id:
            raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
    return props


def known_key(name: str) -> bool:
    """Whether the broker reads ``name``: one of its keys or their older names, a per-listener key, a key of the
    storage layer, or one of Kafka's keys that do nothing here."""
    if name.startswith(LISTENER_PREFIX):
        listener, _, key = name[len(LISTENER_PREFIX) :].partition(".")
        return bool(listener) and key in _LISTENER_KEYS
    return name in _BY_NAME or name in OLDER_NAMES or name in KAFKA_KEYS or is_storage_key(name)


def split_broker_props(props: dict[str, str]) -> tuple[dict[str, Any], dict[str, str], frozenset[str]]:
    """Parse broker keys; return (broker values by attr, remaining props for storage, the broker key
    names that were set, older names resolved)."""
    values: dict[str, Any] = {k.attr: k.default for k in BROKER_KEYS}
    values["listener_overrides"] = {}
    rest: dict[str, str] = {}
    explicit: set[str] = set()
    for name, text in _synonyms(props).items():
        key = _BY_NAME.get(name)
        if name.startswith(LISTENER_PREFIX):
            values["listener_overrides"][name] = _listener_override(name, text)
        elif key is None:
            if not is_storage_key(name):
                raise ConfigError(unknown_key(name), name)
            rest[name] = text
        else:
            values[key.attr] = _parse_key(key, text)
            explicit.add(key.name)
    return values, rest, frozenset(explicit)


class BrokerConfig:
    """Broker settings as attributes (``config.node_id``), plus log/topic defaults for storage."""

    def __init__(self, values: dict[str, Any], log_props: dict[str, str],
                 explicit: frozenset[str] = frozenset()) -> None:  # fmt: skip
        self.__dict__.update(values)
        self.log_props = log_props
        self.explicit = explicit  # broker key names set in the file or an override, even to their default
        self.jaas_file = None  # the static JAAS file of KAFKA_OPTS (jaas_file.JaasFile); None: not set
        self.add_scram: list = []  # serve --add-scram's users (scram_store.AddScram), added once the dirs are locked
        self.served: list | None = None  # the listeners ``validate`` checked (listeners.served_listeners)
        self.unused: dict[str, str] = {}  # Kafka's keys that do nothing here, as set (kafka_keys.py)

    @classmethod
    def from_props(cls, props: dict[str, str]) -> "BrokerConfig":
        """The config of ``props``; each value trimmed, as Kafka's ``ConfigDef`` trims what it parses."""
        props = {name: java_trim(text) for name, text in props.items()}
        props, unused = split_unused(props)
        config = cls(*split_broker_props(props))
        config.unused = unused
        return config

    @classmethod
    def load(cls, path: str | Path | None, overrides: dict[str, str] | None = None,
             dropped: frozenset[str] = frozenset(), jaas_file: Any = None) -> "BrokerConfig":  # fmt: skip
        """The file's keys (but ``dropped``), then ``overrides``; ``jaas_file``: the static JAAS file."""
        try:
            props = load_properties(path) if path else {}
        except MalformedProperties as exc:
            raise ConfigError(f"{path}: {exc}") from None
        props = {k: v for k, v in props.items() if k not in dropped}
        props.update(overrides or {})
        config = cls.from_props(props)
        config.jaas_file = jaas_file
        config.validate()
        warn_unused(config.unused)
        return config

    def validate(self) -> None:
        """Check everything startup needs, so errors come before any port is bound."""
        from storage import ConfigError as StorageConfigError
        from storage.config import ConfigModel

        from .connection_quotas import ConnectionQuotas
        from .group_configs import check_group_protocol_keys
        from .listeners import served_listeners

        if not self.log_dir_list():  # Kafka's KafkaConfig check
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        self.served = served_listeners(self)
        ConnectionQuotas(self, [listener.name for listener in self.served])
        check_group_protocol_keys(self)
        try:
            ConfigModel.from_broker_props(self.log_props)
        except StorageConfigError as exc:
            raise ConfigError(str(exc)) from None

    def log_dir_list(self) -> list[str]:
        return [d.strip() for d in self.log_dirs.split(",") if d.strip()]
