"""Dynamic broker configs (Kafka's DynamicBrokerConfig): broker keys changed at runtime.

AlterConfigs and IncrementalAlterConfigs on a BROKER resource change them, at
one of Kafka's two levels: the cluster-wide default (resource name ``""``) or
this node's own (its ``node.id``). A key's value is, most specific first: this
node's dynamic value (DYNAMIC_BROKER_CONFIG), the dynamic default
(DYNAMIC_DEFAULT_BROKER_CONFIG), ``server.properties`` (STATIC_BROKER_CONFIG),
Kafka's default. Both levels live in ``__broker_configs.json`` in the first log
dir (``{"<default>": {...}, "<node.id>": {...}}``), replaced atomically on every
change; Kafka keeps them in its metadata log. At startup they are applied
before the broker serves; a level that is no longer valid (a file edited by
hand) is logged and skipped, as Kafka skips invalid dynamic configs.

What may change (``dynamic_key``), and what the change does:

* broker-level topic defaults under their primary key
  (``storage.config.DYNAMIC_KEYS``: ``log.segment.bytes``, ``log.retention.ms``,
  ``log.cleanup.policy``, ``message.max.bytes``, ``compression.type`` ...):
  every log without a topic override of that config uses the new value at
  once (its next roll, retention run, Produce check, Fetch);
* the cleaner's ``log.cleaner.threads``, ``.backoff.ms``, ``.dedupe.buffer.size``,
  ``.io.buffer.size``, ``.io.buffer.load.factor``, ``.io.max.bytes.per.second``:
  the cleaner threads restart with them (``LogCleaner.reconfigure``);
* ``max.connections``, ``max.connections.per.ip``, ``max.connections.per.ip.overrides``,
  ``max.connection.creation.rate``, ``listener.name.<l>.max.connections`` and
  ``.max.connection.creation.rate``: the connection limits (a lowered
  one closes no open connection);
* an SSL listener's keystore and truststore keys, ``listener.name.<l>.ssl.keystore.location``
  ..., for this node only: the listener's TLS context is built again
  (``tls_reload.py``; the same path again reloads a rotated keystore);
* ``producer.id.expiration.ms``, ``transaction.partition.verification.enable``;
* ``replica.alter.log.dirs.io.max.bytes.per.second``: the byte rate of the
  moves between log dirs, at once (``log_move.py``); with
  ``leader.``/``follower.replication.throttled.rate`` (accepted: one node
  has no followers), what ``kafka-reassign-partitions.sh --throttle`` and
  ``--replica-alter-log-dirs-throttle`` set;
* ``num.io.threads``, ``num.network.threads``: accepted as in
  ``server.properties`` (one event loop serves every request);
* ``num.recovery.threads.per.data.dir``: checked and stored, and read by no
  one until the next start, which loads the logs before it reads this file
  (with the ``server.properties`` value, as Kafka's KRaft broker loads them
  before it applies the dynamic configs; Kafka also sizes its shutdown's
  log-closing pools with it, where this broker closes the logs on one thread).

A thread count may change to between half and double its current value.
Refusals are INVALID_REQUEST with Kafka's message, in Kafka's order: a key Kafka
reads only at startup ("Cannot update these configs dynamically: Set(node.id)"),
an ``ssl.*`` key without a listener prefix ("These security configs can be
dynamically updated only per-listener using the listener prefix: ..."), a bad
value ("Invalid value x for configuration k: Not a number of type INT"), a
thread count out of range ("Invalid dynamic configuration", the reason in the
log). Two refusals are this broker's own: a per-listener key other than
those (Kafka also changes a listener's SASL settings, cipher suites and
protocols; here they are set in ``server.properties``), a key this broker does not know
(Kafka stores unknown keys and never reads them), and a key Kafka changes at
runtime that has no effect here (``kafka_keys.KAFKA_DYNAMIC``:
``num.replica.fetchers``, ``metric.reporters`` ...; "These configs have no
effect on this broker and are not changed dynamically"). Kafka's other keys
that do nothing here (``auto.leader.rebalance.enable`` ...) get Kafka's
"Cannot update these configs dynamically". A change the file cannot
take (a full or failing disk) is not made: KAFKA_STORAGE_ERROR. Changes are
made one at a time, each saved on a worker thread before it is made and
answered (``store_saves.py``), so other connections are served meanwhile.
"""

from __future__ import annotations

import json
import logging
import types
from pathlib import Path
from typing import Any, Callable

import attrs
import trio

from cleaner import CleanerConfig
from storage import ConfigError as StorageConfigError
from storage import StorageError
from storage.config import DYNAMIC_KEYS as STORAGE_DYNAMIC_KEYS
from storage.config import OTHER_BROKER_DEFAULTS, ConfigModel, is_storage_key
from storage.config_values import TYPE_PARSERS
from storage.topic_store import atomic_write

from . import config_values
from .config import BROKER_KEYS, LISTENER_PREFIX, ConfigError
from .connection_quotas import ip_limits
from .kafka_keys import KAFKA_DYNAMIC, KAFKA_KEYS
from .store_saves import StoreSaves
from .tls_reload import RELOADABLE, NotReloadable, reloadable_key, reloaded_contexts

log = logging.getLogger("minibroker")
FILE_NAME = "__broker_configs.json"
DEFAULT_LEVEL = ""  # the cluster-wide default's resource name
_FILE_DEFAULT = "<default>"
DYNAMIC_BROKER, DYNAMIC_DEFAULT = "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"
# The keys of broker/config.py that Kafka lets change at runtime: their ConfigDef type and lower bound.
BROKER_DYNAMIC: dict[str, tuple[str, int | None]] = {
    "max.connections": ("INT", 0), "max.connections.per.ip": ("INT", 0), "max.connection.creation.rate": ("INT", 0),
    "max.connections.per.ip.overrides": ("STRING", None), "num.io.threads": ("INT", 1),
    "num.network.threads": ("INT", 1), "transaction.partition.verification.enable": ("BOOLEAN", None),
    "replica.alter.log.dirs.io.max.bytes.per.second": ("LONG", 0), "leader.replication.throttled.rate": ("LONG", 0),
    "follower.replication.throttled.rate": ("LONG", 0),
}  # fmt: skip
# The thread counts Kafka keeps between half and double on a change.
_THREAD_COUNTS = ("num.io.threads", "num.network.threads", "num.recovery.threads.per.data.dir", "log.cleaner.threads")
_KNOWN_FIXED = frozenset(k.name for k in BROKER_KEYS) | {"broker.id", "log.dir"} | (KAFKA_KEYS.keys() - KAFKA_DYNAMIC)
_LISTENER_LIMITS = ("max.connections", "max.connection.creation.rate")


class Refused(Exception):
    """A change Kafka refuses: INVALID_REQUEST with this message."""


def listener_limit(name: str) -> bool:
    """``listener.name.<listener>.max.connections`` or ``.max.connection.creation.rate``."""
    parts = name.split(".", 3)
    return len(parts) == 4 and name.startswith(LISTENER_PREFIX) and parts[3] in _LISTENER_LIMITS


def dynamic_key(name: str) -> bool:
    return name in STORAGE_DYNAMIC_KEYS or name in BROKER_DYNAMIC or listener_limit(name) or reloadable_key(name)


def scala_set(names: set[str]) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


def check_keys(props: dict[str, str], per_broker: bool) -> None:
    """Kafka's key checks of a dynamic change, in its order; ``Refused`` names the keys."""
    names = set(props)
    security = names & RELOADABLE
    fixed = {n for n in names - security if not dynamic_key(n) and (n in _KNOWN_FIXED or is_storage_key(n))}
    if fixed:
        raise Refused(f"Cannot update these configs dynamically: {scala_set(fixed)}")
    if security:
        raise Refused("These security configs can be dynamically updated only per-listener using the listener "
                      f"prefix: {scala_set(security)}")  # fmt: skip
    per_listener = {n for n in names if n.startswith(LISTENER_PREFIX) and not listener_limit(n)}
    if not per_broker and per_listener:
        raise Refused("Cannot update these configs at default cluster level, broker id must be specified: "
                      f"{scala_set(per_listener)}")  # fmt: skip
    listener = {n for n in per_listener if not reloadable_key(n)}
    if listener:
        raise Refused("Of the per-listener configs only max.connections and the keystore and truststore keys can "
                      f"be updated dynamically on this broker (set the others in server.properties): "
                      f"{scala_set(listener)}")  # fmt: skip
    inert = names & KAFKA_DYNAMIC
    if inert:
        raise Refused("These configs have no effect on this broker and are not changed dynamically: "
                      f"{scala_set(inert)}")  # fmt: skip
    unknown = {n for n in names if not dynamic_key(n) and n not in listener}
    if unknown:
        raise Refused(f"Unknown broker configs: {scala_set(unknown)}")


def parse_value(name: str, text: str) -> Any:
    """A broker key's value (``BROKER_DYNAMIC`` or a listener limit), checked as Kafka's ConfigDef does."""
    kind, low = BROKER_DYNAMIC.get(name, ("INT", 0))
    try:
        return config_values.parse_value(name, text.strip() if kind != "STRING" else text, TYPE_PARSERS[kind],
                                         None if low is None else config_values.at_least(low))  # fmt: skip
    except ConfigError as exc:
        raise Refused(str(exc)) from None


@attrs.frozen
class Plan:
    """A checked change: the levels after it and everything they resolve to."""

    levels: dict[str, dict[str, str]]
    model: ConfigModel
    values: dict[str, Any]  # broker config attribute -> value, for the keys of BROKER_DYNAMIC
    listener_overrides: dict[str, str]
    cleaner: CleanerConfig
    tls: dict[str, Any]  # listener name -> its new TLS context (keystore or truststore reloaded)


class DynamicBrokerConfig:
    """This node's dynamic broker configs: ``plan`` checks a change, ``apply`` makes it."""

    def __init__(self, broker: Any, path: Path, stored: dict[str, dict[str, str]]) -> None:
        config = broker.config
        self.broker, self.path, self.node = broker, path, str(config.node_id)
        self.stored = stored  # every level in the file, other node ids' too (kept as they are)
        self.levels: dict[str, dict[str, str]] = {DEFAULT_LEVEL: {}, self.node: {}}
        self.static_model: ConfigModel = broker.topics.manager.model
        self.static_values = {k.name: getattr(config, k.attr) for k in BROKER_KEYS if k.name in BROKER_DYNAMIC}
        self.static_listeners = dict(config.listener_overrides)
        self.saves = StoreSaves()  # one change at a time, saved on a worker thread
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each save (on its thread)

    @classmethod
    def load(cls, broker: Any) -> "DynamicBrokerConfig":
        """Read the stored levels and apply each one that is still valid (the others are logged)."""
        path = Path(broker.config.log_dir_list()[0]) / FILE_NAME
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
            stored = {DEFAULT_LEVEL if k == _FILE_DEFAULT else k: {str(n): str(v) for n, v in props.items()}
                      for k, props in data.items()}  # fmt: skip
        except (ValueError, AttributeError) as exc:
            raise StorageError(f"{path} is damaged ({exc}): mend or remove it") from None
        self = cls(broker, path, stored)
        for level in (DEFAULT_LEVEL, self.node):
            props = stored.get(level)
            if not props:
                continue
            try:
                self._install(self.plan(level, props, check_threads=False))
            except Refused as exc:
                log.error("ignoring the stored dynamic broker configs of %s (%s): %s",
                          level or _FILE_DEFAULT, ", ".join(sorted(props)), exc)  # fmt: skip
        return self

    # -- checking ------------------------------------------------------------------------

    def plan(self, level: str, props: dict[str, str], *, check_threads: bool = True) -> Plan:
        """Check ``props`` as the new complete set of ``level``'s dynamic configs; ``Refused`` if not valid."""
        check_keys(props, per_broker=level != DEFAULT_LEVEL)
        levels = {**self.levels, level: dict(props)}
        layers = [(DYNAMIC_BROKER, levels[self.node]), (DYNAMIC_DEFAULT, levels[DEFAULT_LEVEL])]
        try:
            model = self.static_model.with_dynamic(layers)
            self.broker.topics.manager.check_model(model)
            values, listeners = self._broker_values(levels)
            candidate = types.SimpleNamespace(**{**vars(self.broker.config), **values, "listener_overrides": listeners})
            ip_limits(candidate)
            tls = reloaded_contexts(self.broker, candidate, levels[self.node])
        except (StorageConfigError, ConfigError) as exc:
            raise Refused(str(exc)) from None
        except NotReloadable as exc:  # Kafka's answer does not say why; the log does
            log.info("refused a TLS context reload: %s", exc)
            raise Refused("Invalid dynamic configuration") from None
        if check_threads:
            self._check_thread_counts(model, values)
        return Plan(levels, model, values, listeners, CleanerConfig.from_props(model.other), tls)

    def _broker_values(self, levels: dict[str, dict[str, str]]) -> tuple[dict[str, Any], dict[str, str]]:
        values = {}
        for key in BROKER_KEYS:
            if key.name in BROKER_DYNAMIC:
                text = levels[self.node].get(key.name, levels[DEFAULT_LEVEL].get(key.name))
                values[key.attr] = self.static_values[key.name] if text is None else parse_value(key.name, text)
        listeners = dict(self.static_listeners)
        for level in (DEFAULT_LEVEL, self.node):  # this node's own last: it wins
            for name, text in levels[level].items():
                if listener_limit(name):
                    listeners[name] = str(parse_value(name, text))
                elif reloadable_key(name):
                    listeners[name] = text
        return values, listeners

    def _check_thread_counts(self, model: ConfigModel, values: dict[str, Any]) -> None:
        """Kafka's DynamicThreadPool / LogCleaner rule: a count goes to between half and double its value."""
        current = self.broker.topics.manager.model.other, vars(self.broker.config)
        for name in _THREAD_COUNTS:
            old, new = self._thread_count(name, *current), self._thread_count(name, model.other, values)
            if new != old and not (1 <= new and old // 2 <= new <= old * 2):
                log.info("refused %s=%d: a thread count may change to between half and double its value %d",
                         name, new, old)  # fmt: skip
                raise Refused("Invalid dynamic configuration")

    @staticmethod
    def _thread_count(name: str, other: dict[str, Any], values: dict[str, Any]) -> int:
        if name in BROKER_DYNAMIC:
            return values[name.replace(".", "_")]
        return other.get(name, int(OTHER_BROKER_DEFAULTS[name][1]))  # Kafka 4's defaults: 2 and 1

    # -- applying ------------------------------------------------------------------------

    async def apply(self, level: str, change: Callable[[dict[str, str]], dict[str, str]], validate_only: bool) -> None:
        """Make ``change(current)`` the complete set of ``level``'s dynamic configs (after ``plan``'s checks);
        ``change`` runs in the store's turn, so a change is never made on a level another one is replacing;
        the file is saved on a worker thread (``StoreSaves``) and the change made once it is."""
        async with self.saves:
            plan = self.plan(level, change(dict(self.levels.get(level, {}))))
            if validate_only:
                return
            stored = {**self.stored, **plan.levels}
            await self.saves.save_or_refuse("dynamic broker configs", self.path, self._write, stored)
            self.stored = stored
            old_cleaner = CleanerConfig.from_props(self.broker.topics.manager.model.other)
            self._install(plan)
            log.info("dynamic broker configs of %s are now: %s", level or _FILE_DEFAULT, plan.levels[level])
            with trio.CancelScope(shield=True):  # made: the quotas and the cleaner follow, cancelled or not
                await self._reconfigure(plan.cleaner if plan.cleaner != old_cleaner else None)

    async def _reconfigure(self, cleaner_config: CleanerConfig | None) -> None:
        """After a change: the connection quotas, and the cleaner when its configs changed (not None)."""
        quotas = getattr(self.broker, "connection_quotas", None)
        if quotas is not None:
            await quotas.reconfigure(self.broker.config)
        cleaner = getattr(self.broker, "cleaner", None)
        if cleaner is not None and cleaner_config is not None:
            await trio.to_thread.run_sync(cleaner.reconfigure, cleaner_config)

    def _install(self, plan: Plan) -> None:
        self.levels = plan.levels
        self.broker.topics.manager.reconfigure(plan.model)
        self.broker.topics.invalidate(None)
        config = self.broker.config
        for attr, value in plan.values.items():
            setattr(config, attr, value)
        config.listener_overrides = plan.listener_overrides
        self.broker.topics.manager.moves.set_rate(config.replica_alter_log_dirs_io_max_bytes_per_second)
        self.broker.tls_contexts.update(plan.tls)

    def _write(self, stored: dict[str, dict[str, str]]) -> None:
        """Save every level (any thread: it fsyncs), and count the change in the metadata quorum."""
        data = {(k or _FILE_DEFAULT): v for k, v in sorted(stored.items()) if v}
        atomic_write(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n", private=True)  # passwords
        self.on_metadata_change()

    # -- describing ----------------------------------------------------------------------

    def synonyms(self, name: str) -> list[tuple[str, str, str]]:
        """The dynamic places ``name`` is set, most specific first: ``(name, text, source)``."""
        found = [(name, self.levels[self.node][name], DYNAMIC_BROKER)] if name in self.levels[self.node] else []
        if name in self.levels[DEFAULT_LEVEL]:
            found.append((name, self.levels[DEFAULT_LEVEL][name], DYNAMIC_DEFAULT))
        return found

    def names(self) -> set[str]:
        return set(self.levels[self.node]) | set(self.levels[DEFAULT_LEVEL])
