"""The login metrics of Kafka's socket-server-metrics, per listener: totals, rates, re-authentication latency.

Kafka's Selector records every login that ends in a Meter of its own:
``successful-authentication``, ``failed-authentication``,
``successful-reauthentication`` and ``failed-reauthentication`` (a login
is a re-authentication once the connection has logged in before). A Meter
is two attributes: ``<name>-total``, a cumulative count, which we keep as the
Prometheus counter ``kafka_server_socket_server_metrics_<name>_total``, and
``<name>-rate``, events per second over the broker's ``metrics.num.samples``
windows of ``metrics.sample.window.ms`` (2 of 30 s by default), as Kafka's Rate computes
it (``sampled_stat.Samples``), exported at scrape time as the gauge
``..._<name>_rate``. Names are those the Prometheus JMX exporter gives the
MBean ``kafka.server:type=socket-server-metrics,listener=...``: the type's
hyphens dropped, the attribute's turned to underscores, the listener a label.

Two more, from the same place in Kafka:

* ``successful-authentication-no-reauth-total`` counts the first logins of
  connections whose client never showed it can re-authenticate. Only
  SaslAuthenticate v1 or later shows it, so this counts every login of a
  SaslHandshake v0 or SaslAuthenticate v0 client, and every TLS handshake on
  an SSL listener (Kafka's SSL authenticator never claims the support),
  whatever ``connections.max.reauth.ms`` is. Re-authentications are not
  counted here.
* ``reauthentication-latency-max`` and ``-avg``: each successful
  re-authentication's time from the SaslHandshake that began it to its end,
  in whole ms (at least 1 when not 0), as Kafka's Max and Avg over the same
  windows; NaN when none was recorded in them, as Kafka reads.

A listener's series appear with its first login, as the counters' do.
"""

from __future__ import annotations

from typing import Iterator

from prometheus_client import CollectorRegistry, Counter

from .sampled_stat import KAFKA_METRIC_WINDOWS, Samples

PREFIX = "kafka_server_socket_server_metrics_"
METERS = ("successful_authentication", "failed_authentication", "successful_reauthentication",
          "failed_reauthentication")  # fmt: skip
_DOCS = {"successful_authentication": "Connections with successful authentication",
         "failed_authentication": "Connections with failed authentication",
         "successful_reauthentication": "Successful re-authentications of connections",
         "failed_reauthentication": "Failed re-authentications of connections"}  # fmt: skip
Sample = tuple[str, str, list[str], list[tuple[list[str], float]]]


class LoginMetrics:
    """The counters (in ``registry``) and the windowed measures of the logins of every listener, over
    ``windows`` (``sampled_stat.metric_windows``)."""

    def __init__(self, registry: CollectorRegistry, windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:
        self.windows = windows
        self.totals = {name: Counter(PREFIX + name, _DOCS[name] + ", in total", ["listener"], registry=registry)
                       for name in METERS}  # fmt: skip
        self.no_reauth = Counter(PREFIX + "successful_authentication_no_reauth", "Connections with successful "
                                 "authentication whose client does not support re-authentication", ["listener"],
                                 registry=registry)  # fmt: skip
        self.rates: dict[tuple[str, str], Samples] = {}
        self.latency: dict[str, Samples] = {}

    def record(self, listener: str, name: str, now_ms: int, *, no_reauth: bool = False,
               latency_ms: int | None = None) -> None:  # fmt: skip
        """One login that ended: ``name`` is one of ``METERS``; ``no_reauth`` for a first login of a client
        that cannot re-authenticate; ``latency_ms`` for a successful re-authentication."""
        if listener not in self.latency:  # every series of the listener, from its first login
            self.latency[listener] = Samples(*self.windows)
            self.rates.update({(listener, meter): Samples(*self.windows) for meter in METERS})
            for counter in (*self.totals.values(), self.no_reauth):
                counter.labels(listener)
        self.totals[name].labels(listener).inc()
        if no_reauth:
            self.no_reauth.labels(listener).inc()
        self.rates[(listener, name)].record(1.0, now_ms)
        if latency_ms is not None:
            self.latency[listener].record(float(latency_ms), now_ms)

    def metric_samples(self, now_ms: int) -> Iterator[Sample]:
        """The rates and latencies at ``now_ms``, for ``BrokerMetrics.add_state_collector``."""
        listeners = sorted(self.latency)
        for name in METERS:
            yield (PREFIX + name + "_rate", _DOCS[name] + ", per second", ["listener"],
                   [([lst], self.rates[(lst, name)].rate(now_ms)) for lst in listeners])  # fmt: skip
        yield (PREFIX + "reauthentication_latency_max", "Longest re-authentication in the windows, ms",
               ["listener"], [([lst], self.latency[lst].maximum(now_ms)) for lst in listeners])  # fmt: skip
        yield (PREFIX + "reauthentication_latency_avg", "Mean re-authentication time in the windows, ms",
               ["listener"], [([lst], self.latency[lst].average(now_ms)) for lst in listeners])  # fmt: skip
