"""How far the start's loading of the logs has come, for Kafka's LogManager recovery gauges.

Kafka's ``LogManager.loadLogs`` shows two gauges while it loads the logs at
start, and removes them once every log is loaded:

* ``remainingLogsToRecover{dir}``: the partition directories of that log dir
  not loaded yet (counted before the first is loaded, clean stop or not);
* ``remainingSegmentsToRecover{dir, threadNum}``: for the log a recovery
  thread of that dir is recovering after an unclean stop, its segments from
  the recovery point on not yet rescanned (0 once one of them lost bytes: the
  rest are deleted). A thread that has recovered nothing has no value.

Each log dir has its own pool of ``num.recovery.threads.per.data.dir`` loading
threads, numbered 0 to n-1 in the order they start (``log_opening.py``), so a
dir shows up to n segment counts, each the one of the log that thread is on
(or was on last). The loader reports through ``found`` (before any log loads),
``loaded`` and ``segments_left`` (from the pool threads, each with its own
number) and ``finish``; a scrape reads ``snapshot`` from yet another thread,
hence the lock. After ``finish`` the snapshot is empty.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


class LoadProgress:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs_left: dict[str, int] = {}  # absolute dir -> logs not loaded yet
        self._segments_left: dict[tuple[str, int], int] = {}  # (absolute dir, thread) -> segments left of its log
        self.loading = True

    def found(self, root: Path, count: int) -> None:
        """``count`` logs of ``root`` are to be loaded."""
        with self._lock:
            self._logs_left[os.path.abspath(root)] = count

    def loaded(self, root: Path) -> None:
        """One log of ``root`` is loaded (or failed to load)."""
        key = os.path.abspath(root)
        with self._lock:
            self._logs_left[key] = max(0, self._logs_left.get(key, 0) - 1)

    def segments_left(self, root: Path, thread: int, count: int) -> None:
        """The log that ``root``'s loading thread number ``thread`` recovers has ``count`` segments left to rescan."""
        with self._lock:
            self._segments_left[(os.path.abspath(root), thread)] = count

    def finish(self) -> None:
        """Loading is over: the gauges go."""
        with self._lock:
            self.loading = False
            self._logs_left.clear()
            self._segments_left.clear()

    def snapshot(self) -> tuple[dict[str, int], dict[tuple[str, int], int]]:
        """``({dir: logs left}, {(dir, thread): segments left})``, both empty once loading is over."""
        with self._lock:
            return dict(self._logs_left), dict(self._segments_left)
