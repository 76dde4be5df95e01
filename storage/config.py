"""Topic configs with Kafka's names, defaults, broker synonyms and validation.

Each topic config is a ``ConfigSpec``: its Kafka name (``segment.bytes``), the
broker key that sets its default for all topics (``log.segment.bytes``), its
Kafka type, default and check. ``ConfigModel.from_broker_props`` validates the
broker-level keys (refusing unknown ones, naming the key), and
``effective(overrides)`` resolves a topic's ``LogConfig``: topic override,
else broker setting, else Kafka's default (``describe`` reports which, with
the synonyms in Kafka's order, for DescribeConfigs). ``with_dynamic`` lays
Kafka's dynamic broker configs (``DYNAMIC_KEYS``, changed at runtime through
AlterConfigs on a BROKER resource) over the ``server.properties`` values: per
broker, then the cluster-wide default, then static, then Kafka's default.

Kafka's precedence for time keys is kept: ``log.retention.ms`` over
``log.retention.minutes`` over ``log.retention.hours`` (and the same for
``log.roll.*``; ``flush.ms`` falls back to ``log.flush.scheduler.interval.ms``
without ``log.flush.interval.ms``, as Kafka's ``logFlushIntervalMs``); at
the broker level any negative retention time is -1
(unlimited: ``log.retention.hours=-1``) and 0 is refused, as Kafka's
``KafkaConfig`` has it, while a topic's ``retention.ms`` is at least -1. ``message.format.version`` is accepted but deprecated
(KIP-724): the log is always written in format v2, and its effective value
is reported as ``3.0-IV1``. The tiered-storage keys (``remote.storage.enable``,
``local.retention.ms``/``.bytes`` with their ``log.local.retention.*`` broker
defaults, ``remote.log.copy.disable``, ``remote.log.delete.on.disable``) are
accepted and described with Kafka's defaults but have no effect: there is no
remote storage, and ``remote.storage.enable=true`` is refused as Kafka
refuses it when tiered storage is disabled in the broker. The KIP-390 levels (``compression.gzip.level``,
``compression.lz4.level``, ``compression.zstd.level``, broker keys of the
same names) are the level a batch is compressed at when the broker rebuilds
it for a topic whose ``compression.type`` names that codec.

A refused value is a ``ConfigError`` in the words of Kafka's ``ConfigDef``:
"Invalid value soon for configuration retention.ms: Not a number of type
LONG" for a text its type cannot parse (INT, LONG, DOUBLE, BOOLEAN), "...:
Value must be at least -1" for a number out of range, "...: String must be
one of: ..." for a choice. ``cleanup.policy`` is a LIST kept in the order it
was given (``delete,compact`` is stored and described so); what matters to
the log is whether it holds ``compact`` and/or ``delete``.

The broker keys that are not topic defaults (``OTHER_BROKER_KEYS``: the
cleaner's ``log.cleaner.threads``, ``.backoff.ms``, ``.io.buffer.size`` ...,
``producer.id.expiration.ms`` ...) have the lower bounds Kafka declares, and,
at startup as for each dynamic change, ``log.cleaner.dedupe.buffer.size``
must give each cleaner thread more than 1 MiB (``KafkaConfig``'s requirement).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import attrs

from protocol.primitives import INT64_MAX

from .config_values import (_at_least, _bool, _check_range, check_cleaner_memory, _double, _format_version, _gzip_level, _int, _long,
                            _metadata_version, one_of, _policy, _throttled_replicas, invalid_value,
                            java_text, warn_ignored_format)  # fmt: skip
from .errors import ConfigError

log = logging.getLogger(__name__)
LONG_MAX = INT64_MAX  # Kafka's Long.MAX_VALUE, the "no limit" of LONG configs
V2_FORMAT = "3.0-IV1"


@attrs.frozen
class ConfigSpec:
    name: str
    broker_key: str | None
    type: str
    default_text: str
    parse: Callable[[str], Any]
    low: float | None = None
    high: float | None = None
    doc: str = ""

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_")

    def convert(self, text: str, key: str) -> Any:
        """The parsed value of ``text`` set under ``key``, or ConfigError with Kafka's wording (naming ``key``)."""
        try:
            value = self.parse(str(text).strip())
            _check_range(value, self.low, self.high)
        except ValueError as exc:
            raise ConfigError(invalid_value(key, text, exc)) from None
        return value


def _spec(name, broker, type_, default, parse, low=None, high=None, doc=""):
    return ConfigSpec(name, broker, type_, str(default), parse, low, high, doc)


TOPIC_CONFIGS: tuple[ConfigSpec, ...] = (
    _spec("cleanup.policy", "log.cleanup.policy", "LIST", "delete", _policy, doc="delete, compact or both"),
    _spec("compression.type", "compression.type", "STRING", "producer",
          one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), doc="codec the log is stored in"),
    _spec("compression.gzip.level", "compression.gzip.level", "INT", -1, _gzip_level,
          doc="gzip level when compression.type is gzip (KIP-390; -1: zlib's default)"),
    _spec("compression.lz4.level", "compression.lz4.level", "INT", 9, _int, 1, 17,
          doc="lz4 level when compression.type is lz4 (KIP-390; 9: LZ4's fast mode, others LZ4 HC)"),
    _spec("compression.zstd.level", "compression.zstd.level", "INT", 3, _int, -131072, 22,
          doc="zstd level when compression.type is zstd (KIP-390)"),
    _spec("delete.retention.ms", "log.cleaner.delete.retention.ms", "LONG", 86_400_000, _long, 0,
          doc="how long tombstones are kept after the cleaner first sees them"),
    _spec("file.delete.delay.ms", "log.segment.delete.delay.ms", "LONG", 60_000, _long, 0,
          doc="delay before a replaced or deleted segment file is removed"),
    _spec("follower.replication.throttled.replicas", None, "LIST", "", _throttled_replicas("follower."
          "replication.throttled.replicas"), doc="accepted; one node has no followers to throttle"),  # fmt: skip
    _spec("flush.messages", "log.flush.interval.messages", "LONG", LONG_MAX, _long, 1, doc="fsync every N records"),
    _spec("flush.ms", "log.flush.interval.ms", "LONG", LONG_MAX, _long, 0, doc="fsync at least this often"),
    _spec("index.interval.bytes", "log.index.interval.bytes", "INT", 4096, _int, 0,
          doc="bytes between offset-index entries"),
    _spec("leader.replication.throttled.replicas", None, "LIST", "", _throttled_replicas("leader.replication."
          "throttled.replicas"), doc="accepted; one node has no followers to throttle"),  # fmt: skip
    _spec("local.retention.bytes", "log.local.retention.bytes", "LONG", -2, _long, -2,
          doc="accepted, no effect: no tiered storage here (-2: retention.bytes)"),
    _spec("local.retention.ms", "log.local.retention.ms", "LONG", -2, _long, -2,
          doc="accepted, no effect: no tiered storage here (-2: retention.ms)"),
    _spec("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "LONG", LONG_MAX, _long, 1,
          doc="longest a record may stay uncompacted (KIP-354)"),
    _spec("max.message.bytes", "message.max.bytes", "INT", 1_048_588, _int, 0,
          doc="largest record batch accepted"),
    _spec("message.downconversion.enable", "log.message.downconversion.enable", "BOOLEAN", "true", _bool,
          doc="serve Fetch v0-3 by down-converting"),
    _spec("message.format.version", "log.message.format.version", "STRING", V2_FORMAT, _metadata_version,
          doc="deprecated (KIP-724): always stored as v2"),
    _spec("message.timestamp.type", "log.message.timestamp.type", "STRING", "CreateTime",
          one_of("CreateTime", "LogAppendTime"), doc="CreateTime or LogAppendTime"),
    _spec("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", "LONG", LONG_MAX, _long, 0,
          doc="how far in the past a CreateTime timestamp may be"),
    _spec("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "LONG", LONG_MAX, _long, 0,
          doc="how far in the future a CreateTime timestamp may be"),
    _spec("message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms", "LONG", LONG_MAX,
          _long, 0, doc="deprecated: default of the before/after bounds"),
    _spec("min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "DOUBLE", 0.5, _double, 0, 1,
          doc="dirty ratio above which the cleaner picks the log"),
    _spec("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "LONG", 0, _long, 0,
          doc="youngest a record may be to be compacted"),
    _spec("min.insync.replicas", "min.insync.replicas", "INT", 1, _int, 1,
          doc="acks=all needs min(this, replicas) in sync, as Kafka 3.7+ (KAFKA-15583): 1 here, always met"),
    _spec("preallocate", "log.preallocate", "BOOLEAN", "false", _bool, doc="accepted"),
    _spec("remote.log.copy.disable", None, "BOOLEAN", "false", _bool,
          doc="accepted, no effect: no tiered storage here"),
    _spec("remote.log.delete.on.disable", None, "BOOLEAN", "false", _bool,
          doc="accepted, no effect: no tiered storage here"),
    _spec("remote.storage.enable", None, "BOOLEAN", "false", _bool,
          doc="accepted as false only: true is refused, as Kafka refuses it with tiered storage disabled"),
    _spec("retention.bytes", "log.retention.bytes", "LONG", -1, _long, doc="size limit per partition (-1: none)"),
    _spec("retention.ms", "log.retention.ms", "LONG", 604_800_000, _long, -1, doc="time limit (-1: none)"),
    _spec("segment.bytes", "log.segment.bytes", "INT", 1_073_741_824, _int, 14, doc="segment size"),
    _spec("segment.index.bytes", "log.index.size.max.bytes", "INT", 10_485_760, _int, 4,
          doc="offset/time index size"),
    _spec("segment.jitter.ms", "log.roll.jitter.ms", "LONG", 0, _long, 0, doc="random jitter on segment.ms"),
    _spec("segment.ms", "log.roll.ms", "LONG", 604_800_000, _long, 1, doc="roll the active segment after this"),
    _spec("tombstone.header", "log.tombstone.header", "STRING", "kafka.tombstone", str,
          doc="records with this header are explicit tombstones (KIP-87); empty disables"),
    _spec("unclean.leader.election.enable", "unclean.leader.election.enable", "BOOLEAN", "false", _bool,
          doc="accepted; single node"),
)  # fmt: skip
SPECS = {s.name: s for s in TOPIC_CONFIGS}
_BY_BROKER_KEY = {s.broker_key: s for s in TOPIC_CONFIGS if s.broker_key}
# Broker keys in a coarser unit that feed a topic config's broker default, lowest priority last.
_UNIT_KEYS = {
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),  # logFlushIntervalMs
}
# Broker keys that are not topic defaults but belong to the storage layer or the cleaner, each with the
# range Kafka declares for it (CleanerConfig, LogConfig's server keys, TransactionLogConfig).
OTHER_BROKER_KEYS: dict[str, Callable[[str], Any]] = {
    "log.flush.durable.enable": _bool,
    "log.record.version.force.upgrade": _format_version,
    "log.cleaner.enable": _bool,
    "log.cleaner.threads": _at_least(_int, 0),
    "log.cleaner.backoff.ms": _at_least(_long, 0),
    "log.cleaner.dedupe.buffer.size": _long,
    "log.cleaner.io.max.bytes.per.second": _double,
    "log.cleaner.io.buffer.size": _at_least(_int, 0),
    "log.cleaner.io.buffer.load.factor": _double,
    "num.recovery.threads.per.data.dir": _at_least(_int, 1),
    "log.flush.scheduler.interval.ms": _long,
    "log.flush.start.offset.checkpoint.interval.ms": _at_least(_int, 0),
    "producer.id.expiration.ms": _at_least(_int, 1),
}
# Each storage key's Kafka type and default as DescribeConfigs shows them (None: no default), the unit
# forms of topic defaults included (log.retention.minutes has none: log.retention.hours decides).
OTHER_BROKER_DEFAULTS: dict[str, tuple[str, str | None]] = {
    "log.flush.durable.enable": ("BOOLEAN", "false"), "log.record.version.force.upgrade": ("STRING", None),
    "log.cleaner.enable": ("BOOLEAN", "true"), "log.cleaner.threads": ("INT", "1"),
    "log.cleaner.backoff.ms": ("LONG", "15000"), "log.cleaner.dedupe.buffer.size": ("LONG", "134217728"),
    "log.cleaner.io.max.bytes.per.second": ("DOUBLE", "1.7976931348623157E308"),
    "log.cleaner.io.buffer.size": ("INT", "524288"), "log.cleaner.io.buffer.load.factor": ("DOUBLE", "0.9"),
    "num.recovery.threads.per.data.dir": ("INT", "2"), "log.flush.scheduler.interval.ms": ("LONG", str(LONG_MAX)),
    "log.flush.start.offset.checkpoint.interval.ms": ("INT", "60000"), "producer.id.expiration.ms": ("INT", "86400000"),
    "log.retention.minutes": ("INT", None), "log.retention.hours": ("INT", "168"), "log.roll.hours": ("INT", "168"),
    "log.roll.jitter.hours": ("INT", "0"),
}  # fmt: skip
# The storage keys Kafka lets AlterConfigs change at runtime on a BROKER resource (its DynamicLogConfig,
# LogCleaner and DynamicThreadPool reconfigurables): each topic default under its primary broker key (not
# the .hours/.minutes forms, not log.message.format.version), the cleaner's tuning, producer id expiry.
DYNAMIC_KEYS = frozenset(
    {s.broker_key for s in TOPIC_CONFIGS if s.broker_key and s.name != "message.format.version"}
    | {"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size",
       "log.cleaner.io.buffer.load.factor", "log.cleaner.io.max.bytes.per.second", "producer.id.expiration.ms",
       "num.recovery.threads.per.data.dir"}
)  # fmt: skip


@attrs.frozen
class ConfigEntry:
    """One row of DescribeConfigs."""

    name: str
    value: str | None
    source: str
    read_only: bool = False
    sensitive: bool = False
    type: str = "STRING"
    doc: str = ""
    synonyms: tuple[tuple[str, str, str], ...] = ()


LogConfig = attrs.make_class(
    "LogConfig", {s.attr: attrs.field() for s in TOPIC_CONFIGS}, frozen=True, slots=True
)
LogConfig.__doc__ = "A topic's effective configuration; attribute names are Kafka's with dots as underscores."


class ConfigModel:
    """Broker-level defaults plus the rules to resolve and describe topic configs."""

    def __init__(self, broker_values: dict[str, tuple[str, str, str]], other: dict[str, Any],
                 cleaner_props: dict[str, str] | None = None, dynamic: tuple = (),
                 static_other: dict[str, Any] | None = None) -> None:  # fmt: skip
        self._broker = broker_values  # topic config name -> (broker key, text as set[, text in the topic unit])
        self.other = other  # non-topic storage/cleaner keys by name, parsed (dynamic values over static ones)
        self.static_other = other if static_other is None else static_other
        self.cleaner_props = cleaner_props or {}  # every log.cleaner.* key as given, for the cleaner
        self._dynamic = dynamic  # ((source, {topic config name: (broker key, text, as value)}), ...), most specific first

    @classmethod
    def from_broker_props(cls, props: dict[str, str]) -> "ConfigModel":
        broker: dict[str, tuple[str, str, str]] = {}
        other: dict[str, Any] = {}
        for key, text in props.items():
            if key in _BY_BROKER_KEY:
                spec = _BY_BROKER_KEY[key]
                if key == "log.message.format.version":
                    warn_ignored_format(text)
                broker.setdefault(spec.name, (key, text, _broker_default(spec.name, key, text)))
            elif key in OTHER_BROKER_KEYS:
                other[key] = _other_value(key, text)
            elif not _unit_key(key):
                raise ConfigError(f"{key}: unknown configuration key")
        for name, units in _UNIT_KEYS.items():
            for key, factor in units:
                if key in props:
                    broker[name] = (key, props[key].strip(), _broker_default(name, key, props[key], factor))
                    break
        cleaner = {k: str(v) for k, v in props.items() if k.startswith("log.cleaner.")}
        check_cleaner_memory(other)
        model = cls(broker, other, cleaner)
        model.effective({})  # cross-key checks on the broker defaults
        return model

    def with_dynamic(self, layers: list[tuple[str, dict[str, str]]]) -> "ConfigModel":
        """This model under Kafka's dynamic broker configs. ``layers`` are ``(source, {broker key: text})``,
        most specific first (``DYNAMIC_BROKER_CONFIG``, then ``DYNAMIC_DEFAULT_BROKER_CONFIG``), each over
        the ``server.properties`` values this model was made from. Keys of ``DYNAMIC_KEYS`` only: others
        are skipped (the broker refuses them). A bad value raises ``ConfigError`` naming the key, as do
        the cross-key checks of the resulting broker defaults."""
        dynamic, other = [], dict(self.static_other)
        for source, props in reversed(layers):  # least specific first: a more specific layer wins in ``other``
            layer = {}
            for key, text in props.items():
                if key not in DYNAMIC_KEYS:
                    continue
                if key in _BY_BROKER_KEY:
                    name = _BY_BROKER_KEY[key].name
                    layer[name] = (key, text, _broker_default(name, key, text))
                else:
                    other[key] = _other_value(key, text)
            dynamic.insert(0, (source, layer))
        check_cleaner_memory(other)
        model = ConfigModel(self._broker, other, self.cleaner_props, tuple(dynamic), self.static_other)
        model.effective({})
        return model

    def effective(self, overrides: dict[str, str]) -> Any:
        values = {}
        for spec in TOPIC_CONFIGS:
            text, key = self._text(spec, overrides)
            values[spec.attr] = spec.convert(text, key)
        for bound in ("before", "after"):
            attr = f"message_timestamp_{bound}_max_ms"
            if values[attr] == LONG_MAX:
                values[attr] = values["message_timestamp_difference_max_ms"]
        values["message_format_version"] = V2_FORMAT
        _check_values(values)
        return LogConfig(**values)

    def validate_overrides(self, overrides: dict[str, str]) -> None:
        for key in overrides:
            if key not in SPECS:
                raise ConfigError(f"Unknown topic config name: {key}")
        self.effective(overrides)

    def _text(self, spec: ConfigSpec, overrides: dict[str, str]) -> tuple[str, str]:
        if spec.name in overrides:
            return overrides[spec.name], spec.name
        for _source, layer in self._dynamic:
            if spec.name in layer:
                key, _, text = layer[spec.name]
                return text, key
        if spec.name in self._broker:
            key, _, text = self._broker[spec.name]
            return text, key
        return spec.default_text, spec.name

    def describe(self, overrides: dict[str, str]) -> list[ConfigEntry]:
        effective = self.effective(overrides)
        entries = []
        for spec in TOPIC_CONFIGS:
            synonyms = []
            if spec.name in overrides:
                synonyms.append((spec.name, overrides[spec.name], "DYNAMIC_TOPIC_CONFIG"))
            synonyms += [(*layer[spec.name][:2], source) for source, layer in self._dynamic if spec.name in layer]
            if spec.name in self._broker:
                key, text, _ = self._broker[spec.name]
                synonyms.append((key, text, "STATIC_BROKER_CONFIG"))
            if spec.broker_key:  # a topic-only config has no default synonym in Kafka (ConfigHelper)
                synonyms.append((spec.broker_key, spec.default_text, "DEFAULT_CONFIG"))
            value = getattr(effective, spec.attr)
            text = ",".join(value) if isinstance(value, tuple) else java_text(value)
            source = synonyms[0][2] if synonyms else "DEFAULT_CONFIG"
            entries.append(ConfigEntry(spec.name, text, source, type=spec.type, doc=spec.doc,
                                       synonyms=tuple(synonyms)))  # fmt: skip
        return entries


def _check_values(values: dict[str, Any]) -> None:
    """Kafka's cross-key checks of a topic's configs (``LogConfig.validateValues`` and, with the tiered
    storage system disabled as here, ``validateRemoteStorageOnlyIfSystemEnabled``)."""
    low, high = values["min_compaction_lag_ms"], values["max_compaction_lag_ms"]
    if low > high:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        )
    if values["remote_storage_enable"]:
        raise ConfigError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
        )


def _broker_default(name: str, key: str, text: str, factor: int = 1) -> str:
    """The text of topic config ``name``'s default as broker key ``key`` (a time in units of ``factor`` ms)
    sets it; ``ConfigError`` naming ``key`` if refused. ``retention.ms`` follows Kafka's
    ``KafkaConfig.logRetentionTimeMillis``: its broker keys have no lower bound, any negative time means
    -1 (unlimited), and 0 is refused (``validateValues``)."""
    spec = SPECS[name] if factor == 1 else attrs.evolve(SPECS[name], type="INT", parse=_int)
    if name != "retention.ms":
        value = spec.convert(text, key)
        return text if factor == 1 else str(value * factor)
    millis = attrs.evolve(spec, low=None).convert(text, key) * factor
    if millis == 0:
        raise ConfigError("requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    return str(max(millis, -1))


def _other_value(key: str, text: str) -> Any:
    try:
        return OTHER_BROKER_KEYS[key](text.strip())
    except ValueError as exc:
        raise ConfigError(invalid_value(key, text, exc)) from None


def is_storage_key(key: str) -> bool:
    """Whether ``key`` is a broker key of the storage layer's (a topic default, a unit form of one, or a
    storage or cleaner setting)."""
    return key in _BY_BROKER_KEY or key in OTHER_BROKER_KEYS or _unit_key(key)


def broker_key_spec(key: str) -> ConfigSpec | None:
    """The topic config whose broker-level default ``key`` sets (its primary key only), or None."""
    return _BY_BROKER_KEY.get(key)


def _unit_key(key: str) -> bool:
    return any(key == k for units in _UNIT_KEYS.values() for k, _ in units)
