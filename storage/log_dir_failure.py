"""Offline log dirs: what Kafka's ``LogDirFailureChannel`` does, for the logs of one broker.

When a log's write, roll, fsync or read fails with an ``OSError`` (disk full,
read-only file system, I/O error), ``Log`` calls its ``on_failure`` hook,
which the manager points at ``LogDirFailures.fail``: the log's whole log dir
goes offline, as Kafka's ``maybeHandleIOException`` decides. Every log in
that dir is marked ``offline`` and refuses appends, reads and flushes with a
``StorageError`` from then on (the broker answers KAFKA_STORAGE_ERROR); it
leaves the group commit, the timed duties, the checkpoints and the clean
stop, so nothing more is written there and no clean-shutdown marker claims
it whole, and its ``.lock`` is released, as Kafka's ``handleLogDirFailure``
destroys that dir's lock. A dir never comes back while the broker runs: the operator frees
the disk or replaces it and restarts, and the start recovers each of its logs
from the last checkpointed recovery point, as Kafka's does.

Why not carry on once space is free? A failed write may have left bytes or
index entries past what the log knows, and after a failed fsync the kernel
may have dropped the dirty pages while a later fsync reports success: an
acknowledgement after that could name data that is not on disk.

One difference from Kafka, on purpose: running out of file descriptors or
memory (EMFILE, ENFILE, ENOMEM: a CreateTopics of thousands of partitions can
do it) says nothing about the disk, so it fails the operation (cut back as
usual) without taking the dir offline; Kafka would take it offline and, with
one dir, halt.

``on_dir_failure(root)`` tells the broker, which stops once no dir is left
online (Kafka's "all log dirs have failed"), or once the first dir fails:
it holds the broker's metadata (topics, cluster id), as Kafka's metadata log
dir (``metadata.log.dir``, by default the first of ``log.dirs``), whose
failure halts a KRaft broker (``ReplicaManager.handleLogDirFailure``); a
save of the topics that fails takes that dir offline too (``LogManager``,
``topic_journal.py``). It may run on a worker thread (a group-commit fsync, a
topic save).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .errors import NOT_THE_DISK

log = logging.getLogger(__name__)


def is_disk_failure(exc: OSError) -> bool:
    """Whether ``exc`` takes a log dir offline: any ``OSError`` but a vanished file or a process limit."""
    return not isinstance(exc, FileNotFoundError) and exc.errno not in NOT_THE_DISK


class LogDirFailures:
    """The offline log dirs of a broker; see the module docstring."""

    def __init__(self, dirs: list[Path], logs: Callable[[], Iterable[Any]],
                 forget: Callable[[Callable[[Any], bool]], None],
                 unlock: Callable[[Path], None] = lambda _root: None) -> None:  # fmt: skip
        self.dirs = dirs
        self._logs = logs
        self._forget = forget  # drops logs from the group commit's dirty set
        self._unlock = unlock  # releases the dir's .lock (dir_locks.py)
        self._lock = threading.Lock()
        self.offline: set[Path] = set()
        self.on_dir_failure: Callable[[Path], None] = lambda _root: None

    def fail(self, log_: Any, exc: BaseException) -> None:
        """``log_`` met ``exc``: take its log dir offline (once), with every log in it."""
        log_.offline = True
        self.fail_dir(log_.dir.parent, f"{log_.name}: {exc}")

    def fail_dir(self, root: Path, why: str) -> None:
        """Take ``root`` offline (once), with every log in it: a log's failure, or a checkpoint's."""
        with self._lock:
            if root in self.offline:
                return
            self.offline.add(root)
        log.error("Error in log dir %s (%s): it is offline until the broker restarts", root, why)
        for other in self._logs():
            if other.dir.parent == root:
                other.offline = True
        self._forget(lambda l: l.offline)
        self._unlock(root)
        self.on_dir_failure(root)

    def is_online(self, root: Path) -> bool:
        return root not in self.offline

    def online_dirs(self) -> list[Path]:
        return [d for d in self.dirs if d not in self.offline]

    @property
    def all_offline(self) -> bool:
        return all(d in self.offline for d in self.dirs)

    @property
    def metadata_offline(self) -> bool:
        """The first dir, which holds the metadata, is offline: the broker cannot go on (see the module)."""
        return bool(self.dirs) and self.dirs[0] in self.offline


@contextlib.contextmanager
def failing_dir(log_: Any) -> Iterator[None]:
    """An ``OSError`` inside goes to ``log_.on_failure`` (its dir goes offline) and on, unless it is no disk
    failure (``is_disk_failure``: a file that vanished under a read, removed by retention, or a process limit)."""
    try:
        yield
    except OSError as exc:
        if is_disk_failure(exc):
            log_.on_failure(log_, exc)
        raise
