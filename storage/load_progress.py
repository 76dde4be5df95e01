"""How far the start's loading of the logs has come, for Kafka's LogManager recovery gauges.

Kafka's ``LogManager.loadLogs`` shows two gauges while it loads the logs at
start, and removes them once every log is loaded:

* ``remainingLogsToRecover{dir}``: the partition directories of that log dir
  not loaded yet (counted before the first is loaded, clean stop or not);
* ``remainingSegmentsToRecover{dir, threadNum}``: for the log a recovery
  thread of that dir is recovering after an unclean stop, its segments from
  the recovery point on not yet rescanned (0 once one of them lost bytes: the
  rest are deleted). A thread that has recovered nothing has no value.

Here every log is loaded by one thread, the log dirs one after another, so
each dir has thread 0 only (Kafka with ``num.recovery.threads.per.data.dir``
of 1). The loader (``log_opening.py``) reports through ``found``,
``loaded``, ``segments_left`` and ``finish``; a scrape reads ``snapshot`` from
another thread, hence the lock. After ``finish`` the snapshot is empty.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

THREAD = 0  # the one loading thread of each dir


class LoadProgress:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs_left: dict[str, int] = {}  # absolute dir -> logs not loaded yet
        self._segments_left: dict[str, int] = {}  # absolute dir -> segments left of the log in recovery
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

    def segments_left(self, root: Path, count: int) -> None:
        """The log ``root``'s thread recovers has ``count`` segments left to rescan."""
        with self._lock:
            self._segments_left[os.path.abspath(root)] = count

    def finish(self) -> None:
        """Loading is over: the gauges go."""
        with self._lock:
            self.loading = False
            self._logs_left.clear()
            self._segments_left.clear()

    def snapshot(self) -> tuple[dict[str, int], dict[tuple[str, int], int]]:
        """``({dir: logs left}, {(dir, thread): segments left})``, both empty once loading is over."""
        with self._lock:
            return dict(self._logs_left), {(d, THREAD): n for d, n in self._segments_left.items()}
