"""Finding batches in a segment's ``.log``: by position, by offset, by timestamp.

Mixed into ``Segment`` (which provides the file, its size and the lazily
loaded indexes). Each batch's header is read on its own (``peek_batch``:
its last offset and size), so a walk from a position costs one small
``pread`` a batch and never reads records. An offset is found as Kafka's
``LogSegment.translateOffset`` does: the offset index gives the position of
an entry at or before it (the index is sparse), and the walk goes on from
there to the first batch whose last offset reaches it. A timestamp is found
as ``findOffsetByTimestamp`` does: the time index gives an offset at or
before the first record that late, the offset index its position, and the
batches from there are read (those whose largest timestamp is earlier are
skipped whole) to the first record at or past both the timestamp and the
start offset (None when the segment's largest timestamp is earlier). A
walk stops at the segment's known size, or at a header that makes no sense
(``peek_batch`` gives None).
"""

from __future__ import annotations

import os
from typing import Any, Iterator

from protocol.records import iter_batches

from .batch_files import peek_batch


class SegmentReads:
    """The reading part of ``Segment`` (which provides the attributes used here)."""

    def batch_at(self, position: int) -> tuple[int, int] | None:
        """(last offset, total size) of the batch at ``position``, or None past the end."""
        return peek_batch(self.fileno(), position, self.size)

    def iter_batch_headers(self, start: int = 0) -> Iterator[tuple[int, int, int]]:
        """Yield (position, last offset, size) for each batch from ``start``."""
        pos = start
        while pos < self.size:
            batch = self.batch_at(pos)
            if batch is None:
                return
            yield pos, batch[0], batch[1]
            pos += batch[1]

    def find_position(self, offset: int) -> int | None:
        """Position of the first batch whose last offset >= ``offset``; None if none here."""
        self._ensure_loaded()
        _, start = self.offset_index.lookup(offset)
        for pos, last, _ in self.iter_batch_headers(start):
            if last >= offset:
                return pos
        return None

    def batch_end(self, position: int) -> int:
        batch = self.batch_at(position)
        return self.size if batch is None else min(position + batch[1], self.size)

    def read_views(self, start: int, end: int) -> Iterator[Any]:
        """Batch views over [start, end), read into memory."""
        return iter_batches(memoryview(os.pread(self.fileno(), end - start, start)))

    def find_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """First (offset, timestamp) here with timestamp >= ``timestamp`` and offset >= ``start_offset``."""
        if self.largest_timestamp < timestamp:
            return None
        _, position = self.offset_index.lookup(max(self.time_index.lookup(timestamp), start_offset))
        for pos, last, size in self.iter_batch_headers(position):
            if last < start_offset:
                continue
            for view in self.read_views(pos, pos + size):
                if view.max_timestamp < timestamp:
                    continue
                for record in view:
                    if record.timestamp >= timestamp and record.offset >= start_offset:
                        return record.offset, record.timestamp
        return None
