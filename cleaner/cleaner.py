"""One cleaning round of one log: Kafka's ``Cleaner.doClean`` (pass 1 map, pass 2 recopy, swap).

``Cleaner.clean(todo)`` runs on a cleaner thread:

1. **Pass 1** (``_build_map``): walk the dirty section, [first dirty offset,
   first uncleanable offset), entry by entry, putting ``key -> offset`` for
   every keyed record at or above the first dirty offset. Control batches and
   batches of aborted transactions (``Log.aborted_transactions`` over the
   section, followed by ``transactions.CleanedTransactions``) stay out of the
   map, so an aborted write never shadows an older committed value. No entry
   at or past the first uncleanable offset is read (it is at most the last
   stable offset: an undecided transaction is never cleaned). Before an entry
   that would overfill the map, stop: the round
   then ends at ``latest_offset + 1`` and the next round continues from there.
   At the end of each whole segment ``latest_offset`` moves to the next
   segment's base offset - 1, as in Kafka.
2. **Pass 2**: every inactive segment below that end, the already-clean
   prefix included, is grouped greedily (sum of sizes <= ``segment.bytes``,
   index entries within ``segment.index.bytes``, offset span <= Int32.MAX)
   and each group is recopied through a
   ``BatchFilter`` into ``<base>.log.cleaned`` with freshly written
   ``.index.cleaned``/``.timeindex.cleaned``, fsynced, given the mtime of the
   group's last source segment. The filter is told each source segment's
   aborted transactions before reading it (one transaction state for the
   whole pass, as Kafka's); the ABORT markers it keeps are written to
   ``<base>.txnindex.cleaned``, which moves with the segment.
3. **Swap**, group by group: ``owner(fn)`` runs ``Log.replace_segments`` on
   the thread that owns the log (the broker's trio thread; directly in tests),
   so appends and fetches wait for the renames only, never for the copy. If
   the log lost any source segment meanwhile (retention, DeleteRecords,
   topic deletion) the round is abandoned silently, as Kafka aborts.
   The directory is fsynced afterwards, on the cleaner thread.
4. ``on_done(end_offset)`` records the new first dirty offset
   (``cleaner-offset-checkpoint``), also on the cleaner thread.

Statistics follow Kafka's ``CleanerStats``: ``map_bytes_read`` counts the
entries pass 1 reads (``mapBytesRead``), ``bytes_read`` those pass 2 reads
(``bytesRead``, the "start size" of the round; the recopy percent's
denominator), ``bytes_written`` what pass 2 writes.

Between small steps (a batch, a slice of a batch's records) the round calls
``gate.pause()``, which blocks while the broker's thread is answering
requests (``cleaner.gate``). The clock, the offset map, the throttle, the
gate, ``owner`` and ``should_abort`` are injected, so tests drive rounds
deterministically and inject failures.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from protocol.records import RecordBatchView
from protocol.records.skim import skim_v2_columns
from storage.batch_files import iter_entries
from storage.checkpoint import fsync_dir
from storage.file_names import CLEANED, cleaned_log_path, cleaned_txn_index_path
from storage.index import OffsetIndex, TimeIndex
from storage.txn_index import write_txn_index

from .gate import RequestGate
from .offset_map import GIL_SLICE, SHORT_KEY, OffsetMap
from .recopy import BatchFilter, CleanerStats
from .selection import LogToClean
from storage.throttle import Throttler
from .transactions import CleanedTransactions

INT_MAX = 2**31 - 1


class CleaningAborted(Exception):
    """The log changed under the round (deleted, truncated, segments removed); nothing was swapped."""


def run_here(fn: Callable[[], Any]) -> Any:
    return fn()


class Cleaner:
    def __init__(self, offset_map: OffsetMap, *, clock: Callable[[], int], throttler: Throttler | None = None,
                 io_buffer_size: int = 512 << 10, owner: Callable[[Callable[[], Any]], Any] = run_here,
                 should_abort: Callable[[Any], bool] = lambda _log: False,
                 gate: RequestGate | None = None) -> None:  # fmt: skip
        self.map = offset_map
        self.gate = gate or RequestGate()
        self.clock = clock
        self.throttler = throttler or Throttler(float("inf"))
        self.chunk = max(64 << 10, io_buffer_size // 2)
        self.owner = owner
        self.should_abort = should_abort
        self.stats = CleanerStats()

    def _check_abort(self, log_: Any) -> None:
        if self.should_abort(log_):
            raise CleaningAborted(log_.name)

    def clean(self, todo: LogToClean, on_done: Callable[[int], None]) -> CleanerStats:
        """One round over ``todo.log``; returns its statistics (also kept in ``self.stats``)."""
        started = time.monotonic()
        log_, now = todo.log, self.clock()
        self.stats = CleanerStats()
        self.map.clear()
        segments = list(log_.segments)[:-1]
        end = self._build_map(log_, segments, todo.first_dirty_offset, todo.first_uncleanable_offset)
        self.stats.map_records, self.stats.map_utilization = len(self.map), self.map.utilization
        retain_batches, retain_markers = _live_producers(log_, now)
        filt = BatchFilter(self.map, now=now, delete_retention_ms=log_.config.delete_retention_ms,
                           retain_batches=retain_batches, retain_markers=retain_markers, round_end=end,
                           stats=self.stats, pause=self.gate.pause)  # fmt: skip
        for group in group_segments([s for s in segments if s.base_offset < end], log_.config):
            self._check_abort(log_)
            paths = self._write_group(log_, group, filt)
            self.owner(lambda g=group, p=paths: _swap(log_, g, p, self.should_abort))
            fsync_dir(log_.dir)
        self.stats.invalid_records += self.map.keyless
        self.stats.end_offset = end
        on_done(end)  # the checkpoint file has its own lock: written here, not on the owner's thread
        self.stats.elapsed_s = time.monotonic() - started
        return self.stats

    # -- pass 1 ------------------------------------------------------------------------

    def _build_map(self, log_: Any, segments: list, first_dirty: int, uncleanable: int) -> int:
        self.map.begin(first_dirty)
        txns = CleanedTransactions()
        txns.add_aborted(log_.aborted_transactions(first_dirty, uncleanable))
        for i, seg in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else uncleanable
            if next_base <= first_dirty or seg.base_offset >= uncleanable:
                continue
            self._check_abort(log_)
            if self._map_segment(seg, first_dirty, uncleanable, txns):
                break
            self.map.latest_offset = max(self.map.latest_offset, min(next_base, uncleanable) - 1)
        return self.map.latest_offset + 1

    def _map_segment(self, seg: Any, first_dirty: int, uncleanable: int, txns: CleanedTransactions) -> bool:
        """Map one segment's keys; True when the map filled up before its end."""
        latest, pause = self.map.latest_offset, self.gate.pause
        for entry in iter_entries(seg.handle, seg.size, self.chunk, self.throttler.maybe_throttle):
            pause()
            if entry.last_offset < first_dirty:
                continue
            if entry.base_offset >= uncleanable:
                break
            self.stats.map_bytes_read += entry.size_in_bytes
            if _not_mapped(entry, txns):
                pass
            elif not self.map.has_room_for(entry.records_count) and len(self.map):
                return True
            elif entry.magic == 2:
                _map_v2(self.map, entry, first_dirty, pause)
            else:
                for offset, _ts, key, _v, _h, _a in entry.iter_tuples():
                    if key is not None and offset >= first_dirty:
                        self.map.put(key, offset)
            latest = self.map.latest_offset = max(latest, entry.last_offset)
        return False

    # -- pass 2 ------------------------------------------------------------------------

    def _write_group(self, log_: Any, group: list, filt: BatchFilter) -> list:
        base, config = group[0].base_offset, log_.config
        log_path = cleaned_log_path(log_.dir, base)
        paths = [log_path] + [log_path.with_name(f"{base:020d}{ext}{CLEANED}") for ext in (".index", ".timeindex")]
        writer = _SegmentWriter(paths, base, config)
        filt.txns.kept_aborted = []
        try:
            for i, seg in enumerate(group):
                upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
                filt.txns.add_aborted(log_.aborted_transactions(seg.base_offset, upper))
                for entry in iter_entries(seg.handle, seg.size, self.chunk, self.throttler.maybe_throttle):
                    self.gate.pause()
                    self.stats.bytes_read += entry.size_in_bytes
                    data = filt.filter(entry)
                    if data is not None:
                        writer.write(data, entry if data is entry.buffer else None)
                        self.throttler.maybe_throttle(len(data))
                self._check_abort(log_)
            writer.finish(os.stat(group[-1].path).st_mtime)
            txn_path = cleaned_txn_index_path(log_.dir, base)
            paths.append(txn_path)  # removed with the others if the swap is abandoned
            write_txn_index(txn_path, filt.txns.kept_aborted)
        except BaseException:
            writer.discard()
            raise
        self.stats.bytes_written += writer.position
        self.stats.segments_written += 1
        return paths


def _map_v2(offset_map: OffsetMap, batch: Any, first_dirty: int, pause: Callable[[], None]) -> None:
    base = batch.base_offset
    payload = batch.records_payload()
    deltas, keys, starts = skim_v2_columns(payload, batch.records_count, pause)
    if not keys:
        return
    contiguous = deltas[0] == 0 and deltas[-1] == len(deltas) - 1
    if contiguous and base >= first_dirty and None not in keys and max(map(len, keys)) <= SHORT_KEY:
        for i in range(0, len(keys), GIL_SLICE):  # the common case, a slice at a time
            offset_map.put_run(keys[i : i + GIL_SLICE], base + i)
            pause()
    else:
        for delta, key in zip(deltas, keys):
            if key is not None and base + delta >= first_dirty:
                offset_map.put(key, base + delta)
    if contiguous and base >= first_dirty and not batch.has_delete_horizon:
        if offset_map.remember_positions(base, starts, len(payload)):
            offset_map.keyless += keys.count(None)


def _live_producers(log_: Any, now: int) -> tuple[set[int], dict[int, int]]:
    """Kafka's lastRecordsOfActiveProducers: the last data offsets of live producers, and the epochs of
    those whose last entry is a marker (no data batch left), whose marker then carries the epoch."""
    state = getattr(log_, "producer_state", None)
    if state is None:
        return set(), {}
    markers = {pid: e.epoch for pid, e in list(state.producers.items())
               if e.last_offset < 0 and not state.expired(e, now)}  # fmt: skip
    return set(state.last_offsets(now).values()), markers


def _not_mapped(entry: Any, txns: CleanedTransactions) -> bool:
    """Control batches and data of aborted transactions stay out of the map; the transaction state follows both."""
    if entry.magic != 2:
        return False
    if entry.is_control:
        txns.on_control_batch(entry)
        return True
    return txns.on_data_batch(entry)


def group_segments(segments: list, config: Any) -> list[list]:
    """Kafka's groupSegmentsBySize: consecutive segments whose sizes sum to at most ``segment.bytes``,
    whose offset and time index entries each fit ``segment.index.bytes``, spanning at most Int32.MAX offsets."""
    groups, i = [], 0
    while i < len(segments):
        group, size, indexes = [segments[i]], segments[i].size, segments[i].index_sizes
        j = i + 1
        while j < len(segments) and size + segments[j].size <= config.segment_bytes:
            more = [a + b for a, b in zip(indexes, segments[j].index_sizes)]
            span_end = segments[j + 1].base_offset if j + 1 < len(segments) else segments[j].next_offset
            if max(more) > config.segment_index_bytes or span_end - 1 - group[0].base_offset > INT_MAX:
                break
            group.append(segments[j])
            size, indexes = size + segments[j].size, more
            j += 1
        groups.append(group)
        i = j
    return groups


def _swap(log_: Any, group: list, paths: list, should_abort: Callable[[Any], bool]) -> None:
    """On the owner thread: give up if a source segment is gone, else swap the cleaned files in."""
    if log_.deleted or should_abort(log_) or any(seg not in log_.segments[:-1] for seg in group):
        for path in paths:
            path.unlink(missing_ok=True)
        raise CleaningAborted(f"{log_.name}: segments changed during cleaning")
    log_.replace_segments(paths[0], group, indexed=True, sync_dir=False)


class _SegmentWriter:
    """Writes a cleaned ``.log`` and its two indexes, with Kafka's index-entry rule."""

    def __init__(self, paths: list, base: int, config: Any) -> None:
        self.paths, self.base, self.interval = paths, base, config.index_interval_bytes
        self.index = OffsetIndex(paths[1], base, config.segment_index_bytes)
        self.time_index = TimeIndex(paths[2], base, config.segment_index_bytes)
        self.file = None
        try:
            self.index.preallocate()
            self.time_index.preallocate()
            self.file = open(paths[0], "wb")
        except BaseException:
            self.discard()
            raise
        self.position = self.last_index_position = 0
        self.max_ts, self.offset_of_max_ts = -1, base

    def write(self, data: Any, view: Any) -> None:
        view = view if view is not None else RecordBatchView(data)
        if view.max_timestamp > self.max_ts:
            self.max_ts, self.offset_of_max_ts = view.max_timestamp, view.last_offset
        if self.position - self.last_index_position > self.interval:
            self.index.append(view.last_offset, self.position)
            self.time_index.maybe_append(self.max_ts, self.offset_of_max_ts)
            self.last_index_position = self.position
        self.file.write(data)
        self.position += len(data)

    def finish(self, mtime: float) -> None:
        self.time_index.maybe_append(self.max_ts, self.offset_of_max_ts, skip_full_check=True)
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        for index in (self.index, self.time_index):
            index.flush()
            index.trim()
        os.utime(self.paths[0], (mtime, mtime))

    def discard(self) -> None:
        if self.file is not None:
            self.file.close()
        for index in (self.index, self.time_index):
            index.delete()
        for path in self.paths:
            path.unlink(missing_ok=True)
