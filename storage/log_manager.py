"""All logs of a broker: directories, topic metadata, checkpoints, recovery, duties.

Layout under each of ``log.dirs`` (Kafka's): ``<topic>-<partition>/``
directories with segments and a ``partition.metadata`` file (``version: 0`` /
``topic_id: <uuid>``, the id in Kafka's base64 form), plus the checkpoint files
``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``
(written by ``write_checkpoints``), ``cleaner-offset-checkpoint`` (rewritten
by ``update_cleaner_offset`` after each cleaning, as Kafka's doneCleaning
does; all three in ``dir_checkpoints.py``), ``.kafka_cleanshutdown`` after a
clean stop (not in a dir where a log's flush at close failed), and ``.lock``, locked while the manager is open (``dir_locks.py``:
one broker at a time on a dir). Topic metadata that Kafka keeps in its
controller (partition count, per-topic config overrides, topic id) is kept in
``__topics.json`` in the first log dir, with each change since it was written
appended to ``__topics.journal`` and fsynced (``topic_journal.py``; damage
other than a last line cut by a crash stops the start with a
``StorageError``: configs such as ``cleanup.policy`` must never silently fall
back to defaults; a save that fails takes the first log dir offline, which
stops the broker, and raises ``MetadataDirFailed``, as Kafka halts when its
metadata log cannot be written; each change calls the ``on_metadata_change`` hook, which
the broker points at its metadata quorum's end offset; a clean stop folds the
journal into ``__topics.json``), ``meta.properties`` holds the cluster id and
``producer-id-block`` the next block of producer ids (``topic_store.py``, read
at the start, where a damaged one stops it; the broker hands them out and
saves the blocks on a worker thread).
Topic changes are in ``topic_changes.py``, as steps whose saves the caller
may run on another thread (``steps.py``).

Opening (``log_opening.py``): with the clean-shutdown marker present, logs
open without scanning and the marker is removed (so a crash from now on is
detected); without it, every log rescans from its checkpointed recovery point.
Each log dir's logs load on ``num.recovery.threads.per.data.dir`` threads, all
dirs at once, registered in a fixed order on the calling thread.

Durable mode (``log.flush.durable.enable=true``) is group commit
(``group_commit.py``): appends bump ``flush_generation``; a producer waits
with ``sync_to(generation)`` from a worker thread (unless ``settled`` says a
round covered it), one waiter fsyncs every log appended since the last round
once and publishes ``flushed_generation``, and every producer covered is
woken together; each then checks its own logs (``Log.offline``), and holds
its place (``waiting``) so that a round that failed whole is remembered for it. The flush policy
(``flush.messages``, ``flush.ms``) goes through the same rounds, in any mode:
the broker notes a log whose policy is due after an append
(``note_flush_due``; the ``flush.ms`` timer in ``roll_idle_segments`` too) and
waits off its event loop with ``sync_to`` before answering the producer.

A deleted topic's directories are renamed ``<topic>-<p>.<id>-delete`` at once
and removed by the timer once ``log.segment.delete.delay.ms`` has passed
(``doomed_dirs.py``, Kafka's ``asyncDelete``; ``-delete`` directories found on
open wait that long again), and the recovery-point and log-start-offset
checkpoints are rewritten without them at once, so a topic made again under
that name never opens after a crash with the old topic's offsets. A
partition directory of a topic that is not known, or whose
``partition.metadata`` names another topic id (an older topic of that name),
is a *stray*: on open it is renamed ``<topic>-<p>.<id>-stray`` and left
alone, as Kafka's KRaft brokers do, so a topic created later under that name
never takes its data.

A partition moves to another log dir (AlterReplicaLogDirs) through a
``LogMove`` (``log_move.py``), registered in ``moves`` while it runs; the
moves a crash interrupted are finished or undone before the logs open.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .config import ConfigModel
from .dir_checkpoints import DirCheckpoints
from .dir_locks import DirLocks
from .doomed_dirs import DoomedDirs
from .errors import ConfigError
from .group_commit import GroupCommit
from .load_progress import LoadProgress
from .log import Log
from .log_dir_failure import LogDirFailures
from .log_duties import LogDuties
from .log_move import LogMoves
from .log_opening import CLEAN_SHUTDOWN, LogOpening
from .topic_changes import TopicChanges
from .topic_store import ProducerIds, TopicMeta, TopicTable, atomic_write, load_cluster_id
from .upgrade import upgrade_log

log = logging.getLogger(__name__)


class LogManager(LogDuties, LogOpening, TopicChanges):
    def __init__(self, dirs: list[Path], model: ConfigModel, clock: Callable[[], int]) -> None:
        self.dirs = dirs
        self.model = model
        self.clock = clock
        self.durable = bool(model.other.get("log.flush.durable.enable", False))
        self._topics = TopicTable()
        self._pending: dict[str, TopicMeta] = {}  # being created: saved, not yet seen (new_logs.py)
        self._store: Any = None  # the saved topics (topic_journal.TopicJournal), once open
        self._logs: dict[tuple[str, int], Log] = {}
        self.group_commit = GroupCommit()
        self.dir_locks = DirLocks()  # each online dir's .lock, held until ``close`` (or the dir goes offline)
        self.failures = LogDirFailures(dirs, self.logs, self.group_commit.forget, self.dir_locks.release_dir)
        self._closed = False
        self._unflushed_dirs: set[Path] = set()  # dirs with a log whose flush at close failed (no marker)
        self.checkpoints = DirCheckpoints(self.failures.online_dirs, self.logs, self._log_in)
        self.moves = LogMoves()
        self.doomed = DoomedDirs()  # -delete directories waiting for log.segment.delete.delay.ms
        self.interrupted_moves: list[tuple[tuple[str, int], Path]] = []  # moves a crash or stop cut short
        self.cluster_id = ""
        self.producer_ids = ProducerIds(dirs)  # handed out by the broker (its saves on a worker thread)
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each saved topic change

    @classmethod
    def open(cls, log_dirs: list, broker_props: dict[str, str], clock: Callable[[], int],
             progress: LoadProgress | None = None) -> "LogManager":
        """Open every log of ``log_dirs``; ``progress`` follows the loading (``load_progress.py``)."""
        if not log_dirs:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        self = cls([Path(d) for d in log_dirs], ConfigModel.from_broker_props(broker_props), clock)
        try:
            self.validate_dirs()  # each dir locked; one that cannot be made, read or locked is offline
            self.cluster_id = load_cluster_id(self.dirs[0])
            self._open_store()
            self.producer_ids.load()  # a damaged file stops the start (topic_store.py)
            self._open_logs(progress or LoadProgress())
            if self.model.other.get("log.record.version.force.upgrade") == 2:
                for log_ in self.online_logs():  # an offline dir's logs are not opened (log_opening.py)
                    upgrade_log(log_)
        except BaseException:  # a load's own failure closed its logs (log_opening.py); an upgrade's did not
            for log_ in self.online_logs():
                log_.close_files()
            self.dir_locks.release()
            raise
        return self

    def _log_in(self, key: tuple[str, int], root: Path) -> bool:
        """The log is in ``root``, or being moved there (a move's checkpoints are written ahead)."""
        log_ = self._logs.get(key)
        return log_ is not None and (log_.dir.parent == root or self.moves.moving_into(key, root))

    def _register(self, log_: Log) -> Log:
        if self.durable:  # otherwise a round fsyncs only the logs whose flush policy is due (note_flush_due)
            log_.on_append = self.group_commit.note_append
        log_.on_failure = self.failures.fail
        log_.durable_high_watermark = self.durable
        if self.durable:  # what survived a crash becomes visible once it is surely on disk
            log_.sync_recovered()
        self._logs[(log_.topic, log_.partition)] = log_
        return log_

    # -- topics -------------------------------------------------------------------

    def topics(self) -> dict[str, TopicMeta]:
        return dict(self._topics)

    def topic(self, name: str) -> TopicMeta | None:
        return self._topics.get(name)  # no copy of them all (``topics``) for one

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._topics.name_for_id(topic_id)

    def names_by_id(self) -> Mapping[uuid.UUID, str]:
        """Every topic's name by its id: a read-only snapshot, kept until a topic comes or goes."""
        return self._topics.by_id()

    def effective_config(self, name: str):
        return self.model.effective(self._topics[name].overrides)

    def describe_config(self, name: str):
        return self.model.describe(self._topics[name].overrides)

    def describe_overrides(self, overrides: dict[str, str]):
        """DescribeConfigs rows for a topic that would have ``overrides`` (CreateTopics v5+ results)."""
        return self.model.describe(overrides)

    def validate_overrides(self, overrides: dict[str, str]) -> None:
        """Raise ``ConfigError`` naming the key if ``overrides`` are not valid topic configs."""
        self.model.validate_overrides({k: str(v) for k, v in overrides.items()})

    def reconfigure(self, model: ConfigModel) -> None:
        """New broker-level defaults (dynamic broker configs): every log takes its topic's effective config
        under ``model`` at once, as Kafka's DynamicLogConfig does; ``check_model`` first."""
        configs = self.check_model(model)
        self.model = model
        for (topic, _), log_ in self._logs.items():
            log_.config = configs[topic]
            log_.producer_state.expiration_ms = self.producer_id_expiration_ms

    @property
    def producer_id_expiration_ms(self) -> int:
        return self.model.other.get("producer.id.expiration.ms", 86_400_000)

    def check_model(self, model: ConfigModel) -> dict[str, Any]:
        """Every topic's effective config under ``model``; ``ConfigError`` if one of them is not valid (a new
        broker default that conflicts with a topic's override, e.g. min.compaction.lag.ms > max)."""
        configs = {}
        for name, meta in self._topics.items():
            try:
                configs[name] = model.effective(meta.overrides)
            except ConfigError as exc:
                raise ConfigError(f"{exc} (for topic {name})") from None
        return configs

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def logs(self) -> Iterable[Log]:
        return list(self._logs.values())

    def online_logs(self) -> list[Log]:
        """The logs whose log dir has not failed (``log_dir_failure.py``): the ones the duties tend. A copy taken
        at once (``logs``): the checkpoints' flush runs on a worker thread while the event loop makes logs."""
        return [log_ for log_ in self.logs() if not log_.offline]

    def write_checkpoints(self) -> None:
        """Kafka's recovery-point and log-start-offset checkpoints, one pair per online log dir."""
        self._tend("the flush before the checkpoints", Log.flush_rolled)
        for root in self.failures.online_dirs():
            try:
                self.checkpoints.write_offsets(root)
            except OSError as exc:  # Kafka's checkpoint write: the dir goes offline
                self.failures.fail_dir(root, f"writing its checkpoints failed: {exc}")

    def write_dir_checkpoints(self, root: Path) -> None:
        """The checkpoint files of ``root`` now (a move writes its destination's before it commits)."""
        self.checkpoints.write_offsets(root)
        self.checkpoints.write_cleaner_offsets()

    # -- cleaner checkpoint -------------------------------------------------------------

    def cleaner_offsets(self) -> dict[tuple[str, int], int]:
        """First dirty offset per compacted partition, as last checkpointed by the cleaner."""
        return dict(self.checkpoints.cleaner_offsets)

    def update_cleaner_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record where the next cleaning starts (Kafka's doneCleaning) and rewrite ``cleaner-offset-checkpoint``."""
        self.checkpoints.update_cleaner_offset((topic, partition), offset)

    def partition_states(self) -> list[tuple[str, int, int, int, int, int]]:
        """Per log: ``(topic, partition, size in bytes, log_start_offset, log_end_offset, segments)``."""
        return [(l.topic, l.partition, l.size_in_bytes, l.log_start_offset, l.log_end_offset, len(l.segments))
                for l in self.logs()]  # fmt: skip

    # -- group commit (group_commit.py) -----------------------------------------------

    def sync_to(self, generation: int) -> None:
        """Block until a round covered ``generation`` (the broker calls it via trio.to_thread); the caller then
        checks its logs' ``offline``. ``StorageError`` if that round failed whole (``GroupCommit``)."""
        self.group_commit.sync_to(generation)

    def settled(self, generation: int) -> bool:
        """Whether a round covered ``generation``, without waiting; ``StorageError`` as ``sync_to``'s."""
        return self.group_commit.settled(generation)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[int]:
        """A waiter's span, from before its appends (or as it reads the generation to wait for) to its answer:
        the generation now; a round covering it or a later one that fails whole is remembered until it ends."""
        held = self.group_commit.hold()
        try:
            yield held
        finally:
            self.group_commit.release(held)

    def flush_generation(self) -> int:
        return self.group_commit.generation

    def note_flush_due(self, log_: Log) -> int:
        """``log_``'s flush policy is due: the next round flushes it whole; the generation to ``sync_to``."""
        return self.group_commit.note_flush_due(log_)

    def flushed_generation(self) -> int:
        return self.group_commit.flushed

    def flush_dirty(self) -> None:
        """A group-commit round covering every append so far (``sync_to``: one round at a time, none when one
        already covered them): fsync each log appended since the last round."""
        self.group_commit.sync_to(self.group_commit.generation)

    @property
    def fsync_count(self) -> int:
        return self.group_commit.fsync_count

    def _flush_at_close(self) -> bool:
        """Flush every online log; whether each was flushed or went offline (its dir is then left without a
        marker and the start recovers it). One that failed otherwise (out of descriptors) stays online: False,
        the close's round failed whole (``GroupCommit.close``), and its dir gets no clean-shutdown marker."""
        flushed = True
        for log_ in self.online_logs():
            try:
                log_.flush()
            except OSError as exc:
                log.error("%s: the flush at close failed: %s", log_.name, exc)
                if not log_.offline:
                    flushed = False
                    self._unflushed_dirs.add(log_.dir.parent)
        return flushed

    def _leave_markers(self) -> None:
        """The clean-shutdown marker in every online dir whose logs were all flushed at close (another is
        recovered at the next start). One
        that cannot be written (a full disk) is logged and left out, as Kafka swallows that failure: the
        next start recovers that dir's logs from their recovery points."""
        for root in self.dirs:
            if self.failures.is_online(root) and root not in self._unflushed_dirs:
                try:
                    atomic_write(root / CLEAN_SHUTDOWN, '{"version":0,"brokerEpoch":0}')
                except OSError as exc:
                    log.warning("%s: could not write the clean-shutdown marker (%s); the next start recovers "
                                "its logs", root, exc)

    def close(self) -> None:
        """Stop the moves, flush everything, write the checkpoints, close the logs, leave the clean-shutdown
        marker; then, however that went, release the dirs' locks. Once: a second call writes nothing (the dirs
        may be another manager's by then)."""
        if self._closed:
            return
        self._closed = True
        try:
            for move in self.moves.all():
                self.moves.end(move)
            self.group_commit.close(self._flush_at_close)
            self.write_checkpoints()
            for log_ in self.logs():
                log_.close()
            if self._store is not None and self.failures.is_online(self.dirs[0]):  # the next start reads
                self._store.close()  # __topics.json alone
            self._leave_markers()
            self._logs.clear()
        finally:
            self.dir_locks.release()
