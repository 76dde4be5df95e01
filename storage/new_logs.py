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

The two saves, the new topic before its first log and a growth's partition
count after its last, are ``Save`` steps (``steps.py``) the caller runs,
the broker on a worker thread.

A log that cannot be made (``StorageError``: no space, no descriptors)
undoes the whole change: the logs made so far are closed and removed, then
their directories, the failed one's too, and a pending topic is forgotten
(a save too, ``forget_pending_topic``: one that fails, even for want of
descriptors, fails the metadata dir, as the journal keeps the topic);
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from .errors import NothingWritten, StorageError
from .log_dir_failure import is_disk_failure
from .file_names import partition_dir, remove_dir
from .log import Log
from .steps import Save, Steps
from .topic_store import TopicMeta, write_partition_metadata

if TYPE_CHECKING:
    from .log_manager import LogManager


class NewLogs(Steps):
    """The steps of one topic creation or growth; see the module docstring."""

    def __init__(self, manager: "LogManager", meta: TopicMeta, partitions: Sequence[int], *, new_topic: bool,
                 validate_only: bool = False) -> None:  # fmt: skip
        self.manager, self.meta, self.new_topic = manager, meta, new_topic
        self.num_partitions = max(meta.num_partitions, max(partitions, default=-1) + 1)
        self._partitions = partitions
        self._made: list[Log] = []
        self._tried: list[int] = []
        self._saved = False  # a new topic's first save is done: undoing it is a save too
        self._per_root: Counter[Path] | None = None  # logs per log dir, counted when there is a choice
        super().__init__(self._run(validate_only))

    def _run(self, validate_only: bool) -> Iterator[int | Save]:
        if validate_only:
            return
        try:
            config = self.manager.model.effective(self.meta.overrides)
            if self.new_topic:  # saved first, unseen: a crash from here on is finished at the next start
                self.manager.hold_pending(self.meta)
                yield Save(self.manager.save_topic, self.meta)
                self._saved = True
            for p in self._partitions:
                self._tried.append(p)
                self._made.append(self._make(p, config))
                yield p
            yield from self._finish()
        except GeneratorExit:  # dropped part way (as a crash leaves it): the next start sorts it out
            raise
        except BaseException:
            yield from self._undo()
            raise

    def _make(self, partition: int, config) -> Log:
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
            return Log.open(directory, meta.name, partition, config, manager.clock,
                            producer_id_expiration_ms=manager.producer_id_expiration_ms)  # fmt: skip
        except OSError as exc:  # Kafka's getOrCreateLog: the log dir goes offline
            message = f"creating the log of {meta.name}-{partition} failed: {exc.strerror}"
            if is_disk_failure(exc):
                manager.failures.fail_dir(root, message)
            if isinstance(exc, StorageError) and not isinstance(exc, NothingWritten):
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

    def _finish(self) -> Iterator[Save]:
        manager, meta = self.manager, self.meta
        if not self.new_topic and manager.topics().get(meta.name) is not meta:
            raise StorageError(errno.ENOENT, f"topic {meta.name} was deleted while its partitions were added")
        if not self.new_topic and self.num_partitions > meta.num_partitions:  # a growth's count, saved first
            yield Save(manager.save_topic, attrs.evolve(meta, num_partitions=self.num_partitions))
        config = manager.model.effective(meta.overrides)
        for log_ in self._made:
            log_.config = config
        manager.publish(meta, self._made, self.num_partitions)
        for log_ in self._made:
            manager.moves.preferred.pop((meta.name, log_.partition), None)

    def _undo(self) -> Iterator[Save]:
        """Remove what the steps made; a new topic already saved is forgotten (a save)."""
        for log_ in self._made:
            log_.delete()
        for p in self._tried:
            for root in self.manager.dirs:
                remove_dir(partition_dir(root, self.meta.name, p))
        if self.new_topic:
            self.manager.drop_pending(self.meta)
            if self._saved:
                yield Save(self.manager.forget_pending_topic, self.meta.name)
