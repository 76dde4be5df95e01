"""Reading a partition log: the slice a Fetch gets, and the ListOffsets lookups by timestamp (functions over a ``Log``).

``read`` finds the segment holding the fetch offset (the last one whose base
offset is at or below it), its position through the offset index, and returns
a ``LogSlice`` of at most ``max_bytes`` from there, ending at the high
watermark (or ``max_offset``, what a read_committed or follower limit would
be). With ``min_one_message`` the first batch is whole even past
``max_bytes`` (Kafka's rule, so a consumer always makes progress); the last
batch may be cut short, as Kafka cuts it, and clients drop the partial tail.
When even the first batch is cut, the slice says so (``first_entry_incomplete``,
Kafka's ``FetchDataInfo.firstEntryIncomplete``): the broker then sends nothing
for it unless its Fetch version wants the hard cut.
An offset outside ``[log_start_offset, log_end_offset]`` raises
``OffsetOutOfRangeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import OffsetOutOfRangeError
from .log_info import LogSlice

if TYPE_CHECKING:
    from .log import Log
    from .segment import Segment


def read(log_: "Log", offset: int, max_bytes: int, *, min_one_message: bool,
         max_offset: int | None = None) -> LogSlice | None:  # fmt: skip
    """The slice from the batch holding ``offset``: at most ``max_bytes`` (the first batch whole
    with ``min_one_message``; Kafka may cut the last batch short), below ``max_offset``."""
    if offset < log_.log_start_offset or offset > log_.log_end_offset:
        raise OffsetOutOfRangeError(f"{log_.name}: offset {offset} outside [{log_.log_start_offset}, "
                                    f"{log_.log_end_offset}]")  # fmt: skip
    limit = log_.high_watermark if max_offset is None else min(max_offset, log_.high_watermark)
    if offset >= limit:
        return None
    for seg in log_.segments_from(offset):
        if seg.base_offset >= limit:
            return None
        start = seg.find_position(offset)
        if start is None:
            continue
        return _slice(log_, seg, start, limit, max_bytes, min_one_message)
    return None


def _slice(log_: "Log", seg: Segment, start: int, limit: int, max_bytes: int, min_one: bool) -> LogSlice | None:
    end = seg.size
    if limit < seg.next_offset:
        cut = seg.find_position(limit)
        end = seg.size if cut is None else cut
    wanted, incomplete = max(max_bytes, 0), False
    if wanted < end - start:  # else everything up to end fits: the first batch (ending by end) too
        first = seg.batch_end(start) - start  # one more read of the first batch's header
        wanted = max(wanted, first) if min_one else wanted
        incomplete = wanted < first
    size = min(end - start, wanted)
    if size <= 0:
        return None
    handle = seg.handle
    return LogSlice(handle.fd, start, size, handle, log_.high_watermark, log_.log_start_offset, seg.base_offset,
                    first_entry_incomplete=incomplete)


def offset_for_timestamp(log_: "Log", timestamp: int) -> tuple[int, int] | None:
    """First (offset, timestamp) with timestamp >= ``timestamp`` (ListOffsets by time)."""
    for seg in log_.segments:
        found = seg.find_timestamp(timestamp, log_.log_start_offset)
        if found is not None:
            return found
    return None


def max_timestamp_offset(log_: "Log") -> tuple[int, int] | None:
    """(offset, timestamp) of the batch with the largest timestamp (ListOffsets -3)."""
    best: tuple[int, int] | None = None
    for seg in log_.segments:
        if seg.largest_timestamp >= 0 and (best is None or seg.largest_timestamp > best[1]):
            best = (seg.offset_of_largest_timestamp, seg.largest_timestamp)
    return best
