"""The loading threads of one log dir: Kafka's per-dir pool of ``num.recovery.threads.per.data.dir`` threads.

Kafka's ``LogManager.loadLogs`` gives every log dir a fixed pool of that many
threads, all dirs loading at once, each partition directory one job. Its
threads are named ``log-recovery-<absolute dir>-<n>``, n counting from 0 as
they start, and the recovery gauge ``remainingSegmentsToRecover`` has a
``threadNum`` label of that n. ``RecoveryPool`` is a ``ThreadPoolExecutor``
whose workers take such a name and number as they start; a job asks
``thread_number()`` which one it runs on. Threads start only as jobs need
them, so a dir with fewer logs than threads uses fewer numbers.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_worker = threading.local()  # ``number``: this pool thread's number in its dir


class RecoveryPool(ThreadPoolExecutor):
    def __init__(self, root: Path, threads: int) -> None:
        self.root = os.path.abspath(root)
        self._numbers_lock = threading.Lock()
        self._next_number = 0
        super().__init__(max_workers=threads, initializer=self._name_worker)

    def _name_worker(self) -> None:
        with self._numbers_lock:
            number, self._next_number = self._next_number, self._next_number + 1
        _worker.number = number
        threading.current_thread().name = thread_name(self.root, number)


def thread_name(root: str, number: int) -> str:
    """Kafka's name of a dir's loading thread (``LogManager.logRecoveryThreadName``)."""
    return f"log-recovery-{root}-{number}"


def thread_number() -> int:
    """The number, in its dir, of the pool thread running this job (0 outside a pool)."""
    return getattr(_worker, "number", 0)
