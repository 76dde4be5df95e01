"""Deleting from the front of a log: DeleteRecords, retention, delayed file removal (functions over a ``Log``).

Kafka's ``deleteOldSegments`` runs three prefix passes, each walking from the
oldest segment and stopping at the first one that does not qualify:

1. ``retention.ms`` (``cleanup.policy`` includes delete, not -1): the
   segment's largest record timestamp (the ``.log`` mtime if it has none) is
   more than ``retention.ms`` old;
2. ``retention.bytes`` (delete, not -1): with ``diff = size - retention.bytes``
   a segment goes while ``diff - segment size >= 0``, so the log may stay up
   to one segment above the limit;
3. log start offset (every policy): the *next* segment's base offset is at or
   below ``log_start_offset``.

(Kafka runs them log start first, then size, then time; each removes a
prefix decided by sums from the oldest segment, so the order changes
nothing.) DeleteRecords only raises the log start offset; the segments it
leaves wholly below go at the next pass, as in Kafka, where
``maybeIncrementLogStartOffset`` moves the offset and the retention task
(every ``log.retention.check.interval.ms``; the cleaner's rounds for a
compacted log) runs ``deleteLogStartOffsetBreachedSegments``. Meanwhile
reads and ListOffsets see the new start, the log's size the old segments.

A segment whose upper bound (next base offset, or the log end offset) is above
the high watermark is never deleted, nor is an empty active segment; when the
active segment itself goes, a new empty one is rolled first so the log always
has one. After a pass the log start offset rises to the first base offset.

Deleted segments are renamed ``.deleted`` at once (open ``LogSlice`` objects
keep reading them) and removed by ``delete_expired_files`` once
``file.delete.delay.ms`` (the value when they were renamed) has passed.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

from .errors import OffsetOutOfRangeError

if TYPE_CHECKING:
    from .log import Log

log = logging.getLogger(__name__)


def delete_records_before(log_: "Log", offset: int) -> int:
    """DeleteRecords: raise the log start offset to ``offset`` (never lower it); returns the new log start
    offset. No segment goes now: the segments wholly below it stay (still counted in the log's size) until
    the next retention pass (Kafka's ``maybeIncrementLogStartOffset`` only moves the offset)."""
    if offset < 0 or offset > log_.high_watermark:
        raise OffsetOutOfRangeError(f"{log_.name}: {offset} is outside [0, high watermark "
                                    f"{log_.high_watermark}]")  # fmt: skip
    if offset > log_._log_start_offset:
        log_._log_start_offset = offset
        log.info("%s: log start offset raised to %d by DeleteRecords", log_.name, offset)
    return log_._log_start_offset


def run_retention(log_: "Log", now_ms: int) -> int:
    """Kafka's deleteOldSegments; returns the number of segments deleted."""
    config = log_.config
    deleted = 0
    if "delete" in config.cleanup_policy:
        if config.retention_ms >= 0:
            deleted += _delete_prefix(log_, lambda seg, nxt: _too_old(seg, now_ms, config.retention_ms))
        if config.retention_bytes >= 0:
            excess = [log_.size_in_bytes - config.retention_bytes]

            def over(seg: Any, _next: Any) -> bool:
                if excess[0] - seg.size < 0:
                    return False
                excess[0] -= seg.size
                return True

            deleted += _delete_prefix(log_, over)
    return deleted + _delete_prefix(log_, functools.partial(_below_log_start, log_))


def _below_log_start(log_: "Log", _seg: Any, next_seg: Any) -> bool:
    return next_seg is not None and next_seg.base_offset <= log_._log_start_offset


def _too_old(seg: Any, now_ms: int, retention_ms: int) -> bool:
    return now_ms - seg.largest_timestamp_or_mtime() > retention_ms


def _delete_prefix(log_: "Log", qualifies: Callable[[Any, Any], bool]) -> int:
    deleted = 0
    while True:
        seg = log_.segments[0]
        next_seg = log_.segments[1] if len(log_.segments) > 1 else None
        upper = next_seg.base_offset if next_seg is not None else log_.log_end_offset
        if upper > log_.high_watermark or not qualifies(seg, next_seg):
            break
        if next_seg is None:
            if seg.size == 0:
                break
            log_.roll()
        log_.segments.pop(0)
        schedule_delete(log_, seg)
        deleted += 1
    if deleted:
        log_._log_start_offset = max(log_._log_start_offset, log_.segments[0].base_offset)
        log.info("%s: deleted %d segments, log start offset %d", log_.name, deleted,
                 log_._log_start_offset)  # fmt: skip
    return deleted


def schedule_delete(log_: "Log", seg: Any) -> None:
    """Rename ``seg``'s files ``.deleted``; ``delete_expired_files`` removes them once ``file.delete.delay.ms``,
    as set now, has passed (Kafka's ``LocalLog.deleteSegmentFiles`` schedules the removal with that delay)."""
    with log_._flush_lock:
        if seg in log_._unflushed:
            log_._unflushed.remove(seg)
    due = log_.clock() + log_.config.file_delete_delay_ms
    log_._pending_deletes.append((due, seg.rename_to_deleted()))


def delete_expired_files(log_: "Log", now_ms: int) -> None:
    """Remove the ``.deleted`` files that are due."""
    keep = []
    for due, paths in log_._pending_deletes:
        if now_ms < due:
            keep.append((due, paths))
            continue
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    log_._pending_deletes = keep
