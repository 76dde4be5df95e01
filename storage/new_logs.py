"""Making a topic's new logs one step at a time, seen by readers only when all are made.

``NewLogs`` is the iterator behind ``LogManager.create_topic_steps`` and
``add_partitions_steps``: each step makes one partition's directory,
``partition.metadata`` and empty log, so a caller on an event loop can serve
other requests between steps. Nothing of the change is visible until the
last step:

* a new topic is *pending*: it is saved (``topic_journal.py``) at the first
  step (so a crash part way is finished at the next start, which makes the
  missing logs of known topics), but ``topics()`` leaves it out and its logs
  are not registered;
* after the last step the topic (or the higher partition count) and every new
  log appear together, each log with the topic's config as it is then (an
  override altered in between reaches the new logs too).

A log that cannot be made (``StorageError``: no space, no descriptors)
undoes the whole change: the logs made so far are closed and removed, then
their directories, the failed one's too, and a pending topic is forgotten;
a disk failure (not a shortage of descriptors) also takes that log dir
offline (``log_dir_failure.py``, Kafka's getOrCreateLog), and new logs go to
the dirs still online.
``abort()`` does the same for a caller that gives up part way. A growth
whose topic was deleted in between is undone at its last step and raises
``StorageError``.

New directories go to the partition's preferred log dir if AlterReplicaLogDirs
named one before it existed (``LogMoves.preferred``, used up once the change is
published), else to the log dir holding the fewest partitions, counting the
logs this change has made (Kafka's choice; counted only when more than one
log dir is online, so a creation on one log dir makes no pass over the
logs); ``partition.metadata`` is written without an fsync (Kafka flushes it
later too): the topic id lives in the fsynced saved topics, and opening
rewrites a missing or stale copy.
"""

from __future__ import annotations

import errno
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import StorageError
from .log_dir_failure import is_disk_failure
from .file_names import partition_dir, remove_dir
from .log import Log
from .topic_store import TopicMeta, write_partition_metadata

if TYPE_CHECKING:
    from .log_manager import LogManager


class NewLogs:
    """The steps of one topic creation or growth; see the module docstring."""

    def __init__(self, manager: "LogManager", meta: TopicMeta, partitions: Sequence[int], *, new_topic: bool,
                 validate_only: bool = False) -> None:  # fmt: skip
        self.manager, self.meta, self.new_topic = manager, meta, new_topic
        self.num_partitions = max(meta.num_partitions, max(partitions, default=-1) + 1)
        self._todo = iter(partitions)
        self._made: list[Log] = []
        self._tried: list[int] = []
        self._started, self._done = False, validate_only
        self._per_root: Counter[Path] | None = None  # logs per log dir, counted when there is a choice

    def __iter__(self) -> "NewLogs":
        return self

    def __next__(self) -> int:
        if self._done:
            raise StopIteration
        try:
            return self._step()
        except StorageError:
            self.abort()
            raise

    def _step(self) -> int:
        if not self._started:
            self._begin()
        p = next(self._todo, None)
        if p is None:
            self._finish()
            raise StopIteration
        self._tried.append(p)
        self._made.append(self._make(p))
        return p

    def _begin(self) -> None:
        self._started = True
        self._config = self.manager.model.effective(self.meta.overrides)
        if self.new_topic:
            self.manager.hold_pending(self.meta)

    def _make(self, partition: int) -> Log:
        manager, meta = self.manager, self.meta
        root = manager.moves.preferred.get((meta.name, partition))
        online = manager.failures.online_dirs()  # Kafka makes new logs in live log dirs only
        if not online:
            raise StorageError(errno.EIO, f"no log dir is online for {meta.name}-{partition}")
        root = root if root in online else self._least_used(online)
        if self._per_root is not None:
            self._per_root[root] += 1
        directory = partition_dir(root, meta.name, partition)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            write_partition_metadata(directory, meta.topic_id)
            return Log.open(directory, meta.name, partition, self._config, manager.clock,
                            producer_id_expiration_ms=manager.producer_id_expiration_ms)  # fmt: skip
        except OSError as exc:  # Kafka's getOrCreateLog: the log dir goes offline
            message = f"creating the log of {meta.name}-{partition} failed: {exc.strerror}"
            if is_disk_failure(exc):
                manager.failures.fail_dir(root, message)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(exc.errno, message) from exc

    def _least_used(self, online: list[Path]) -> Path:
        """The online log dir holding the fewest partitions; with one dir online, no pass over the logs."""
        if len(online) == 1:
            return online[0]
        if self._per_root is None:
            self._per_root = Counter({root: 0 for root in self.manager.dirs})
            self._per_root.update(log_.dir.parent for log_ in [*self.manager.logs(), *self._made])
        return min(online, key=lambda r: self._per_root[r])

    def _finish(self) -> None:
        manager, meta = self.manager, self.meta
        if not self.new_topic and manager.topics().get(meta.name) is not meta:
            raise StorageError(errno.ENOENT, f"topic {meta.name} was deleted while its partitions were added")
        config = manager.model.effective(meta.overrides)
        for log_ in self._made:
            log_.config = config
        manager.publish(meta, self._made, self.num_partitions)
        for log_ in self._made:
            manager.moves.preferred.pop((meta.name, log_.partition), None)
        self._done = True

    def abort(self) -> None:
        """Undo what the steps so far made (nothing once the change is published)."""
        if self._done:
            return
        self._done = True
        for log_ in self._made:
            log_.delete()
        for p in self._tried:
            for root in self.manager.dirs:
                remove_dir(partition_dir(root, self.meta.name, p))
        if self.new_topic and self._started:
            self.manager.drop_pending(self.meta)
