"""Connection limits, as Kafka's ``ConnectionQuotas`` applies them when it accepts a connection.

* ``max.connections`` (broker-wide) and ``listener.name.<listener>.max.connections``:
  when a limit is reached the listener stops accepting (new connections wait
  in the kernel's backlog) until a connection closes. The inter-broker
  listener (``inter.broker.listener.name``, else the listener named after
  ``security.inter.broker.protocol``, PLAINTEXT by default:
  ``listeners.inter_broker_listener_name``), when there are several
  listeners, is exempt from the broker-wide limit, as in Kafka.
* ``max.connections.per.ip``, with ``max.connections.per.ip.overrides``
  (``host:count,...``, hosts resolved at startup): a connection past its
  address's limit is accepted and closed at once, and logged.
* ``max.connection.creation.rate`` (broker-wide, the inter-broker listener
  exempt) and ``listener.name.<listener>.max.connection.creation.rate``: new
  connections per second, measured as the client quotas are (Kafka's
  ``Rate`` over ``quota.window.num`` samples); a connection that takes the
  rate past a limit waits, and the listener accepts nothing meanwhile, for
  the time the rate needs to come back (at most one window), as Kafka's
  acceptor does.
* The ``connection_creation_rate`` quota of an ``ip`` entity (the address
  itself, else the default ``ip``; AlterClientQuotas): a connection that
  takes its address past it is not served, not counted, and closed after
  that time.
* The waits are Kafka's ``connection-accept-throttle-time`` and
  ``ip-connection-accept-throttle-time`` per listener
  (``kafka_server_socket_server_metrics_..._throttle_time``).
* Every connection made and closed is counted per listener:
  ``kafka_server_socket_server_metrics_connection_creation_total`` and
  ``..._connection_close_total`` (Kafka's socket-server-metrics
  ``connection-creation-total`` / ``connection-close-total``).

The limits may change at runtime (dynamic broker configs: ``reconfigure``).
``ConnectionQuotas`` is used from the event loop's thread only.
"""

from __future__ import annotations

import socket
from typing import Any

import trio

from .config import ConfigError
from .listeners import inter_broker_listener_name
from .sampled_stat import PRUNE_EVERY_MS, Samples, metric_windows, prune_idle

UNLIMITED = 2**31 - 1


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, each host resolved to its addresses."""
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ConfigError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        try:
            infos = socket.getaddrinfo(host.strip("[] "), None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r} ({exc})") from None
        for info in infos:
            result[str(info[4][0])] = int(count)
    return result


def ip_limits(config: Any) -> dict[str, int]:
    """The per-address overrides of ``config``; ``ConfigError`` if its per-IP limits let no one in."""
    overrides = parse_ip_overrides(config.max_connections_per_ip_overrides)
    if config.max_connections_per_ip == 0 and not overrides:
        raise ConfigError("requirement failed: max.connections.per.ip can be set to zero only if "
                          "max.connections.per.ip.overrides property is set.", "max.connections.per.ip")  # fmt: skip
    return overrides


def _over(samples: Samples, limit: float, now_ms: float, window_ms: int) -> int:
    """Record one connection; the wait that brings the rate back to ``limit``, at most one window (Kafka's
    bounded throttle time), or 0."""
    samples.record(1, now_ms)
    rate = samples.rate(now_ms)
    if rate <= limit:
        return 0
    return min(round((rate - limit) / limit * samples.window_ms(now_ms)) if limit else window_ms, window_ms)


class ConnectionQuotas:
    def __init__(self, config: Any, listeners: list[str]) -> None:
        self.total = 0
        self.per_listener = dict.fromkeys(listeners, 0)
        self.per_ip: dict[str, int] = {}
        self.rates: dict[Any, Samples] = {}  # None: broker-wide; a listener's name; ("ip", address)
        self.throttle_times: dict[Any, Samples] = {}  # a listener's name, ("ip", listener): waits recorded
        self.pruned_ms = 0.0
        self.metric_windows = metric_windows(config)  # the throttle-time averages' (not dynamic in Kafka)
        self.set_limits(config)
        inter = inter_broker_listener_name(config)
        self.protected = inter if inter in self.per_listener and len(listeners) > 1 else None
        self._changed = trio.Condition()

    def set_limits(self, config: Any) -> None:
        """Take the limits from ``config``; ``ConfigError`` (and nothing changed) if they are not valid."""
        self.ip_overrides = ip_limits(config)
        self.max_total, self.max_ip = config.max_connections, config.max_connections_per_ip
        self.max_listener = self._per_listener(config, "max.connections")
        self.max_rate = {None: config.max_connection_creation_rate,
                         **self._per_listener(config, "max.connection.creation.rate")}  # fmt: skip
        self.windows = (getattr(config, "quota_window_num", 11), getattr(config, "quota_window_size_seconds", 1) * 1000)

    def _per_listener(self, config: Any, key: str) -> dict[str, int]:
        return {name: int(config.listener_overrides.get(f"listener.name.{name.lower()}.{key}", UNLIMITED))
                for name in self.per_listener}  # fmt: skip

    def accept_throttle(self, listener: str, now_ms: float) -> int:
        """Count a new connection in the creation rates (the broker's, unless the listener is the protected
        inter-broker one, and the listener's); how long accepting must wait, in ms (Kafka's acceptor)."""
        throttle = 0 if listener == self.protected else self._record(None, now_ms)
        throttle = max(throttle, self._record(listener, now_ms))
        if throttle:
            self.throttle_times.setdefault(listener, Samples(*self.metric_windows)).record(throttle, now_ms)
        return throttle

    def ip_throttle(self, listener: str, ip: str, limit: float | None, now_ms: float) -> int:
        """Count a connection from ``ip`` against its ``connection_creation_rate`` quota ``limit``; over it,
        take the connection back out of every rate and return how long to wait before closing it."""
        if limit is None:
            return 0
        if now_ms - self.pruned_ms >= PRUNE_EVERY_MS:  # addresses that came and went
            prune_idle(self.rates, now_ms)
            self.pruned_ms = now_ms
        samples = self.rates.setdefault(("ip", ip), Samples(*self.windows))
        throttle = _over(samples, limit, now_ms, self.windows[1])
        if throttle:
            for key in [("ip", ip), listener] + ([None] if listener != self.protected else []):
                if key in self.rates:
                    self.rates[key].record(-1, now_ms)
            waits = self.throttle_times.setdefault(("ip", listener), Samples(*self.metric_windows))
            waits.record(throttle, now_ms)
        return throttle

    def metric_samples(self, now_ms: float):
        """Kafka's socket-server-metrics ``connection-accept-throttle-time`` and
        ``ip-connection-accept-throttle-time`` per listener: the average throttle, in ms, over the broker's
        metric windows (``metrics.num.samples`` of ``metrics.sample.window.ms``), not the quota's."""
        name = "kafka_server_socket_server_metrics_"
        times = list(self.throttle_times.items())
        yield (name + "connection_accept_throttle_time", "Average wait of accepts past a connection creation rate",
               ["listener"], [([k], s.average(now_ms)) for k, s in times if isinstance(k, str)])  # fmt: skip
        yield (name + "ip_connection_accept_throttle_time", "Average wait before closing a connection past its "
               "address's connection_creation_rate", ["listener"],
               [([k[1]], s.average(now_ms)) for k, s in times if isinstance(k, tuple)])  # fmt: skip

    def _record(self, key: str | None, now_ms: float) -> int:
        limit = self.max_rate[key]
        if limit >= UNLIMITED:
            return 0
        return _over(self.rates.setdefault(key, Samples(*self.windows)), limit, now_ms, self.windows[1])

    async def reconfigure(self, config: Any) -> None:
        """New limits at runtime (dynamic broker configs): a listener held at a limit that was raised
        accepts again at once; a lowered limit closes no connection that is open."""
        self.set_limits(config)
        async with self._changed:
            self._changed.notify_all()

    def slot_available(self, listener: str) -> bool:
        if self.per_listener[listener] >= self.max_listener[listener]:
            return False
        return listener == self.protected or self.total < self.max_total

    async def wait_for_slot(self, listener: str) -> None:
        """Return when ``listener`` may accept one more connection."""
        async with self._changed:
            while not self.slot_available(listener):
                await self._changed.wait()

    def admit(self, listener: str, ip: str) -> int | None:
        """Count a new connection; the per-IP limit it breaks (it must be closed then, and released), or None."""
        self.total += 1
        self.per_listener[listener] += 1
        count = self.per_ip.get(ip, 0)
        self.per_ip[ip] = count + 1
        limit = self.ip_overrides.get(ip, self.max_ip)
        return limit if count >= limit else None

    async def release(self, listener: str, ip: str) -> None:
        self.total -= 1
        self.per_listener[listener] -= 1
        left = self.per_ip[ip] - 1
        if left:
            self.per_ip[ip] = left
        else:
            del self.per_ip[ip]
        async with self._changed:
            self._changed.notify_all()
