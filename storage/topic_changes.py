"""The topic changes of a ``LogManager``: each saved first (``topic_journal.py``), then made in memory.

Every change is a ``Steps`` (``steps.py``) whose saves the caller runs: the
broker on a worker thread, one change at a time between a save and what
follows it; the plain methods (``create_topic``, ``add_partitions``,
``set_topic_overrides``, ``delete_topic``) run them in line.

* creation and growth: ``NewLogs`` (``new_logs.py``): a new topic is saved
  (pending, unseen) before its first log is made, a growth's partition count
  once its last log is made, and only then does either appear;
* configs (``overrides_steps``): the topic with its new overrides is saved,
  then the overrides reach the topic and its logs;
* deletion (``deletion_steps``): the topic is forgotten (saved), then it and
  its logs go at once (``-delete`` directories, Kafka's asyncDelete); the
  checkpoints without it are a second save, whose failure is only logged.

A save that fails takes the first log dir (the metadata's) offline and raises
``MetadataDirFailed``; with that dir offline no change is saved (``_saved``):
the broker stops, as Kafka halts when its metadata log cannot be written.
One out of descriptors or memory before it wrote anything is
``NothingWritten`` instead: refused (KAFKA_STORAGE_ERROR), the dir stays
online; but not the undo of a creation whose pending topic is saved
(``forget_pending_topic``): the journal keeps that topic, so it fails the
dir. A save that fails changes nothing in memory.
"""

from __future__ import annotations

import errno
import logging
from typing import Any, Callable, Iterator
from uuid import uuid4

import attrs

from .config_values import warn_ignored_format
from .errors import MetadataDirFailed, NothingWritten, SaveInDoubt, StorageError
from .log import Log
from .new_logs import NewLogs
from .steps import Save, Steps
from .topic_journal import TopicJournal
from .topic_store import TopicMeta

log = logging.getLogger(__name__)


class TopicChanges:
    """The topic changes of ``LogManager`` (a mixin: its state is the manager's)."""

    def _open_store(self) -> None:
        """The saved topics (``topic_journal.py``); a journal that cannot be folded at the start is a failure
        of the metadata log dir, which stops the start (``LogDirsFailed``)."""
        try:
            self._store, self._topics = TopicJournal.open(self.dirs[0])
        except OSError as exc:
            if isinstance(exc, StorageError) and not isinstance(exc, SaveInDoubt):  # damaged files: the start
                raise  # stops, naming them (a fold whose directory fsync failed is a disk failure, not damage)
            self.failures.fail_dir(self.dirs[0], f"folding the topic metadata journal failed: {exc}")
            self._check_dirs_left("all log dirs in {dirs} have failed")

    def save_topic(self, meta: TopicMeta) -> None:
        """Save a topic made, grown or reconfigured, durably (one journal line): a ``Save`` of a change."""
        self._saved(self._store.put, meta)

    def forget_topic(self, name: str) -> None:
        """Save that ``name`` is deleted: a ``Save`` of a change."""
        self._saved(self._store.delete, name)

    def forget_pending_topic(self, name: str) -> None:
        """Save that a creation whose pending topic was saved is undone: the journal holds the topic, so even
        a save that wrote nothing (``NothingWritten``) fails the metadata dir, as the next start would
        finish the creation a refusal had denied."""
        self._saved(self._store.delete, name, refusable=False)

    def _saved(self, change: Callable[[Any], None], arg: Any, refusable: bool = True) -> None:
        """A change saved, or ``MetadataDirFailed``: a save that fails takes the metadata log dir (the first)
        offline, which stops the broker, as Kafka halts when its metadata log cannot be written
        (``topic_journal.py``); with that dir offline nothing more is saved. ``refusable``: the save is a
        change's first, so ``NothingWritten`` leaves the files as they were before the change."""
        if self.failures.metadata_offline:
            raise MetadataDirFailed(errno.EIO, f"the metadata log dir {self.dirs[0]} is offline: topics are not saved")
        try:
            change(arg)
        except OSError as exc:
            if refusable and isinstance(exc, NothingWritten):  # refused (KAFKA_STORAGE_ERROR): files as they were
                raise
            why = f"saving the topics failed: {exc.strerror or exc}"
            self.failures.fail_dir(self.dirs[0], why)
            raise MetadataDirFailed(exc.errno or errno.EIO, why) from exc
        self.on_metadata_change()
        if self._store.wants_fold:
            try:
                self._store.fold()
            except NothingWritten as exc:  # the journal keeps every change: the next change folds it
                log.warning("Folding the topic metadata journal is put off: %s", exc)
            except OSError as exc:  # the change is saved: answered; the broker stops
                self.failures.fail_dir(self.dirs[0], f"folding the topic metadata journal failed: {exc}")

    # -- creation and growth (new_logs.py) ---------------------------------------------

    def create_topic(self, name: str, num_partitions: int, overrides: dict[str, str], *,
                     validate_only: bool = False) -> TopicMeta:  # fmt: skip
        steps = self.create_topic_steps(name, num_partitions, overrides, validate_only=validate_only)
        for _partition in steps:
            pass
        return steps.meta

    def create_topic_steps(self, name: str, num_partitions: int, overrides: dict[str, str], *,
                           validate_only: bool = False) -> NewLogs:  # fmt: skip
        """``create_topic`` one partition at a time: iterate it, and each step makes one log. The topic
        and its logs appear together after the last step (``new_logs.py``); a crash part way is
        finished at the next start; a failure removes everything the steps made."""
        if name in self._topics or name in self._pending:
            raise ValueError(f"topic {name} already exists")
        overrides = {k: str(v) for k, v in overrides.items()}
        self.model.validate_overrides(overrides)
        if not validate_only:
            warn_ignored_format(overrides.get("message.format.version"), name)
        meta = TopicMeta(name, uuid4(), num_partitions, overrides)
        return NewLogs(self, meta, range(num_partitions), new_topic=True, validate_only=validate_only)

    def add_partitions_steps(self, name: str, new_total: int) -> NewLogs:
        """``add_partitions`` one partition at a time, as ``create_topic_steps``."""
        meta = self._topics[name]
        if new_total <= meta.num_partitions:
            raise ValueError(f"{name} already has {meta.num_partitions} partitions")
        return NewLogs(self, meta, range(meta.num_partitions, new_total), new_topic=False)

    def add_partitions(self, name: str, new_total: int) -> None:
        """Grow ``name`` to ``new_total`` partitions; all or none (StorageError when one cannot be created)."""
        for _partition in self.add_partitions_steps(name, new_total):
            pass

    def hold_pending(self, meta: TopicMeta) -> None:
        """A creation's first step: the topic is being made (its name taken), unseen until ``publish``."""
        self._pending[meta.name] = meta

    def drop_pending(self, meta: TopicMeta) -> None:
        """An undone creation: the name is free again (its forgetting is a save of its own)."""
        if self._pending.get(meta.name) is meta:
            del self._pending[meta.name]

    def publish(self, meta: TopicMeta, logs: list[Log], num_partitions: int) -> None:
        """A creation's or growth's last step, once saved: the topic, its partition count and new logs appear
        at once."""
        meta.num_partitions = num_partitions
        self._pending.pop(meta.name, None)
        self._topics[meta.name] = meta
        for log_ in logs:
            self._register(log_)

    # -- configs and deletion -----------------------------------------------------------

    def set_topic_overrides(self, name: str, overrides: dict[str, str]) -> None:
        for _step in self.overrides_steps(name, overrides):
            pass

    def overrides_steps(self, name: str, overrides: dict[str, str]) -> Steps:
        """The topic's complete new overrides (``ConfigError`` at once if they are not valid): saved, then
        applied to the topic and its logs; a failed save changes nothing."""
        overrides = {k: str(v) for k, v in overrides.items()}
        self.model.validate_overrides(overrides)
        if overrides.get("message.format.version") != self._topics[name].overrides.get("message.format.version"):
            warn_ignored_format(overrides.get("message.format.version"), name)
        return Steps(self._new_overrides(name, overrides))

    def _new_overrides(self, name: str, overrides: dict[str, str]) -> Iterator[Save]:
        """``KeyError`` if the topic is gone by the first step (a caller that waited for its turn)."""
        yield Save(self.save_topic, attrs.evolve(self._topics[name], overrides=overrides))
        self._topics[name].overrides = overrides
        config = self.model.effective(overrides)
        for (topic, _), log_ in self._logs.items():
            if topic == name:
                log_.config = config

    def delete_topic(self, name: str) -> None:
        """Delete ``name``: saved first, so a failed save changes nothing."""
        for _step in self.deletion_steps(name):
            pass

    def deletion_steps(self, name: str) -> Steps:
        return Steps(self._deletion(name))

    def _deletion(self, name: str) -> Iterator[Save]:
        yield Save(self.forget_topic, name)
        meta = self._topics.pop(name)
        self.moves.stop_topic(name)
        logs = [self._logs.pop((name, p)) for p in range(meta.num_partitions) if (name, p) in self._logs]
        for log_ in logs:  # all unregistered first: one that fails to go does not keep the others
            if not log_.offline:  # an offline dir is not touched: its copy is a stray at the next start
                self.doomed.take(log_, self.clock())
        self.group_commit.forget(lambda l: l.topic == name)
        yield Save(self._checkpoints_without, name)

    def _checkpoints_without(self, name: str) -> None:
        """The checkpoints after ``name`` was deleted (Kafka's asyncDelete: a topic made again must not meet
        its offsets); a failure is logged: the deletion stands and the periodic write tries again."""
        try:
            self.checkpoints.forget_cleaner_offsets(name)
        except OSError as exc:
            log.error("writing the cleaner checkpoints after deleting %s failed: %s", name, exc)
        for root in self.failures.online_dirs():
            try:
                self.checkpoints.write_offsets(root)
            except OSError as exc:
                log.error("%s: writing the checkpoints after deleting %s failed: %s", root, name, exc)
