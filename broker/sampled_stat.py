"""Kafka's sampled statistics (``org.apache.kafka.common.metrics.stats.SampledStat``) for quotas and meters.

``Samples`` keeps values in a ring of ``count + 1`` samples of ``window_ms``
each: ``record`` adds to the current sample and starts the next one in the
ring once the current has lasted a window. A sample with no event for
``count`` windows starts over, empty, when measured (Kafka's
``purgeObsoleteSamples``). ``rate`` is the sum over the time since the oldest
sample began, taken as at least ``count - 1`` whole windows and 1 ms (Kafka's
``Rate.windowSize``); ``average`` and ``maximum`` are Kafka's ``Avg`` and
``Max``. Client quotas use ``quota.window.num`` samples of
``quota.window.size.seconds``; the broker's other meters (login rates, the
authorizer's and the metadata log's rates, throttle-time averages) use the
broker's metric config, ``metrics.num.samples`` samples of
``metrics.sample.window.ms`` (``metric_windows``; Kafka's defaults are
``KAFKA_METRIC_WINDOWS``), as every Kafka sensor that sets no config of its
own does. Each owner is handed the pair when it is built: several brokers may
run in one process. ``prune_idle`` drops the measures of clients that went
quiet, as Kafka expires idle sensors.

Every method takes the instance's lock, as Kafka's ``Sensor.record`` and
``KafkaMetric.metricValue`` take the sensor's: some measures are recorded
from worker threads (the metadata log's records appended, counted by the
thread that saved the change: ``metadata_quorum.py``), and every one is
read by the metrics endpoint's threads (prometheus-client serves each scrape
on a thread of its own), while reading purges and starts samples too. So a
reader never meets a sample half started (the ring's index moved on, its
sample not yet there) nor a value half added, and two never reset one sample.
"""

from __future__ import annotations

import math
import threading
from typing import Any

KAFKA_METRIC_WINDOWS = (2, 30_000)  # the defaults of Kafka's metrics.num.samples and metrics.sample.window.ms


def metric_windows(config: Any) -> tuple[int, int]:
    """``(metrics.num.samples, metrics.sample.window.ms)`` of ``config`` (Kafka's ``Server.buildMetricsConfig``:
    the broker registry's MetricConfig)."""
    return config.metrics_num_samples, config.metrics_sample_window_ms


class Samples:
    """Kafka's SampledStat under its Rate: values summed per ``window_ms`` sample in a ring of ``count + 1`` (one
    overlaps the start of the span measured); a sample with no event in ``count`` windows starts over, empty,
    when measured (purgeObsoleteSamples); the rate is the sum over the time since the oldest sample began.
    Recorded and measured under one lock (see the module docstring)."""

    def __init__(self, count: int = 11, window_ms: int = 1000) -> None:
        self.count, self.window = count, window_ms  # Kafka's quota.window.num, quota.window.size.seconds
        self.samples: list[list[float]] = []  # the ring: [start ms, sum, events, last event ms, max]
        self.current = 0  # the ring's sample being filled
        self._lock = threading.Lock()  # Kafka's sensor lock: record and measure never interleave

    def record(self, value: float, now_ms: float) -> None:
        with self._lock:
            sample = self._current(now_ms)
            if now_ms - sample[0] >= self.window:  # complete: the next one in the ring starts now
                self.current = (self.current + 1) % (self.count + 1)
                if self.current == len(self.samples):
                    self.samples.append([now_ms, 0.0, 0, now_ms, -math.inf])
                else:
                    self.samples[self.current][:] = [now_ms, 0.0, 0, now_ms, -math.inf]
                sample = self.samples[self.current]
            sample[1] += value
            sample[2] += 1
            sample[3] = now_ms
            sample[4] = max(sample[4], value)

    def _current(self, now_ms: float) -> list[float]:
        self.samples = self.samples or [[now_ms, 0.0, 0, now_ms, -math.inf]]
        return self.samples[self.current]

    def _purge(self, now_ms: float) -> None:
        for sample in self.samples:
            if now_ms - sample[3] >= self.count * self.window:
                sample[:] = [now_ms, 0.0, 0, now_ms, -math.inf]

    def _live(self, now_ms: float) -> list[list[float]]:
        """Under the lock: the samples gone quiet started over (``_purge``), the ring begun if empty."""
        self._purge(now_ms)
        self._current(now_ms)
        return self.samples

    def window_ms(self, now_ms: float) -> float:
        """Kafka's Rate.windowSize: the time since the oldest sample started, at least ``count - 1`` whole
        windows and 1 ms."""
        with self._lock:
            return self._window_ms(self._live(now_ms), now_ms)

    def _window_ms(self, samples: list[list[float]], now_ms: float) -> float:
        elapsed = now_ms - min(sample[0] for sample in samples)
        full = elapsed // self.window
        return max(elapsed + max(self.count - 1 - full, 0) * self.window, 1)

    def rate(self, now_ms: float, unit_ms: float = 1000) -> float:
        """Per second (per ``unit_ms``: 60000 is Kafka's ``Rate(TimeUnit.MINUTES)``)."""
        with self._lock:
            samples = self._live(now_ms)
            return sum(sample[1] for sample in samples) / (self._window_ms(samples, now_ms) / unit_ms)

    def start_if_idle(self, now_ms: float) -> None:
        """Samples gone quiet start over now, and a measure never recorded gets its first sample now (Kafka's
        ``oldest``): what is recorded within the window after goes into it."""
        with self._lock:
            self._live(now_ms)

    def idle(self, now_ms: float) -> bool:
        """Nothing recorded within the samples' span: the measure reads 0 and can be dropped."""
        with self._lock:
            self._purge(now_ms)
            return not any(sample[2] for sample in self.samples)

    def average(self, now_ms: float) -> float:
        """Kafka's Avg: the mean of the values recorded in the live samples, NaN when there is none."""
        with self._lock:
            self._purge(now_ms)
            count = sum(sample[2] for sample in self.samples)
            return sum(sample[1] for sample in self.samples) / count if count else math.nan

    def maximum(self, now_ms: float) -> float:
        """Kafka's Max: the largest value recorded in the live samples, NaN when there is none."""
        with self._lock:
            self._purge(now_ms)
            return max((s[4] for s in self.samples if s[2]), default=math.nan)


PRUNE_EVERY_MS = 60_000


def prune_idle(table: dict, now_ms: float) -> None:
    """Drop the entries of ``table`` that are ``idle`` (measures with nothing recorded in their span, token
    buckets back at their burst; Kafka expires idle quota sensors too), so clients that came and went do not
    pile up."""
    for key in [k for k, samples in table.items() if samples.idle(now_ms)]:
        del table[key]
