"""Kafka's Throttler: a byte rate shared by threads doing I/O in the background.

The cleaner shares one among its threads (``log.cleaner.io.max.bytes.per.second``);
moves between log dirs share another (``replica.alter.log.dirs.io.max.bytes.per.second``,
``log_move.py``). Threads report the bytes they read and write; every
``check_interval_ms`` (300) the observed rate since the last check is
compared with the desired rate, and a thread that finds it too high sleeps
for as long as it takes to bring the rate back down. The clock and the sleep
are injected so tests run on a fake clock.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

UNLIMITED = float("inf")


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class Throttler:
    def __init__(self, bytes_per_second: float, *, clock: Callable[[], float] = _monotonic_ms,
                 sleep: Callable[[float], None] = time.sleep, check_interval_ms: float = 300) -> None:  # fmt: skip
        self.rate = bytes_per_second
        self._clock = clock
        self._sleep = sleep
        self._interval = check_interval_ms
        self._lock = threading.Lock()
        self._period_start = clock()
        self._observed = 0.0
        self.slept_ms = 0.0

    def maybe_throttle(self, nbytes: int, sleep: Callable[[float], object] | None = None) -> None:
        """Count ``nbytes``; sleep (with ``sleep``, if given: e.g. a stop event's ``wait``) if over the rate."""
        if self.rate == UNLIMITED or self.rate <= 0:
            return
        with self._lock:
            self._observed += nbytes
            now = self._clock()
            elapsed = now - self._period_start
            if elapsed < self._interval:
                return
            wanted_ms = self._observed * 1000 / self.rate
            pause = wanted_ms - elapsed
            if pause > 0:
                (sleep or self._sleep)(pause / 1000)
                self.slept_ms += pause
            self._period_start = self._clock()
            self._observed = 0.0
