"""How much of the time the broker's trio loop waits for I/O: Kafka's idle-percent gauges.

Kafka has a pool of network threads (``Processor``) and one of request
handler threads, and reports how idle each pool is:
``kafka.network:type=Processor,name=IdlePercent,networkProcessor=N`` (a
processor's ``io-wait-ratio``, the share of the metric windows it spent in
its selector's wait, at most 1), ``kafka.network:type=SocketServer,
name=NetworkProcessorAvgIdlePercent`` (their average) and
``kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent``
(a meter of the handlers' idle nanoseconds, whose rates are fractions; the JMX
exporter's rules export its ``MeanRate``, the mean since the start).

Here one trio loop does the network and the handler work on one thread, so
both pools are that loop, and "idle" is the share of wall time it spends
inside its I/O wait (epoll and the like), neither running a task nor
scheduling one. ``LoopIdle`` is a trio instrument that adds up those waits
(``before_io_wait``/``after_io_wait``); every 1/20 of the metric span it
notes (time, total idle) so a scrape can take the share over the last
``metrics.num.samples`` x ``metrics.sample.window.ms`` (Kafka's window for
``io-wait-ratio``) or, younger than that, since the start. The scrape runs in
prometheus-client's thread: the loop publishes its running total and the
start of a wait under way as one tuple, so a reader never sees them torn.

The same two hooks serve the log cleaner: while cleaner threads run,
``gate`` is their ``RequestGate`` (``broker/cleaning.py`` sets and clears
it), told the loop is busy after each wait and idle before each wait that
may sleep (a timeout above 0; a zero timeout is a poll between runnable
tasks). One instrument rather than two, because trio calls every
instrument's hooks on every wait, and this loop waits tens of thousands of
times a second under load.
"""

from __future__ import annotations

import collections
import time
from typing import Iterator, Protocol

import trio

_MARKS_PER_SPAN = 20
NETWORK_PROCESSOR = "0"  # the one loop, as Kafka's first network processor


class _Gate(Protocol):
    def mark_busy(self) -> None: ...
    def mark_idle(self) -> None: ...


class LoopIdle(trio.abc.Instrument):
    """Seconds the trio loop has spent in its I/O wait, with marks for the share over a recent span."""

    def __init__(self, metric_windows: tuple[int, int], clock=time.monotonic) -> None:
        samples, window_ms = metric_windows
        self.span_s = samples * window_ms / 1000
        self._every_s = self.span_s / _MARKS_PER_SPAN
        self._clock = clock
        self.started: float | None = None
        self._state: tuple[float, float | None] = (0.0, None)  # (total idle s, start of the wait under way)
        self._marks: collections.deque[tuple[float, float]] = collections.deque()  # (time, total idle)
        self.gate: _Gate | None = None  # the cleaners' RequestGate while they run

    def start(self) -> None:
        """Count from now (the server installs the instrument as it starts serving)."""
        self.started = now = self._clock()
        self._state = (0.0, None)
        self._marks.clear()
        self._marks.append((now, 0.0))

    def before_io_wait(self, timeout: float) -> None:
        self._state = (self._state[0], self._clock())
        if timeout > 0 and self.gate is not None:
            self.gate.mark_idle()

    def after_io_wait(self, timeout: float) -> None:
        if self.gate is not None:
            self.gate.mark_busy()
        now = self._clock()
        idle, began = self._state
        if began is not None:
            idle += now - began
        self._state = (idle, None)
        if now - self._marks[-1][0] >= self._every_s:
            self._marks.append((now, idle))
            while len(self._marks) > 2 and self._marks[1][0] <= now - self.span_s:
                self._marks.popleft()  # the newest mark at least a span old stays, as the base

    def _idle_now(self, now: float) -> float:
        idle, began = self._state
        return idle + (now - began if began is not None else 0.0)

    def recent_ratio(self) -> float:
        """The share of the last span (or of the time since the start, when shorter) spent waiting for I/O."""
        now = self._clock()
        idle = self._idle_now(now)
        marks = list(self._marks)  # one C-level copy: safe beside the loop's appends
        base_time, base_idle = marks[0]
        for mark_time, mark_idle in marks:
            if mark_time > now - self.span_s:
                break
            base_time, base_idle = mark_time, mark_idle
        return _share(idle - base_idle, now - base_time)

    def mean_ratio(self) -> float:
        """The share of all the time since the start spent waiting for I/O (the meter's MeanRate)."""
        now = self._clock()
        return _share(self._idle_now(now), now - (self.started or now))

    def metric_samples(self) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
        """The three gauges, named as the JMX exporter's Percent rules name Kafka's MBeans (none before start)."""
        if self.started is None:
            return
        recent = self.recent_ratio()
        yield ("kafka_network_processor_idle_percent", "Share of the metric windows the network loop waited "
               "for I/O (0 to 1)", ["networkProcessor"], [([NETWORK_PROCESSOR], recent)])  # fmt: skip
        yield ("kafka_network_socketserver_networkprocessoravgidle_percent", "Average idle share of the "
               "network processors (the one trio loop; 0 to 1)", [], [([], recent)])  # fmt: skip
        yield ("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", "Idle share of the request "
               "handlers since the start (the one trio loop; 0 to 1)", [], [([], self.mean_ratio())])  # fmt: skip


def _share(idle_s: float, elapsed_s: float) -> float:
    if elapsed_s <= 0:
        return 1.0
    return min(max(idle_s / elapsed_s, 0.0), 1.0)
