"""Loading a partition directory, after Kafka's LogLoader (steps of §4.6).

``clean_directory`` runs the file-level steps, in Kafka's order:

1. delete ``*.deleted`` and ``*.cleaned`` files, any ``*.swap`` whose
   base offset is >= the smallest ``.cleaned`` offset (an unfinished split),
   and ``.index``/``.timeindex`` ``*.swap`` files (rebuilt, as older Kafka
   did; a ``.log`` whose swap was already finished keeps its data and gets
   new indexes). A ``.txnindex.swap`` is kept: it cannot be rebuilt from its
   segment alone, and ``replace_segments`` strips it only after the ``.log``;
2. for the remaining ``.log.swap`` files, delete the ordinary segment files
   (``.txnindex`` included) whose base offsets fall inside the range the swaps
   cover (smallest swap base offset up to the largest swap next offset), then
   strip ``.swap`` from the names (``.txnindex.swap`` too): the interrupted
   replacement is finished;
3. delete orphan index files (an ``.index``/``.timeindex``/``.txnindex``
   without ``.log``)

and returns (base offset, size) of the ``.log`` files that remain.

``recover_from`` then rescans, after an unclean stop, every segment from the
one holding the recovery point to the end, their ``.txnindex`` reset (the
producer state replay, started at or below the first of them, rebuilds it,
as Kafka's ``LogSegment.recover`` does); the first of these that loses
bytes ends the walk and every later (unflushed) segment is deleted, as Kafka
does. Segments below the recovery point are flushed: each gets the cheap
check of its lazy load, and one found damaged (a file cut or torn behind our
back) is cut back alone, keeping every flushed segment after it, as Kafka
recovers a segment that fails its sanity check. Offset gaps between segments
(compaction, the empty segments the cleaner leaves) are not damage.

``load_log`` runs both for a ``Log`` being opened, then sets its offsets and
loads its producer state: after a clean stop from the snapshot written at
the log end offset (with a replay when that one is damaged or lost, see
``_snapshot_is_stale``), otherwise by replay (``log_txn.rebuild``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .batch_files import peek_batch
from .config import LONG_MAX
from .file_names import CLEANED, DELETED, INDEX, LOG, SWAP, TIME_INDEX, TXN_INDEX, offset_of
from .segment import Segment

if TYPE_CHECKING:
    from .log import Log

log = logging.getLogger(__name__)


def load_log(log_: "Log", log_start_offset: int, recovery_point: int, clean: bool,
             segments_left: Callable[[int], None] | None = None) -> None:
    """Open ``log_``'s directory: segments, offsets, producer state (see the module docstring);
    ``segments_left`` hears how many segments the rescan after an unclean stop has still to do."""
    directory, config, now = log_.dir, log_.config, log_.clock()
    log_.segments = [Segment(directory, base, config, now, size=size) for base, size in clean_directory(directory)]
    replay_from = None
    if log_.segments and not clean:
        replay_from = log_.segments[_first_rescanned(log_.segments, recovery_point)].base_offset
        log_.segments = recover_from(log_.segments, recovery_point, log_.name, segments_left)
    if not log_.segments:
        log_.segments = [Segment.create(directory, log_start_offset, config, now)]
    log_._set_jitter(log_.active)
    log_._log_start_offset = max(log_start_offset, log_.segments[0].base_offset)
    if log_._log_start_offset > log_.segments[0].base_offset and log_.log_end_offset < log_._log_start_offset:
        log.warning("%s: every segment is below the log start offset %d", log_.name, log_._log_start_offset)
        log_._reset_to(log_._log_start_offset)
    # After a clean stop everything is on disk: the recovery point is the log end offset,
    # found when first needed so that opening reads no segment.
    log_._recovery_point = None if clean else min(recovery_point, log_.log_end_offset)
    if not clean or _snapshot_is_stale(log_):
        log_.rebuild_producer_state(replay_from)


def _snapshot_is_stale(log_: "Log") -> bool:
    """After a clean stop: load the newest valid snapshot; True when batches after it must be replayed.

    As Kafka's ``rebuildProducerState``: no snapshot file at all means nothing
    to replay. A clean stop wrote one at the log end offset; if the newest
    was corrupt (deleted, an older one loaded) or the one loaded is not past
    the active segment's base (a roll's snapshot, the stop's one lost), the
    batches after it are replayed. A lost stop snapshot with an older one
    inside a non-empty active segment is not noticed (that needs the log end
    offset, which reads the active segment: a clean open reads none).
    """
    state, active = log_.producer_state, log_.active
    files = state.snapshot_offsets()
    if not files:
        return False
    loaded = state.load_snapshot(LONG_MAX, log_.clock())
    return loaded < files[-1] or loaded < active.base_offset or (loaded == active.base_offset and active.size > 0)


def clean_directory(directory: Path) -> list[tuple[int, int]]:
    names = [entry.name for entry in os.scandir(directory) if entry.is_file()]
    cleaned = [o for n in names if n.endswith(CLEANED) and (o := offset_of(n)) is not None]
    low_cleaned = min(cleaned, default=None)
    swaps: list[str] = []
    for name in names:
        if name.endswith((DELETED, CLEANED)) or name.endswith(".tmp"):
            _remove(directory / name, "leftover temporary file")
        elif name.endswith(SWAP):
            base = offset_of(name)
            if base is None or (low_cleaned is not None and base >= low_cleaned):
                _remove(directory / name, "swap file of an unfinished split")
            elif not name.endswith((LOG + SWAP, TXN_INDEX + SWAP)):
                _remove(directory / name, "index swap file (indexes are rebuilt, as Kafka did)", logging.INFO)
            else:
                swaps.append(name)
    if swaps:
        _finish_swaps(directory, swaps)
    return _remaining_logs(directory)


def _finish_swaps(directory: Path, swaps: list[str]) -> None:
    log_swaps = [n for n in swaps if n.endswith(LOG + SWAP)]
    if log_swaps:  # a lone .txnindex.swap: its .log was already renamed, nothing is replaced
        low = min((offset_of(n) or 0) for n in log_swaps)
        high = max(max(_next_offset_of(directory / n) for n in log_swaps), low + 1)
        segment_files = (LOG, INDEX, TIME_INDEX, TXN_INDEX)
        for entry in os.scandir(directory):
            base = offset_of(entry.name)
            if base is not None and low <= base < high and entry.name.endswith(segment_files):
                _remove(Path(entry.path), f"segment replaced by an interrupted swap [{low}, {high})")
    for name in swaps:
        (directory / name).rename(directory / name[: -len(SWAP)])
        log.warning("%s: finished the interrupted swap of %s", directory.name, name)


def _next_offset_of(path: Path) -> int:
    """Offset after the last whole batch of a ``.log`` file, read from batch headers only."""
    next_offset = offset_of(path) or 0
    with open(path, "rb") as f:
        size, pos = os.fstat(f.fileno()).st_size, 0
        while (batch := peek_batch(f.fileno(), pos, size)) is not None and pos + batch[1] <= size:
            next_offset = max(next_offset, batch[0] + 1)
            pos += batch[1]
    return next_offset


def _remaining_logs(directory: Path) -> list[tuple[int, int]]:
    entries = list(os.scandir(directory))
    logs = {o: e for e in entries if e.name.endswith(LOG) and (o := offset_of(e.name)) is not None}
    for entry in entries:
        if entry.name.endswith((INDEX, TIME_INDEX, TXN_INDEX)) and offset_of(entry.name) not in logs:
            _remove(directory / entry.name, "orphan index file")
    return [(base, logs[base].stat().st_size) for base in sorted(logs)]


def _remove(path: Path, why: str, level: int = logging.DEBUG) -> None:
    """Delete a file the last run left; at DEBUG, as Kafka's LogLoader deletes stray ``.deleted``/``.cleaned``
    files and invalid swap files (a stop within ``log.segment.delete.delay.ms`` of a deletion leaves them)."""
    log.log(level, "%s: deleting %s (%s)", path.parent.name, path.name, why)
    path.unlink(missing_ok=True)


def _first_rescanned(segments: list[Any], recovery_point: int) -> int:
    """Index of the segment holding ``recovery_point`` (the last based at or below it; the first if none)."""
    return max((i for i, seg in enumerate(segments) if seg.base_offset <= recovery_point), default=0)


def recover_from(segments: list[Any], recovery_point: int, name: str,
                 segments_left: Callable[[int], None] | None = None) -> list[Any]:
    """Rescan segments from the one holding ``recovery_point``; returns the segments kept.

    As Kafka's ``recoverLog``: a segment at or above the recovery point that
    loses bytes ends the log, and the later (unflushed) segments are deleted.
    A segment below it, flushed, gets the cheap check of its lazy load (index,
    tail walk, time index); one found damaged is recovered (cut at its first
    bad batch) alone, as Kafka's ``recoverSegment`` after a failed sanity
    check, and the flushed segments after it are kept. Offset gaps between
    segments are normal (compaction, empty cleaned segments) and never checked.
    ``segments_left`` hears the count of segments from the recovery point on
    not rescanned yet, before the first and after each (0 after a truncation),
    as Kafka's ``recoverLog`` keeps it for ``remainingSegmentsToRecover``.
    """
    start = _first_rescanned(segments, recovery_point)
    left = segments_left or (lambda _n: None)
    for seg in segments[:start]:
        seg.next_offset  # loads it: the index, the tail walk, a recovery if it is damaged
        if seg.damaged:
            log.warning("%s: recovered %s, damaged below the recovery point; later segments kept", name, seg.path.name)
    for seg in segments[start:]:
        seg.txn_index.reset()  # rebuilt by the producer state replay (``log_txn.rebuild``), as Kafka's recover does
    left(len(segments) - start)
    for i in range(start, len(segments)):
        dropped = segments[i].recover()
        left(0 if dropped else len(segments) - i - 1)
        if dropped:
            log.warning("%s: truncated %d bytes in %s", name, dropped, segments[i].path.name)
            for later in segments[i + 1 :]:
                log.warning("%s: deleting %s, which followed the truncation", name, later.path.name)
                later.delete_files()
            return segments[: i + 1]
    return segments
