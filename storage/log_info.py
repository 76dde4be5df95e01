"""What a ``Log`` hands back: appended ranges, read slices, segment summaries.

* ``AppendInfo`` — the result of ``Log.append``: the offsets written, the
  ``log_append_time`` the produce response reports (Kafka's rule: the append
  time the broker stamped into the batch for ``LogAppendTime`` topics, -1
  otherwise), and where the bytes went;
* ``LogSlice`` — a byte range of one segment file, ready for ``os.sendfile``
  (``fileno``/``position``/``size``), ``read_bytes`` or ``read_at``; it holds the file
  open, so the segment may be deleted or replaced while the slice is sent;
* ``SegmentInfo`` — what the cleaner needs to know about a segment.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from .batch_files import FileHandle


@attrs.frozen
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic's message.timestamp.type is LogAppendTime
    segment_base_offset: int
    position: int  # byte position of the first appended batch in the segment's .log
    size: int


@attrs.define(eq=False)
class LogSlice:
    """Bytes [position, position + size) of a segment file; holds the file open while alive.

    The slice starts at the batch holding the offset asked for and may end in
    the middle of a batch when ``max_bytes`` cut it (Kafka does the same; the
    client drops the partial batch).
    """

    fileno: int
    position: int
    size: int
    _handle: FileHandle = attrs.field(repr=False)
    high_watermark: int = -1
    log_start_offset: int = -1
    segment_base_offset: int = -1
    first_entry_incomplete: bool = False  # max_bytes cut the first batch (Kafka's firstEntryIncomplete)

    def read_bytes(self) -> bytes:
        return self.read_at(0, self.size)

    def read_at(self, position: int, size: int) -> bytes:
        """``size`` bytes from ``position`` within the slice (fewer at its end)."""
        return os.pread(self.fileno, max(min(size, self.size - position), 0), self.position + position)

    def same_region(self, other: LogSlice) -> bool:
        """Whether ``other`` is the same bytes of the same open segment file (not merely the same path:
        a segment the cleaner or retention replaced is another file)."""
        return self._handle is other._handle and (self.position, self.size) == (other.position, other.size)


@attrs.define
class SegmentInfo:
    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int | None
    path: Path
