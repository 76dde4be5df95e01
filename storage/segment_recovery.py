"""Recovery of one segment's batches, as Kafka's ``LogSegment.recover`` walks them.

``scan_valid`` reads the ``.log`` file ``SCAN_CHUNK`` bytes at a time (a batch
larger than that is read whole) and accepts batches while each is whole, has
a good CRC, starts at or after the offset the last one ended at, and keeps
its last offset within the 32-bit range of the segment's relative index. The
first batch that fails any of this (or a framing error) ends the valid
prefix. On the way it adds index entries the way appends do (one per
``index.interval.bytes``, mapping a batch's last offset to its position) and
tracks the largest timestamp and its offset. ``Segment.recover`` resets the
indexes before, then truncates the file after the prefix and takes the
scan's offsets and timestamps.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import attrs

from protocol.errors import KafkaProtocolError
from protocol.records import RecordBatchView, iter_batches

from .batch_files import LOG_OVERHEAD

SCAN_CHUNK = 1 << 20
INT_MAX = 2**31 - 1
_PREFIX = struct.Struct(">qi")  # offset, size


@attrs.define
class Scan:
    """What the walk has found so far."""

    segment: Any
    max_batch_size: int | None
    next_offset: int
    max_ts: int = -1
    offset_of_max_ts: int = 0
    last_index_position: int = 0

    def acceptable(self, batch: Any) -> bool:
        first = batch.base_offset if isinstance(batch, RecordBatchView) else batch.last_offset
        return (
            batch.is_valid()
            and first >= self.next_offset
            and batch.last_offset >= first
            and batch.last_offset - self.segment.base_offset <= INT_MAX
        )

    def take(self, batch: Any, position: int) -> None:
        """Count ``batch`` (valid, at ``position``) in: offsets, timestamps, index entries."""
        seg = self.segment
        if batch.max_timestamp > self.max_ts:
            self.max_ts, self.offset_of_max_ts = batch.max_timestamp, batch.last_offset
        if position - self.last_index_position > seg.config.index_interval_bytes:
            seg.offset_index.append(batch.last_offset, position)
            seg.time_index.maybe_append(self.max_ts, self.offset_of_max_ts)
            self.last_index_position = position
        self.next_offset = batch.last_offset + 1


def scan_valid(segment: Any, max_batch_size: int | None) -> tuple[int, Scan]:
    """``(bytes of the valid prefix, the scan)`` of ``segment``'s file of ``segment.size`` bytes."""
    scan = Scan(segment, max_batch_size, segment.base_offset, offset_of_max_ts=segment.base_offset)
    pos, fd = 0, segment.fileno()
    while pos < segment.size:
        chunk = os.pread(fd, min(SCAN_CHUNK, segment.size - pos), pos)
        used = 0
        try:
            for batch in iter_batches(memoryview(chunk), max_batch_size=max_batch_size):
                if not scan.acceptable(batch):
                    return pos + used, scan
                scan.take(batch, pos + used)
                used += batch.size_in_bytes
        except KafkaProtocolError:  # corrupt framing: everything from here is dropped
            return pos + used, scan
        if used == 0:  # a batch larger than the chunk
            big = _read_whole_batch(segment, pos, max_batch_size)
            if big is None or not scan.acceptable(big):
                return pos, scan
            scan.take(big, pos)
            used = big.size_in_bytes
        pos += used
    return pos, scan


def _read_whole_batch(segment: Any, pos: int, max_batch_size: int | None) -> Any:
    head = os.pread(segment.fileno(), LOG_OVERHEAD, pos)
    if len(head) < LOG_OVERHEAD:
        return None
    size = _PREFIX.unpack(head)[1] + LOG_OVERHEAD
    if size < 26 or pos + size > segment.size:
        return None
    try:
        data = memoryview(os.pread(segment.fileno(), size, pos))
        return next(iter_batches(data, max_batch_size=max_batch_size), None)
    except KafkaProtocolError:
        return None
