"""A partition log: ordered segments, offsets, rolls, reads, flushes (Kafka's UnifiedLog/LocalLog).

``Log`` owns the segments of one ``<topic>-<partition>`` directory. The last
segment is the active one; appends go there after ``roll_rules`` decides, as
Kafka's ``shouldRoll`` does, whether a new segment must start first; the
broker's timer rolls an idle compacted log for KIP-354 (``roll_if_idle``).

Offsets: ``log_start_offset`` (raised by DeleteRecords and retention),
``log_end_offset`` (next offset to assign), ``high_watermark`` (the log end
offset on a single node; in durable mode the recovery point, so consumers
never read what is not yet fsynced) and ``recovery_point`` (everything below
it is on disk), which the fsyncs of ``log_flush.py`` move: a roll queues
the old segment's fsync for the next flush, as Kafka schedules it. An append
fsyncs nothing: ``flush_messages_due`` tells its caller when
``flush.messages`` wants a flush (``flush_due`` the timer, for ``flush.ms``),
which it runs, possibly on a worker thread while appends go on.

Retention and deletion live in ``retention.py``;
producer state and transactions (``first_unstable_offset``,
``last_stable_offset``, ``aborted_transactions``, ``.txnindex`` upkeep and
the replay after a crash) in ``log_txn.py``.
``replace_segments`` (``segment_swap.py``) swaps the cleaner's output in
with Kafka's ``.cleaned`` -> ``.swap`` -> rename protocol, which
``log_loader`` (which also opens a log: ``load_log``) completes or rolls back after a crash.
``relocate`` carries the log on in another directory once a log dir move
(``log_move.py``) has copied its files there. A disk failure in an append,
roll, flush, read, retention or swap goes to ``on_failure``, which takes the
log dir offline (``log_dir_failure.py``); an ``offline`` log refuses them all.
"""

from __future__ import annotations

import errno
import logging
import random
import threading
from pathlib import Path
from typing import Any, Callable

from . import log_read, log_txn, retention, roll_rules, segment_swap
from .errors import StorageError
from .log_dir_failure import failing_dir
from .log_flush import LogFlushing
from .log_info import AppendInfo, LogSlice, SegmentInfo
from .log_loader import load_log
from .producer_state import ProducerStateManager
from .segment import Segment
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)


def _no_hook(_log: "Log") -> None:
    return None


def _no_failure_hook(_log: "Log", _exc: BaseException) -> None:
    return None


class Log(LogFlushing):
    """One partition's log; see the module docstring."""

    def __init__(self, directory: Path, topic: str, partition: int, config: Any, clock: Callable[[], int]) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self._config = config
        self.clock = clock
        self.segments: list[Segment] = []
        self._log_start_offset = 0
        self._recovery_point: int | None = 0
        self._unsynced_index_base: int | None = None  # a group commit skipped this segment's index fsync
        self.on_append: Callable[[Log], None] = _no_hook
        self._flush_lock = threading.Lock()  # held briefly: the lists and offsets a flush reads and moves
        self._flushing = threading.Lock()  # held by a flush (on any thread) for its fsyncs
        self._unflushed: list[Segment] = []  # rolled segments waiting for their fsync
        self.last_flush_ms = clock()
        self._pending_deletes: list[tuple[int, list[Path]]] = []  # (due time, files renamed .deleted)
        self.deleted = False  # set by delete(): a cleaner round in flight must not swap files in
        self.producer_state = ProducerStateManager(directory)
        self.durable_high_watermark = False  # log.flush.durable.enable: consumers see fsynced data only
        self.offline = False  # its log dir failed (``log_dir_failure.py``): no more appends, reads, flushes
        self.on_failure: Callable[[Log, BaseException], None] = _no_failure_hook

    # -- opening ----------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, topic: str, partition: int, config: Any, clock: Callable[[], int], *,
             log_start_offset: int = 0, recovery_point: int = 0, clean: bool = False,
             producer_id_expiration_ms: int = 86_400_000,
             segments_left: Callable[[int], None] | None = None) -> "Log":  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, topic, partition, config, clock)
        self.producer_state.expiration_ms = producer_id_expiration_ms  # loading leaves expired producers out
        try:
            load_log(self, log_start_offset, recovery_point, clean, segments_left)
        except BaseException:  # the segments opened so far hold plain file descriptors: close them
            self.close_files()
            raise
        return self

    def close_files(self) -> None:
        """Close the segments' files and write nothing else: a log given up before it served."""
        for seg in self.segments:
            seg.close()

    def rebuild_producer_state(self, replay_from: int | None = None) -> None:
        """Producer state from the newest usable snapshot plus the batches after it (``log_txn.rebuild``)."""
        log_txn.rebuild(self, replay_from)

    def _new_segment(self, base: int) -> Segment:
        seg = Segment.create(self.dir, base, self._config, self.clock())
        self._set_jitter(seg)
        return seg

    def _set_jitter(self, seg: Segment) -> None:
        jitter = min(self._config.segment_jitter_ms, roll_rules.max_segment_ms(self._config))
        seg.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0

    def _reset_to(self, offset: int) -> None:
        for seg in self.segments:
            seg.delete_files()
        self.segments = [self._new_segment(offset)]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def config(self) -> Any:
        return self._config

    @config.setter
    def config(self, config: Any) -> None:
        self._config = config
        for seg in self.segments:
            seg.config = config

    # -- offsets ------------------------------------------------------------------

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        """What consumers may read: the log end offset, or in durable mode only what is fsynced."""
        if self.durable_high_watermark:
            return min(self.recovery_point, self.log_end_offset)
        return self.log_end_offset

    @property
    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest undecided transaction (at least the log start offset); None if none."""
        return log_txn.first_unstable_offset(self)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read: min(first unstable offset, high watermark)."""
        return log_txn.last_stable_offset(self)

    def aborted_transactions(self, start: int, upper: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, upper), from the ``.txnindex`` files, in index order."""
        return log_txn.aborted_transactions(self, start, upper)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def segment_infos(self) -> list[SegmentInfo]:
        return [SegmentInfo(s.base_offset, s.size, s.largest_timestamp, s.first_batch_timestamp, s.path)
                for s in self.segments]  # fmt: skip

    # -- appending ----------------------------------------------------------------

    def append(self, data: Any, first_offset: int, last_offset: int, max_timestamp: int) -> AppendInfo:
        """Append validated batches whose offsets are already assigned (first == log end offset).

        It fsyncs nothing: when ``flush.messages`` wants a flush now (``flush_messages_due``) the caller runs
        ``flush``, on a worker thread if it likes (the broker's group commit), before it answers the producer.
        Raises ``StorageError`` (an ``OSError``) when the disk refuses the write, and the log dir goes
        offline (``on_failure``); what the log reports is then exactly as it was before the call.
        """
        self.check_online()
        if first_offset != self.log_end_offset or last_offset < first_offset:
            raise ValueError(f"{self.name}: append of [{first_offset}, {last_offset}] at log end "
                             f"offset {self.log_end_offset}")  # fmt: skip
        if self._recovery_point is None:
            self._recovery_point = first_offset
        with failing_dir(self):
            self._maybe_roll(len(data), first_offset, last_offset, max_timestamp)
            seg = self.active
            position = seg.size
            seg.append(data, first_offset, last_offset, max_timestamp)
            log_txn.on_append(self, seg, data, first_offset)
        self.on_append(self)
        # For LogAppendTime topics the broker stamped every record with its append time, so the batch's
        # max timestamp is it (Kafka answers that value in ProduceResponse); -1 otherwise, as Kafka does.
        append_time = max_timestamp if self._config.message_timestamp_type == "LogAppendTime" else -1
        return AppendInfo(first_offset, last_offset, max_timestamp, append_time, seg.base_offset, position, len(data))

    def _maybe_roll(self, size: int, first: int, last: int, max_ts: int) -> None:
        if roll_rules.must_roll(self, size, last, max_ts):
            self.roll(max(first, self.log_end_offset))

    def roll(self, new_base: int | None = None) -> Segment:
        """Start a new active segment; the old one's fsync is queued for the next flush."""
        old = self.active
        base = self.log_end_offset if new_base is None else new_base
        if old.size == 0 and old.base_offset == base:
            return old
        old.on_become_inactive()
        new = self._new_segment(base)
        with self._flush_lock:  # together: a flush on another thread sees the rolled segment and the new active
            self._unflushed.append(old)
            self.segments.append(new)
        if self.producer_state.producers:
            self.producer_state.write_snapshot(base, sync=False)  # fsynced by the next flush, as Kafka does
        return new

    def roll_if_idle(self, now_ms: int) -> bool:
        """The timer-driven roll (KIP-354, beyond Kafka; ``roll_rules.idle_roll_due``)."""
        if roll_rules.idle_roll_due(self, now_ms):
            self.check_online()
            with failing_dir(self):
                self.roll()
            return True
        return False

    # -- disk failures (log_dir_failure.py) ------------------------------------------

    def check_online(self) -> None:
        """``StorageError`` once the log dir is offline (Kafka's KafkaStorageException)."""
        if self.offline:
            raise StorageError(errno.EIO, f"{self.name} is in the offline log dir {self.dir.parent}")

    # -- reading ------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one_message: bool,
             max_offset: int | None = None) -> LogSlice | None:  # fmt: skip
        """The slice a Fetch gets from ``offset`` (``log_read.read``)."""
        self.check_online()
        with failing_dir(self):
            return log_read.read(self, offset, max_bytes, min_one_message=min_one_message, max_offset=max_offset)

    def segments_from(self, offset: int) -> list[Segment]:
        """The segments from the one that would hold ``offset`` (the last based at or below it) on."""
        i = 0
        for j, seg in enumerate(self.segments):
            if seg.base_offset > offset:
                break
            i = j
        return self.segments[i:]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First (offset, timestamp) with timestamp >= ``timestamp`` (ListOffsets by time)."""
        return log_read.offset_for_timestamp(self, timestamp)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the batch with the largest timestamp (ListOffsets -3)."""
        return log_read.max_timestamp_offset(self)

    # -- cleaner output ------------------------------------------------------------

    def replace_segments(self, cleaned: Path, old: list[Segment], *, indexed: bool = False,
                         sync_dir: bool = True) -> Segment:  # fmt: skip
        """Swap a cleaner's ``.cleaned`` file in for the inactive segments ``old`` (``segment_swap``)."""
        self.check_online()
        with failing_dir(self):
            return segment_swap.replace_segments(self, cleaned, old, indexed=indexed, sync_dir=sync_dir)

    # -- truncation and closing ----------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or above the one holding ``offset``."""
        if offset <= self.segments[0].base_offset:
            self._reset_to(offset)
            self._log_start_offset = offset
        else:
            while len(self.segments) > 1 and self.active.base_offset >= offset:
                self.segments.pop().delete_files()
            self.active.truncate_to(offset)
        with self._flushing, self._flush_lock:  # after a flush under way: it must not move the point past the cut
            self._unflushed = [s for s in self._unflushed if s in self.segments]
            self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.rebuild_producer_state()

    def relocate(self, directory: Path) -> None:
        """Carry on in ``directory``, which holds a whole, fsynced copy of the log's files (a log dir move):
        the same object, its segments reopening their files there on next use."""
        with self._flushing, self._flush_lock:
            for seg in self.segments:
                seg.relocate(directory)
            self.dir = self.producer_state.dir = directory
            self._unflushed = []
            self.recovery_point = max(self.recovery_point, self.log_end_offset)
        self._pending_deletes = []  # their files went with the old directory

    def close(self) -> None:
        """Close the files, after a producer snapshot at the log end; a snapshot that cannot be written takes
        the log dir offline (no clean-shutdown marker there: the next start recovers it)."""
        try:
            if not self.deleted and not self.offline and self.dir.exists():
                with failing_dir(self):
                    self.producer_state.write_snapshot(self.log_end_offset)
        except OSError as exc:
            log.error("%s: the producer snapshot at close failed: %s", self.name, exc)
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        self.deleted = True
        for seg in self.segments:
            seg.delete_files()
        self.segments = []

    # -- deleting from the front (retention.py) ---------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: raise the log start offset; returns the new log start offset."""
        self.check_online()
        with failing_dir(self):
            return retention.delete_records_before(self, offset)

    def run_retention(self, now_ms: int) -> int:
        """Kafka's deleteOldSegments (a roll, renames: a disk failure takes the dir offline); segments deleted."""
        self.check_online()
        with failing_dir(self):
            return retention.run_retention(self, now_ms)

    def delete_expired_files(self, now_ms: int) -> None:
        with failing_dir(self):
            retention.delete_expired_files(self, now_ms)
