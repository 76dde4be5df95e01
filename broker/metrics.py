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
which asks the broker for fresh values instead of caching them. Beside
Kafka's request time summaries (by request name only, as Kafka tags them)
there is one metric of ours, ``minibroker_request_latency_ms{request,version}``:
a Prometheus histogram with buckets, per API and version. The registry also
has prometheus-client's ``process_*`` series (open fds, resident memory, CPU
seconds: what the JMX exporter's javaagent gives a Kafka process and Strimzi's
dashboards chart), and no counter has the ``*_created`` series
prometheus-client adds by default, which the exporter has not.
"""

from __future__ import annotations

import collections
import math
import threading
from typing import Any, Callable, Iterable

from prometheus_client import (CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, disable_created_metrics,
                               start_http_server)  # fmt: skip
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from protocol import ErrorCode

from .lifecycle import BindError
from .login_metrics import LoginMetrics
from .sampled_stat import KAFKA_METRIC_WINDOWS

# The percentiles a Yammer histogram shows over JMX, as the exporter's rules label them (50thPercentile: "0.50")
_QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
_RESERVOIR = 1028  # the sample count of Yammer's reservoirs
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


class KafkaHistogram(Collector):
    """A Kafka (Yammer) histogram as the JMX exporter shows it: ``name{labels,quantile="0.99"}`` for its
    50th to 99.9th percentiles, ``name_count`` and ``name_sum``, as a Prometheus summary.

    Kafka's are biased to recent values (a decaying reservoir of 1028 samples); the percentiles here are
    those of the last 1028 values, interpolated between neighbours as Yammer's snapshots are, and like
    Kafka's they keep their last values while nothing is recorded. Values are whole milliseconds, as
    Kafka rounds them."""

    def __init__(self, name: str, doc: str, labelnames: list[str], registry: CollectorRegistry,
                 lock: Any = None) -> None:  # fmt: skip
        self._name, self._doc, self._labelnames = name, doc, labelnames
        # the scrape runs in prometheus-client's own thread; histograms marked together may share one lock
        self._lock = lock or threading.Lock()
        self._series: dict[tuple[str, ...], list] = {}  # labels -> [count, sum, recent values]
        registry.register(self)

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        with self._lock:
            self.observe_locked(labels, value)

    def observe_locked(self, labels: tuple[str, ...], value: float) -> None:
        """``observe``, for a caller that holds the histogram's lock."""
        rounded = math.floor(value + 0.5)
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = [0, 0, collections.deque(maxlen=_RESERVOIR)]
        series[0] += 1
        series[1] += rounded
        series[2].append(rounded)

    def labels(self, *values: str) -> "_Observer":
        return _Observer(self, tuple(values))

    def collect(self) -> Iterable[Metric]:
        family = Metric(self._name, self._doc, "summary")
        with self._lock:
            snapshot = [(labels, count, total, sorted(values)) for labels, (count, total, values)
                        in self._series.items()]  # fmt: skip
        for labels, count, total, values in snapshot:
            named = dict(zip(self._labelnames, labels))
            for text, q in _QUANTILES:
                family.add_sample(self._name, {**named, "quantile": text}, _percentile(values, q))
            family.add_sample(self._name + "_count", named, count)
            family.add_sample(self._name + "_sum", named, total)
        yield family


class _Observer:
    def __init__(self, histogram: KafkaHistogram, labels: tuple[str, ...]) -> None:
        self._histogram, self._labels = histogram, labels

    def observe(self, value: float) -> None:
        self._histogram.observe(self._labels, value)


def _percentile(values: list[int], q: float) -> float:
    """Yammer's snapshot percentile of sorted ``values``: position q*(n+1), between its two neighbours."""
    if not values:
        return 0.0
    position = q * (len(values) + 1)
    index = int(position)
    if index < 1:
        return float(values[0])
    if index >= len(values):
        return float(values[-1])
    lower, upper = values[index - 1], values[index]
    return lower + (position - index) * (upper - lower)


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
        self._marks: dict[str, _Marks] = {}  # per topic, kept: prometheus-client's ``labels`` is slow per call

    def labels(self, topic: str) -> "_Marks":
        marks = self._marks.get(topic)
        if marks is None:
            marks = self._marks[topic] = _Marks(self._counter.labels(topic), self._all)
        return marks

    def remove(self, topic: str) -> None:
        """Drop ``topic``'s series; a later ``labels(topic)`` starts a new one from zero."""
        self._marks.pop(topic, None)
        self._counter.remove(topic)


class _Marks:
    def __init__(self, topic: Any, all_topics: Any) -> None:
        self._topic, self._all = topic, all_topics

    def inc(self, amount: float = 1) -> None:
        self._topic.inc(amount)
        self._all.inc(amount)


# Kafka's RequestMetrics histograms, by the exporter's name of each (the MBean name lower-cased)
_REQUEST_TIMES = (
    ("requestqueuetimems", "Time a request waited to be handled, ms (no queue here: 0)"),
    ("localtimems", "Time a request took to be handled, ms, its waits not counted"),
    ("remotetimems", "Time a request waited for new data or for the disk (long poll, acks=-1 fsync), ms"),
    ("throttletimems", "Throttle time a response carried, ms"),
    ("responsequeuetimems", "Time a response waited to be sent, ms (no queue here: 0)"),
    ("responsesendtimems", "Time sending a response took, ms"),
    ("totaltimems", "Time from a request's arrival to its response sent, ms"),
)


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

    def __init__(self, metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:
        """``metric_windows``: the broker's ``metrics.num.samples`` and ``metrics.sample.window.ms``, for the
        windowed measures among these (``sampled_stat.metric_windows``)."""
        disable_created_metrics()  # for the whole process: the exporter gives Kafka's counters no ``_created``
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)  # process_open_fds, process_cpu_seconds_total ... (Linux)
        self.http_server: Any = None  # (server, thread) once ``serve_http`` ran
        self.metric_windows = metric_windows
        r = self.registry
        self.requests = Counter(
            "kafka_network_requestmetrics_requests", "Requests handled", ["request", "version"], registry=r
        )
        self.errors = Counter(  # Kafka's ErrorsPerSec: the error codes of every response sent, NONE included
            "kafka_network_requestmetrics_errors", "Error codes in responses", ["request", "error"], registry=r
        )
        self._times_lock = threading.Lock()  # one lock for the seven, marked together per request
        self.times = {  # Kafka's RequestMetrics histograms, tagged by request name only (not version)
            name: KafkaHistogram(f"kafka_network_requestmetrics_{name}", doc, ["request"], r, self._times_lock)
            for name, doc in _REQUEST_TIMES
        }
        # the series marked per request, kept: prometheus-client's ``labels`` is slow per call
        self._request_series: dict[tuple[Any, str, int], Any] = {}  # (metric, name, version) -> its series
        self._error_series: dict[tuple[str, int], Any] = {}  # (api name, error code) -> its errors series
        self.latency = Histogram(  # ours, beside Kafka's: Prometheus buckets, per API and version
            "minibroker_request_latency_ms", "Request to answer sent, ms (Kafka's TotalTimeMs), by API and version",
            ["request", "version"], buckets=_LATENCY_BUCKETS_MS, registry=r)  # fmt: skip
        for attr, name, doc in _TOPIC_COUNTERS:
            counter = Counter(f"kafka_server_brokertopicmetrics_{name}", doc, ["topic"], registry=r)
            setattr(self, attr, TopicCounter(counter))
        self.conversion_time = KafkaHistogram(
            "kafka_network_requestmetrics_messageconversionstimems", "Time spent converting message formats, ms",
            ["request"], r)  # fmt: skip
        self.fetch_read_ahead = Counter(  # ours (broker/read_ahead.py): Kafka has no such MBean
            "minibroker_fetch_conversion_read_ahead", "Fetch v0-v3 down-conversions begun ahead of the "
            "client's next Fetch, by what became of them", ["outcome"], registry=r)  # fmt: skip
        self._add_socket_server_metrics()

    def _add_socket_server_metrics(self) -> None:
        """Kafka's socket-server-metrics: connections, bytes out, logins, per listener. The JMX exporter's
        rule for that MBean type (Strimzi's ``kafka_server_$1_$4``) keeps its hyphens, made underscores:
        ``kafka_server_socket_server_metrics_connection_count``, not ``socketservermetrics``."""
        r = self.registry
        self.connections = Gauge(
            "kafka_server_socket_server_metrics_connection_count", "Open connections", ["listener"], registry=r
        )
        self.connections_created = Counter(
            "kafka_server_socket_server_metrics_connection_creation", "Connections accepted", ["listener"], registry=r
        )
        self.connections_closed = Counter(
            "kafka_server_socket_server_metrics_connection_close", "Connections closed", ["listener"], registry=r
        )
        self.network_bytes_out = Counter(
            "kafka_server_socket_server_metrics_outgoing_byte", "Bytes sent", registry=r
        )
        # successful-/failed-[re]authentication-total and -rate, and the rest
        self.logins = LoginMetrics(r, self.metric_windows)
        totals, outcomes = self.logins.totals, ("successful", "failed")
        self.authentications = {outcome: totals[f"{outcome}_authentication"] for outcome in outcomes}
        self.reauthentications = {outcome: totals[f"{outcome}_reauthentication"] for outcome in outcomes}
        # Kafka's expired-connections-killed-count, a cumulative sum the exporter shows as a gauge (no _total)
        self.expired_connections_killed = Gauge(
            "kafka_server_socket_server_metrics_expired_connections_killed_count",
            "Connections closed on a request after their SASL session expired", ["listener"], registry=r)

    def observe_request(self, names: Iterable[str], version: int, times_ms: dict[str, float]) -> None:
        """One request done: Kafka's ``RequestChannel.updateRequestMetrics`` marks the request's own name
        and, for Fetch, ``FetchConsumer`` or ``FetchFollower`` as well; ``times_ms`` by histogram name."""
        for i, name in enumerate(names):
            if i == 0:
                self._series_of(self.latency, name, version).observe(times_ms["totaltimems"])
            self._series_of(self.requests, name, version).inc()
            with self._times_lock:
                for histogram, ms in times_ms.items():
                    self.times[histogram].observe_locked((name,), ms)

    def _series_of(self, metric: Any, name: str, version: int) -> Any:
        """``metric.labels(name, str(version))``, kept."""
        series = self._request_series.get((metric, name, version))
        if series is None:
            series = self._request_series[(metric, name, version)] = metric.labels(name, str(version))
        return series

    def count_errors(self, api_name: str, counts: dict) -> None:
        """Kafka's ``RequestChannel.updateErrorMetrics``: each error code of a response, as many times as
        the response carries it (``protocol.error_counts``)."""
        for code, n in counts.items():
            series = self._error_series.get((api_name, code))
            if series is None:
                series = self._error_series[(api_name, code)] = self.errors.labels(api_name, _error_name(code))
            series.inc(n)

    def remove_topic(self, topic: str) -> None:
        """Drop a deleted topic's BrokerTopicMetrics series, as Kafka's ``BrokerTopicStats.removeMetrics``
        does once the broker holds no partition of it: they leave the scrape, and a topic made again under
        that name counts from zero."""
        for attr, _name, _doc in _TOPIC_COUNTERS:
            getattr(self, attr).remove(topic)

    def bytes_sent(self, n: int) -> None:
        self.network_bytes_out.inc(n)

    def add_state_collector(self, fn: Callable[[], Any]) -> StateCollector:
        collector = StateCollector(fn)
        self.registry.register(collector)
        return collector

    def serve_http(self, host: str, port: int) -> Any:
        """Start the /metrics endpoint in prometheus-client's own thread; ``BindError`` if it cannot bind."""
        try:
            server, thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            raise BindError("Metrics endpoint", "prometheus.host, prometheus.port", host, port, exc) from None
        self.http_server = server, thread
        return server, thread

    def http_address(self) -> tuple[str, int] | None:
        """The endpoint's bound host and port, if it serves."""
        return None if self.http_server is None else self.http_server[0].server_address[:2]

    def stop_http(self) -> None:
        """Close the /metrics endpoint, if it was started."""
        if self.http_server is not None:
            server, _thread = self.http_server
            self.http_server = None
            server.shutdown()
            server.server_close()
