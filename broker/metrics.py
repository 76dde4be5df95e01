"""Prometheus metrics named the way the JMX exporter names Kafka's MBeans.

Dashboards built for Kafka behind the Prometheus JMX exporter (Strimzi's
rules) query names such as ``kafka_server_brokertopicmetrics_messagesin_total
{topic="..."}``; we export the same names from the same events, so those
dashboards work unchanged; a BrokerTopicMetrics meter has a series per topic
and Kafka's all-topics one, ``topic=""`` (``TopicCounter``), which Prometheus
stores as the label-less series the JMX exporter gives for Kafka's MBean
without a topic tag. Each broker has its own ``CollectorRegistry`` (tests
run several brokers in one process). Gauges that reflect state (partition
sizes, cleaner figures) are computed at scrape time by ``StateCollector``,
which asks the broker for fresh values instead of caching them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from protocol import ErrorCode

_LATENCY_BUCKETS_MS = (0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


class StateCollector(Collector):
    """Scrape-time gauges: ``fn()`` returns (name, doc, labels, [(values, number)])."""

    def __init__(self, fn: Callable[[], Iterable[tuple[str, str, list[str], list[tuple[list[str], float]]]]]) -> None:
        self._fn = fn

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for name, doc, labels, samples in self._fn():
            family = GaugeMetricFamily(name, doc, labels=labels)
            for values, number in samples:
                family.add_metric(values, number)
            yield family


# BrokerTopicMetrics counters, labelled by topic: (attribute, MBean name lower-cased, help)
_TOPIC_COUNTERS = (
    ("messages_in", "messagesin", "Records appended"),
    ("bytes_in", "bytesin", "Bytes appended"),
    ("bytes_out", "bytesout", "Bytes fetched"),
    ("bytes_rejected", "bytesrejected", "Bytes rejected"),
    ("total_produce", "totalproducerequests", "Produce partition entries"),
    ("total_fetch", "totalfetchrequests", "Fetch partition entries"),
    ("failed_produce", "failedproducerequests", "Failed produce partition entries"),
    ("failed_fetch", "failedfetchrequests", "Fetch partition entries whose read failed unexpectedly"),
    ("produce_conversions", "producemessageconversions", "Records up-converted"),
    ("fetch_conversions", "fetchmessageconversions", "Records down-converted"),
)


def _error_name(code: int) -> str:
    """Kafka's ``Errors.forCode(code).name()``: a code it does not know is UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR.name


ALL_TOPICS = ""  # Prometheus reads an empty label value as no label: Kafka's all-topics MBean has no topic tag


class TopicCounter:
    """One BrokerTopicMetrics meter: a series per topic and Kafka's all-topics one (``topic=""``), which
    every mark of a topic also moves, which exists from the start (Kafka creates it eagerly) and which a
    topic's deletion leaves alone."""

    def __init__(self, counter: Counter) -> None:
        self._counter = counter
        self._all = counter.labels(ALL_TOPICS)

    def labels(self, topic: str) -> "_Marks":
        return _Marks(self._counter.labels(topic), self._all)

    def remove(self, topic: str) -> None:
        self._counter.remove(topic)


class _Marks:
    def __init__(self, topic: Any, all_topics: Any) -> None:
        self._topic, self._all = topic, all_topics

    def inc(self, amount: float = 1) -> None:
        self._topic.inc(amount)
        self._all.inc(amount)


class BrokerMetrics:
    """The broker's counters and histograms, registered in a private registry."""

    messages_in: TopicCounter
    bytes_in: TopicCounter
    bytes_out: TopicCounter
    bytes_rejected: TopicCounter
    total_produce: TopicCounter
    total_fetch: TopicCounter
    failed_produce: TopicCounter
    failed_fetch: TopicCounter
    produce_conversions: TopicCounter
    fetch_conversions: TopicCounter

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "kafka_network_requestmetrics_requests", "Requests handled", ["request", "version"], registry=r
        )
        self.errors = Counter(  # Kafka's ErrorsPerSec: the error codes of every response sent, NONE included
            "kafka_network_requestmetrics_errors", "Error codes in responses", ["request", "error"], registry=r
        )
        self.total_time = Histogram(
            "kafka_network_requestmetrics_totaltimems",
            "Request handling time in milliseconds",
            ["request", "version"],
            buckets=_LATENCY_BUCKETS_MS,
            registry=r,
        )
        for attr, name, doc in _TOPIC_COUNTERS:
            counter = Counter(f"kafka_server_brokertopicmetrics_{name}", doc, ["topic"], registry=r)
            setattr(self, attr, TopicCounter(counter))
        self.conversion_time = Histogram(
            "kafka_network_requestmetrics_messageconversionstimems",
            "Time spent converting message formats, ms",
            ["request"],
            buckets=_LATENCY_BUCKETS_MS,
            registry=r,
        )
        self.fetch_read_ahead = Counter(  # ours (broker/read_ahead.py): Kafka has no such MBean
            "minibroker_fetch_conversion_read_ahead", "Fetch v0-v3 down-conversions begun ahead of the "
            "client's next Fetch, by what became of them", ["outcome"], registry=r)  # fmt: skip
        self._add_socket_server_metrics()

    def _add_socket_server_metrics(self) -> None:
        """Kafka's socket-server-metrics: connections, bytes out, logins, per listener."""
        r = self.registry
        self.connections = Gauge(
            "kafka_server_socketservermetrics_connection_count", "Open connections", ["listener"], registry=r
        )
        self.connections_created = Counter(
            "kafka_server_socketservermetrics_connection_creation", "Connections accepted", ["listener"], registry=r
        )
        self.connections_closed = Counter(
            "kafka_server_socketservermetrics_connection_close", "Connections closed", ["listener"], registry=r
        )
        self.network_bytes_out = Counter(
            "kafka_server_socketservermetrics_outgoing_byte", "Bytes sent", registry=r
        )
        self.authentications = {  # Kafka's successful-/failed-authentication-total of socket-server-metrics
            outcome: Counter(f"kafka_server_socketservermetrics_{outcome}_authentication", f"SASL logins, {outcome}",
                             ["listener"], registry=r)  # fmt: skip
            for outcome in ("successful", "failed")
        }
        self.reauthentications = {  # successful-/failed-reauthentication-total (KIP-368)
            outcome: Counter(f"kafka_server_socketservermetrics_{outcome}_reauthentication",
                             f"SASL re-authentications, {outcome}", ["listener"], registry=r)  # fmt: skip
            for outcome in ("successful", "failed")
        }
        self.expired_connections_killed = Counter(  # Kafka's expired-connections-killed-count
            "kafka_server_socketservermetrics_expired_connections_killed_count",
            "Connections closed on a request after their SASL session expired", ["listener"], registry=r)

    def observe_request(self, names: Iterable[str], version: int, seconds: float) -> None:
        """One request handled: Kafka's ``RequestChannel.updateRequestMetrics`` marks the request's own
        name and, for Fetch, ``FetchConsumer`` or ``FetchFollower`` as well."""
        for name in names:
            labels = (name, str(version))
            self.requests.labels(*labels).inc()
            self.total_time.labels(*labels).observe(seconds * 1000.0)

    def count_errors(self, api_name: str, counts: dict) -> None:
        """Kafka's ``RequestChannel.updateErrorMetrics``: each error code of a response, as many times as
        the response carries it (``protocol.error_counts``)."""
        for code, n in counts.items():
            self.errors.labels(api_name, _error_name(code)).inc(n)

    def remove_topic(self, topic: str) -> None:
        """Drop a deleted topic's BrokerTopicMetrics series, as Kafka's ``BrokerTopicStats.removeMetrics``
        does once the broker holds no partition of it: they leave the scrape, and a topic made again under
        that name counts from zero."""
        for attr, _name, _doc in _TOPIC_COUNTERS:
            getattr(self, attr).remove(topic)

    def bytes_sent(self, n: int) -> None:
        self.network_bytes_out.inc(n)

    def add_state_collector(self, fn: Callable[[], Any]) -> None:
        self.registry.register(StateCollector(fn))

    def serve_http(self, host: str, port: int) -> Any:
        """Start the /metrics endpoint in prometheus-client's own thread."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        return server, thread
