"""Client quotas (Kafka's ClientQuotaManager: KIP-13, KIP-55, KIP-219, KIP-546): byte rates per user and client id.

**Store.** AlterClientQuotas sets quotas on *entities*: a ``user``, a
``client-id``, both, or an ``ip``, each named or the type's default (a null
name). ``ClientQuotas`` keeps them, checked as Kafka's controller checks them,
in ``__client_quotas.json`` in the first log dir (rewritten atomically on
every change, one change at a time, on a worker thread before the change is
made: ``store_saves.py``; Kafka keeps them in its metadata log), and answers
DescribeClientQuotas filters. The keys are Kafka's: ``producer_byte_rate`` and
``consumer_byte_rate`` (whole bytes per second, enforced here),
``request_percentage`` (a share of a thread's time, in percent, enforced
here), ``controller_mutation_rate`` (partitions created or deleted per
second, ``mutation_quota.py``) and ``connection_creation_rate`` (ip
entities, connections per second, ``connection_quotas.py``).

**Which quota.** For a request of user ``U`` (the principal's name;
``ANONYMOUS`` without a login) and client id ``C``, Kafka's eight levels, the
first entity holding the key wins: ``(U, C)``, ``(U, default C)``, ``(U)``,
``(default U, C)``, ``(default U, default C)``, ``(default U)``, ``(C)``,
``(default C)``; without a client id only ``(U)`` and ``(default U)``, as in
Kafka. Clients that share the winning entity share its measure: a quota on
``(U)`` is for all of U's clients, one on ``(default C)`` for each client id
apart (Kafka's quota metric tags).

**Measure.** Kafka's ``Rate`` over ``quota.window.num`` (11) samples of
``quota.window.size.seconds`` (1 s), plus the one that overlaps their start:
the bytes of every sample with an event in the last 11 s, over the time
since the oldest of them started (at least 10 s; both broker keys as in
Kafka). A request that takes the rate past the quota ``Q`` is throttled for
``(rate - Q) / Q * window`` ms, the time the rate needs to come back to the
quota.

**Enforcement** (``record``, used by Produce and Fetch): Produce records the
size of the request (header and body, as Kafka's ``sizeInBytes``) after its
append (``producer_byte_rate``); Fetch records the size of its answer
(``consumer_byte_rate``; Kafka's ``FetchResponse.sizeOf``: header and body,
records before down-conversion, ``handlers/fetch.py``) and, when that or the
request time throttles, answers without records and takes the size back, as
Kafka does; a fetch never reads more than ``Q * (samples - 1) * window``
bytes of records, so one fetch alone is over only by its header and
partition entries. The answer goes out at once, with
``throttle_time_ms``, and the connection then reads nothing for the throttle
time (KIP-219, ``Connection``), whatever the request's version, as Kafka's
``KafkaApis`` and ``SocketServer`` do: clients of the newer versions wait by
themselves, older ones find their next request held. An answer carries the
longest throttle its request muted the connection for (``carry_throttle``),
the error answer of a handler that failed after recording its throttle too. Metrics per user and
client id are Kafka's ``kafka.server:type=Produce|Fetch,user=,client-id=``
``byte-rate`` and ``throttle-time``.

**Request time** (``request_percentage``, Kafka's ClientRequestQuotaManager):
``dispatch`` records the time the event loop ran each request of the client
(``request_time.TaskTime``: its handler's steps, not its waits) as a
percentage of a second, and after the answer is sent the time spent sending
it, which never throttles that request (Kafka's network-thread time). A
request that takes the rate past the quota is throttled as above, for at most
one window (``quota.window.size.seconds``), and for Produce and Fetch the
longer of this and the byte-rate throttle applies; a throttled Fetch is
answered empty, as Kafka does. WriteTxnMarkers, a cluster action, and a
Produce with ``acks=0`` are exempt (Kafka records their time for no client).
Metrics: ``type=Request`` ``request-time`` and ``throttle-time``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import socket
from pathlib import Path
from typing import Any, Callable, Iterator

from storage import StorageError
from storage.topic_store import atomic_write

from .sampled_stat import KAFKA_METRIC_WINDOWS, PRUNE_EVERY_MS, Samples, prune_idle
from .store_saves import StoreSaves

log = logging.getLogger("minibroker")
FILE_NAME = "__client_quotas.json"
ENFORCED = {"producer_byte_rate": "Produce", "consumer_byte_rate": "Fetch", "request_percentage": "Request",
            "controller_mutation_rate": "ControllerMutation"}  # fmt: skip
_MEASURE_NAMES = {"producer_byte_rate": ("byte_rate", "bytes per second"),
                  "consumer_byte_rate": ("byte_rate", "bytes per second"),
                  "request_percentage": ("request_time", "thread time in percent"),
                  "controller_mutation_rate": ("mutation_rate", "partition mutations per second")}  # fmt: skip
_USER_CLIENT_KEYS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG", "request_percentage": "DOUBLE",
                     "controller_mutation_rate": "DOUBLE"}  # fmt: skip
_IP_KEYS = {"connection_creation_rate": "INT"}
_TYPE_MAX = {"INT": 2**31 - 1, "LONG": 2**63 - 1}
EXEMPT = {27}  # WriteTxnMarkers: a cluster action, measured by Kafka apart and never throttled
Entity = tuple[tuple[str, "str | None"], ...]  # sorted (entity type, name or None for the default)


class QuotaRefused(Exception):
    """An entity or op Kafka refuses: INVALID_REQUEST with this message."""


def entity_of(pairs: list[tuple[str, str | None]]) -> Entity:
    """An entity in canonical form, checked as Kafka's ClientQuotaControlManager.validateEntity does."""
    if not pairs:
        raise QuotaRefused("Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for kind, name in pairs:
        if kind in seen:
            raise QuotaRefused(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in ("user", "client-id", "ip"):
            raise QuotaRefused(f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            raise QuotaRefused(f"Empty {kind} not supported")
        seen[kind] = name
    if "ip" in seen and len(seen) > 1:
        raise QuotaRefused("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
    if seen.get("ip") is not None and not addresses_of(seen["ip"]):
        raise QuotaRefused(f"{seen['ip']} is not a valid IP or resolvable host.")
    return tuple(sorted(seen.items()))


def addresses_of(host: str) -> frozenset[str]:
    """The IP addresses ``host`` names (itself when it is one); empty when it resolves to nothing."""
    try:
        return frozenset({str(ipaddress.ip_address(host))})
    except ValueError:
        pass
    try:
        return frozenset(str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP))
    except OSError:
        return frozenset()


def check_op(entity: Entity, key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue."""
    keys = _IP_KEYS if entity[0][0] == "ip" else _USER_CLIENT_KEYS
    if key not in keys:
        raise QuotaRefused(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaRefused(f"Quota {key} must be greater than 0")
    kind = keys[key]
    if kind in _TYPE_MAX:
        if value > _TYPE_MAX[kind]:
            raise QuotaRefused(f"Proposed value for {key} is too large for {'an INT' if kind == 'INT' else 'a LONG'}.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise QuotaRefused(f"{key} cannot be a fractional value.")


class ClientQuotas:
    """The quotas set, and the measures of the clients they apply to."""

    def __init__(self, path: Path, quotas: dict[Entity, dict[str, float]], samples: int = 11, window_s: int = 1,
                 metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:  # fmt: skip
        self.path = path
        self.quotas = quotas
        self.keys = {key for values in quotas.values() for key in values}  # the quota keys set on any entity
        self.resolved: dict[str, frozenset[str]] = {}  # ip entity names -> their addresses
        self.samples, self.window_ms = samples, window_s * 1000
        self.metric_windows = metric_windows  # the throttle-time averages': metrics.num.samples, ...window.ms
        self.measures: dict[tuple[str, str, str], Samples] = {}  # (key, user tag, client tag) -> bytes
        self.buckets: dict[tuple[str, str, str], Any] = {}  # controller_mutation_rate's token buckets
        self.throttles: dict[tuple[str, str, str], Samples] = {}  # -> throttle times recorded
        self.pruned_ms = 0.0  # when idle measures were last dropped
        self.saves = StoreSaves()  # one change at a time, saved on a worker thread
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each save (on its thread)

    @classmethod
    def load(cls, log_dir: str, samples: int = 11, window_s: int = 1,
             metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> "ClientQuotas":
        path = Path(log_dir) / FILE_NAME
        quotas: dict[Entity, dict[str, float]] = {}
        try:
            for item in json.loads(path.read_text()) if path.exists() else []:
                values = {k: float(v) for k, v in item["quotas"].items()}
                quotas[tuple(sorted((k, v) for k, v in item["entity"]))] = values
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StorageError(f"{path} is damaged ({exc!r}): mend or remove it") from None
        return cls(path, quotas, samples, window_s, metric_windows)

    async def alter(self, changes: list[tuple[Entity, dict[str, float | None]]]) -> None:
        """Apply checked changes (``None``: remove the key): in the store's turn, to the quotas the change
        before left, saved on a worker thread, then made (``StoreSaves``); ``OSError`` if not saved."""
        async with self.saves:
            quotas = self._altered(changes)
            if quotas == self.quotas:  # Kafka writes a ClientQuotaRecord only for a value that changes
                return
            await self.saves.save(self._write, quotas)
            self.quotas = quotas
            self.keys = {key for values in quotas.values() for key in values}

    def _altered(self, changes: list[tuple[Entity, dict[str, float | None]]]) -> dict[Entity, dict[str, float]]:
        quotas = {entity: dict(values) for entity, values in self.quotas.items()}
        for entity, ops in changes:
            values = quotas.setdefault(entity, {})
            for key, value in ops.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            if not values:
                del quotas[entity]
        return quotas

    def _write(self, quotas: dict[Entity, dict[str, float]]) -> None:
        """Save every quota (any thread: it fsyncs), and count the change in the metadata quorum."""
        data = [{"entity": [list(pair) for pair in entity], "quotas": values} for entity, values in sorted(
            quotas.items(), key=lambda item: repr(item[0]))]  # fmt: skip
        atomic_write(self.path, json.dumps(data, indent=1) + "\n")
        self.on_metadata_change()

    # -- enforcement ---------------------------------------------------------------------

    def quota(self, key: str, user: str, client_id: str) -> tuple[float | None, tuple[str, str]]:
        """The quota on ``key`` for this user and client id, and the metric tags of its measure."""
        u, c, du, dc = ("user", user), ("client-id", client_id), ("user", None), ("client-id", None)
        levels = (((c, u), (user, client_id)), ((dc, u), (user, client_id)), ((u,), (user, "")),
                  ((c, du), (user, client_id)), ((dc, du), (user, client_id)), ((du,), (user, "")),
                  ((c,), ("", client_id)), ((dc,), ("", client_id)))  # fmt: skip
        if not client_id:  # Kafka's quotaLimit reads no client-id entity for an empty client id
            levels = (levels[2], levels[5])  # (U), (default U)
        for entity, tags in levels:
            value = self.quotas.get(entity, {}).get(key)
            if value is not None:
                return value, tags
        return None, ("", client_id)

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: float, check: bool = True) -> int:
        """Record ``value`` bytes; the throttle time in ms (0 when within the quota or without one, or not
        ``check``ed). As in Kafka, nothing is measured while no entity has a quota on ``key``."""
        if key not in self.keys:
            return 0
        if now_ms - self.pruned_ms >= PRUNE_EVERY_MS:
            prune_idle(self.measures, now_ms)
            prune_idle(self.throttles, now_ms)
            prune_idle(self.buckets, now_ms)
            self.pruned_ms = now_ms
        quota, tags = self.quota(key, user, client_id)
        measure = self.measures.setdefault((key, *tags), Samples(self.samples, self.window_ms))
        measure.record(value, now_ms)
        if quota is None or not check:
            return 0
        rate = measure.rate(now_ms)
        if rate <= quota:
            return 0
        throttle = round((rate - quota) / quota * measure.window_ms(now_ms))
        if key == "request_percentage":  # Kafka bounds this one throttle by a window
            throttle = min(throttle, self.window_ms)
        self.record_throttle(key, tags, throttle, now_ms)
        return throttle

    def record_throttle(self, key: str, tags: tuple[str, str], ms: float, now_ms: float) -> None:
        """A throttle of ``ms`` on ``key`` for ``tags``: the ``throttle-time`` Avg, on the broker's metric windows
        (Kafka's throttle-time sensors take the broker registry's MetricConfig, not the quota's)."""
        self.throttles.setdefault((key, *tags), Samples(*self.metric_windows)).record(ms, now_ms)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back bytes recorded for an answer that was not sent (a throttled fetch)."""
        _quota, tags = self.quota(key, user, client_id)
        if (key, *tags) in self.measures:
            self.measures[(key, *tags)].record(-value, now_ms)

    def connection_rate(self, ip: str) -> float | None:
        """The ``connection_creation_rate`` quota of an address: its own entity's (a host name set as the
        entity counts for each of its addresses, resolved once), else the default ip entity's."""
        if "connection_creation_rate" not in self.keys:
            return None
        for entity, values in self.quotas.items():
            name = entity[0][1] if entity[0][0] == "ip" else None
            if name is not None and "connection_creation_rate" in values and ip in self._addresses(name):
                return values["connection_creation_rate"]
        return self.quotas.get((("ip", None),), {}).get("connection_creation_rate")

    def _addresses(self, name: str) -> frozenset[str]:
        if name not in self.resolved:
            self.resolved[name] = addresses_of(name)
        return self.resolved[name]

    def fetch_limit(self, user: str, client_id: str) -> int | None:
        """The most one fetch may return and still be within the quota on its own (Kafka's cap)."""
        if "consumer_byte_rate" not in self.keys:
            return None
        quota, _tags = self.quota("consumer_byte_rate", user, client_id)
        return None if quota is None else int(quota * (self.samples - 1) * self.window_ms / 1000)

    # -- describing ----------------------------------------------------------------------

    def metric_samples(self, now_ms: float) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
        """Kafka's ``type=Produce|Fetch|Request|ControllerMutation,user=,client-id=`` gauges: the measure
        (``byte-rate``, ``request-time``, ``mutation-rate``), ``throttle-time``, and the ``tokens`` left."""
        labels = ["user", "client_id"]
        for key, kind in ENFORCED.items():
            rates = [([u, c], s.rate(now_ms)) for (k, u, c), s in list(self.measures.items()) if k == key]
            throttles = [([u, c], s.average(now_ms)) for (k, u, c), s in list(self.throttles.items()) if k == key]
            name, (measure, what) = f"kafka_server_{kind.lower()}", _MEASURE_NAMES[key]
            yield f"{name}_{measure}", f"{kind} {what}, per user and client id", labels, rates
            yield (f"{name}_throttle_time", f"Average {kind} throttle time in ms, per user and client id", labels,
                   throttles)  # fmt: skip
        tokens = [([u, c], bucket.tokens) for (_k, u, c), bucket in list(self.buckets.items())]
        yield ("kafka_server_controllermutation_tokens", "Tokens left in the controller mutation bucket, per user "
               "and client id", labels, tokens)  # fmt: skip


def request_identity(ctx: Any) -> tuple[str, str]:
    """The user (the principal's name) and client id quotas are looked up by."""
    principal = getattr(ctx.connection, "principal", "User:ANONYMOUS")
    return principal.partition(":")[2] or principal, ctx.request.header.client_id or ""


def throttle(ctx: Any, ms: int) -> None:
    """Mute the request's connection for ``ms`` once its answer is out, for every version (the longest wins);
    the request keeps the longest (``carry_throttle``)."""
    ctx.throttle_ms = max(ctx.throttle_ms, ms)
    if ms > (getattr(ctx.connection, "throttle", None) or 0):
        ctx.connection.throttle = ms


def start_request_time(ctx: Any) -> bool:
    """Begin timing this request when some entity has a ``request_percentage`` quota; whether it is timed."""
    timer = ctx.broker.request_time
    timer.sync("request_percentage" in ctx.broker.quotas.keys)
    if timer.installed:
        timer.begin()
    return timer.installed


def apply_request_quota(ctx: Any) -> None:
    """After the handler: the request's time recorded (unless the handler did), and its throttle applied to the
    connection when longer than the byte-rate one (``carry_throttle`` puts it on the answer)."""
    ms = request_time_throttle(ctx)
    ctx.broker.request_time.end()
    ctx.connection.answering = request_identity(ctx)  # its sending is timed too (Connection)
    if ms > 0:
        throttle(ctx, ms)


def carry_throttle(ctx: Any, body: Any) -> None:
    """The answer's ``throttle_time_ms``: at least the longest throttle this request muted its connection for,
    the request quota's or the handler's own (a Fetch or Produce over its byte rate, a mutation quota), also
    when the handler failed after it recorded its throttle and ``body`` is the error answer (Kafka's
    ``handleError`` answers with the throttle it mutes the connection for)."""
    if ctx.throttle_ms > 0 and hasattr(body, "throttle_time_ms"):
        body.throttle_time_ms = max(body.throttle_time_ms or 0, ctx.throttle_ms)


def record_send_time(broker: Any, identity: tuple[str, str], seconds: float) -> None:
    """The time spent sending an answer to ``(user, client id)``, recorded without throttling (Kafka's
    network-thread time)."""
    broker.quotas.record("request_percentage", *identity, seconds * 100, broker.clock(), check=False)


def request_time_throttle(ctx: Any) -> int:
    """Record the time the event loop has run this request so far against the client's
    ``request_percentage`` (once per request); the throttle time in ms."""
    timer = ctx.broker.request_time
    if ctx.request_time_recorded or not timer.installed or ctx.request.header.api_key in EXEMPT:
        return 0
    ctx.request_time_recorded = True
    user, client_id = request_identity(ctx)
    return ctx.broker.quotas.record("request_percentage", user, client_id, timer.elapsed() * 100,
                                    ctx.broker.clock())  # fmt: skip
