"""A partition log: ordered segments, offsets, rolls, reads, retention (Kafka's UnifiedLog/LocalLog).

``Log`` owns the segments of one ``<topic>-<partition>`` directory. The last
segment is the active one; appends go there after ``_maybe_roll`` decides, as
Kafka's ``shouldRoll`` does, whether a new segment must start first:

* the segment would pass ``segment.bytes``;
* the time since its first batch (by record timestamps; wall clock when the
  segment has none) passed ``segment.ms`` minus this segment's jitter — for a
  compacted log with ``max.compaction.lag.ms`` set, ``min(segment.ms,
  max.compaction.lag.ms)`` (KIP-354);
* an index is full, or the offsets would not fit an int32 relative offset.

``roll_if_idle(now)`` applies the same time rule from a timer, so an idle
compacted log still rolls its active segment in time for the cleaner
(KIP-354; Kafka itself only checks on append).

Offsets: ``log_start_offset`` (raised by DeleteRecords and retention),
``log_end_offset`` (next offset to assign) and ``high_watermark`` (equal to
the log end offset on a single node). ``read`` returns a ``LogSlice`` holding
its own duplicate file descriptor, so a segment deleted or swapped while the
broker is still sending it with ``sendfile`` stays readable.
"""

from __future__ import annotations

import logging
import os
import random
import weakref
from pathlib import Path
from typing import Callable

import attrs

from .errors import OffsetOutOfRangeError
from .file_names import CLEANED, DELETED, LOG, SWAP, offset_of
from .segment import Segment

log = logging.getLogger(__name__)
INT_MAX = 2**31 - 1


@attrs.define(eq=False)
class LogSlice:
    """Bytes [position, position + size) of a segment file, on a private fd."""

    fileno: int
    position: int
    size: int

    def __attrs_post_init__(self) -> None:
        weakref.finalize(self, os.close, self.fileno)

    def read_bytes(self) -> bytes:
        return os.pread(self.fileno, self.size, self.position)


@attrs.define
class SegmentInfo:
    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int | None
    path: Path


class Log:
    """One partition's log; see the module docstring."""

    def __init__(self, directory: Path, topic: str, partition: int, config, clock: Callable[[], int]) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self.segments: list[Segment] = []
        self._log_start_offset = 0
        self.recovery_point = 0
        self.dirty = False
        self.last_flush_ms = clock()

    # -- opening ----------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, topic: str, partition: int, config, clock, *, log_start_offset: int = 0,
             recovery_point: int = 0, clean: bool = False) -> "Log":  # fmt: skip
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, topic, partition, config, clock)
        _finish_interrupted_swaps(directory)
        bases = sorted(o for p in directory.glob("*" + LOG) if (o := offset_of(p)) is not None)
        for base in bases:
            self.segments.append(self._new_segment(base))
        if not self.segments:
            self.segments.append(self._new_segment(log_start_offset))
        self._load(clean, recovery_point)
        self._log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        if self._log_start_offset > self.log_end_offset:
            self._reset_to(self._log_start_offset)
        self.recovery_point = self.log_end_offset if clean else min(recovery_point, self.log_end_offset)
        return self

    def _new_segment(self, base: int) -> Segment:
        seg = Segment(self.dir, base, self.config.index_interval_bytes, self.clock())
        jitter = min(self.config.segment_jitter_ms, self._max_segment_ms())
        seg.roll_jitter_ms = random.randrange(jitter) if jitter > 0 else 0
        return seg

    def _load(self, clean: bool, recovery_point: int) -> None:
        for i, seg in enumerate(self.segments):
            needs_scan = not clean and (i + 1 == len(self.segments) or self.segments[i + 1].base_offset > recovery_point)
            if not needs_scan and seg.size > 0:
                seg.load_clean()
                if not seg.offsets and seg.size > 2 * seg.index_interval + 64:
                    needs_scan = True  # index missing: rebuild it
            if needs_scan:
                dropped = seg.load(self.config.max_message_bytes + 1024)
                if dropped:
                    log.warning("%s: dropped %d bytes of torn or corrupt data from %s", self.name, dropped, seg.path)
                    self._delete_segments_after(i)
                    return

    def _delete_segments_after(self, index: int) -> None:
        for seg in self.segments[index + 1 :]:
            log.warning("%s: deleting segment %s after a truncation", self.name, seg.path)
            seg.delete_files()
        del self.segments[index + 1 :]

    def _reset_to(self, offset: int) -> None:
        for seg in self.segments:
            seg.delete_files()
        self.segments = [self._new_segment(offset)]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

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
        return self.log_end_offset

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def segment_infos(self) -> list[SegmentInfo]:
        return [SegmentInfo(s.base_offset, s.size, s.largest_timestamp, s.first_batch_timestamp, s.path)
                for s in self.segments]  # fmt: skip

    # -- appending ----------------------------------------------------------------

    def append(self, data, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        if first_offset != self.log_end_offset:
            raise ValueError(f"{self.name}: append at {first_offset}, log end offset is {self.log_end_offset}")
        self._maybe_roll(len(data), first_offset, last_offset, max_timestamp)
        self.active.append(data, first_offset, last_offset, max_timestamp)
        self.dirty = True
        if self.active.unflushed_messages >= self.config.flush_messages:
            self.flush()
        elif self.clock() - self.last_flush_ms >= self.config.flush_ms:
            self.flush()

    def _max_segment_ms(self) -> int:
        c = self.config
        if "compact" in c.cleanup_policy and c.max_compaction_lag_ms > 0:
            return min(c.segment_ms, c.max_compaction_lag_ms)
        return c.segment_ms

    def _time_to_roll(self, seg: Segment, incoming_ts: int) -> bool:
        if seg.size == 0:
            return False
        limit = self._max_segment_ms() - seg.roll_jitter_ms
        if seg.first_batch_timestamp is not None and seg.first_batch_timestamp >= 0 and incoming_ts >= 0:
            return incoming_ts - seg.first_batch_timestamp > limit
        return self.clock() - seg.created_ms > limit

    def _maybe_roll(self, size: int, first: int, last: int, max_ts: int) -> None:
        seg, c = self.active, self.config
        if (
            seg.size > c.segment_bytes - size
            or self._time_to_roll(seg, max_ts)
            or seg.index_full(c.segment_index_bytes)
            or last - seg.base_offset > INT_MAX
        ) and seg.size > 0:
            self.roll(max(first, self.log_end_offset))

    def roll(self, new_base: int | None = None) -> Segment:
        old = self.active
        old.on_become_inactive()
        base = self.log_end_offset if new_base is None else new_base
        self.segments.append(self._new_segment(base))
        old.flush()
        self.recovery_point = max(self.recovery_point, base)
        return self.active

    def roll_if_idle(self, now_ms: int) -> bool:
        """The timer-driven roll (KIP-354): roll an active segment that is too old."""
        seg = self.active
        if seg.size == 0:
            return False
        started = seg.first_batch_timestamp if (seg.first_batch_timestamp or -1) >= 0 else seg.created_ms
        if now_ms - started > self._max_segment_ms() - seg.roll_jitter_ms:
            self.roll()
            return True
        return False

    def flush(self) -> None:
        for seg in self.segments:
            if seg.unflushed_messages or seg is self.active:
                seg.flush()
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = self.clock()
        self.dirty = False

    # -- reading ------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, *, min_one_message: bool, max_offset: int | None = None) -> LogSlice | None:
        """The slice from the batch containing ``offset``, cut at ``max_bytes`` (Kafka may cut mid-batch)."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"{self.name}: offset {offset} outside [{self.log_start_offset}, "
                                        f"{self.log_end_offset}]")  # fmt: skip
        for seg in self._segments_from(offset):
            start = seg.find_position(offset)
            if start is None:
                continue
            end = min(seg.size, start + max(max_bytes, 0))
            if min_one_message:
                end = max(end, seg.batch_end(start))
            if end <= start:
                return None
            return LogSlice(os.dup(seg.fileno()), start, end - start)
        return None

    def _segments_from(self, offset: int) -> list[Segment]:
        i = 0
        for j, seg in enumerate(self.segments):
            if seg.base_offset <= offset:
                i = j
        return self.segments[i:]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First (offset, timestamp) with timestamp >= ``timestamp`` (ListOffsets by time)."""
        for seg in self.segments:
            if seg.largest_timestamp < timestamp:
                continue
            for view in seg.read_views(0, seg.size):
                if view.max_timestamp < timestamp:
                    continue
                for record in view:
                    if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        best: tuple[int, int] | None = None
        for seg in self.segments:
            if seg.largest_timestamp >= 0 and (best is None or seg.largest_timestamp > best[1]):
                best = (seg.offset_of_largest, seg.largest_timestamp)
        return best

    # -- deleting -------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"{self.name}: {offset} is above the high watermark {self.high_watermark}")
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            self._delete_segments_below_start()
        return self._log_start_offset

    def _delete_segments_below_start(self) -> None:
        while len(self.segments) > 1 and self.segments[1].base_offset <= self._log_start_offset:
            self._schedule_delete(self.segments.pop(0))

    def _schedule_delete(self, seg: Segment) -> None:
        """Rename a segment's files to ``.deleted``; ``delete_expired_files`` removes them later."""
        seg.close()
        for path in seg.dir.glob(f"{seg.path.stem}.*"):
            if not path.name.endswith(DELETED):
                path.rename(path.with_name(path.name + DELETED))

    def delete_expired_files(self, now_ms: int) -> None:
        delay = self.config.file_delete_delay_ms
        for path in self.dir.glob("*" + DELETED):
            try:
                if now_ms - int(path.stat().st_mtime * 1000) >= delay:
                    path.unlink()
            except FileNotFoundError:
                pass

    def run_retention(self, now_ms: int) -> int:
        """Kafka's deleteOldSegments for cleanup.policy=delete: returns segments deleted."""
        if "delete" not in self.config.cleanup_policy:
            return 0
        deleted = 0
        size_left = self.size_in_bytes - self.config.retention_bytes
        while len(self.segments) > 1 or self.active.size > 0:
            seg = self.segments[0]
            upper = self.segments[1].base_offset if len(self.segments) > 1 else self.log_end_offset
            if upper > self.high_watermark or not self._expired(seg, now_ms, size_left):
                break
            size_left -= seg.size
            if len(self.segments) == 1:
                self.roll()
            self.segments.pop(0)
            self._schedule_delete(seg)
            self._log_start_offset = max(self._log_start_offset, self.segments[0].base_offset)
            deleted += 1
        return deleted

    def _expired(self, seg: Segment, now_ms: int, size_left: int) -> bool:
        c = self.config
        if c.retention_bytes >= 0 and size_left - seg.size >= 0:
            return True
        if c.retention_ms < 0:
            return False
        largest = seg.largest_timestamp if seg.largest_timestamp >= 0 else int(seg.path.stat().st_mtime * 1000)
        return now_ms - largest > c.retention_ms

    def truncate_to(self, offset: int) -> None:
        while len(self.segments) > 1 and self.active.base_offset >= offset:
            self.segments.pop().delete_files()
        seg = self.active
        pos = seg.find_position(offset)
        if pos is not None:
            seg.truncate_to_position(pos)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        for seg in self.segments:
            seg.delete_files()


def _finish_interrupted_swaps(directory: Path) -> None:
    """Kafka's load steps 1-2: drop .cleaned/.deleted files, complete .swap replacements."""
    for path in list(directory.glob("*" + DELETED)) + list(directory.glob("*" + CLEANED)):
        log.warning("removing leftover %s", path)
        path.unlink(missing_ok=True)
    swaps = sorted(directory.glob("*" + SWAP))
    if not swaps:
        return
    low = min(offset_of(p) or 0 for p in swaps)
    for path in directory.iterdir():
        off = offset_of(path)
        if off is not None and off >= low and not path.name.endswith(SWAP) and path.suffix in (LOG, ".index", ".timeindex"):
            path.unlink()
    for path in swaps:
        path.rename(path.with_name(path.name[: -len(SWAP)]))
        log.warning("completed interrupted swap of %s", path)

