"""Pass 2 of a cleaning round, one batch at a time: which records survive, and the bytes to write.

``BatchFilter.filter(entry)`` returns the bytes that replace one log entry in
the cleaned segment, or ``None`` to drop it. The rules are Kafka's
(``LogCleaner.cleanInto``/``MemoryRecords.filterTo``), with one shared
tombstone test, ``protocol.records.is_tombstone``'s (a null value, or the
KIP-87 flag in the record attributes):

* a record past ``offset_map.latest_offset`` (not covered by this round) is kept;
* a keyless record in the covered range is dropped (counted as invalid);
* a record older than the map's offset for its key is dropped;
* a tombstone is kept while its batch has no delete horizon yet, or while
  ``now`` is before the horizon; the first time a batch keeping a tombstone is
  rewritten it gets one (KIP-534: attributes bit 6, ``baseTimestamp`` =
  cleaning start + ``delete.retention.ms``, record timestamp deltas rebased);
* a batch that keeps every record and needs no horizon is copied unchanged;
  otherwise it is rebuilt with the same base offset, last offset, codec,
  producer fields and leader epoch (the kept records' bytes are spliced, no
  re-encoding, unless the timestamps must be rebased for a new horizon);
  ``max_timestamp`` is the kept records' newest timestamp (a LogAppendTime
  batch keeps its append time), as Kafka's rebuilt batch has it;
* a batch left empty is dropped, unless it is the last batch of a live
  producer (kept as a header-only batch so the producer's sequence and epoch
  survive), the marker a live producer wrote last when it has no data batch
  left to carry its epoch, or the round's last batch;
* transactions (``transactions.CleanedTransactions`` follows them batch by
  batch): a data batch of an aborted transaction is dropped whole, whatever
  its keys (or emptied, when it must stay); committed transactional data is
  data like any other; a marker is copied as it is while it is needed (an
  ABORT marker while batches of its transaction remain, a COMMIT marker while
  its transaction had a batch in this pass); once removable it gets a delete
  horizon as a tombstone would, and is dropped when the horizon has passed;
* legacy v0/v1 entries are always rewritten as v2 (KIP-724): an uncompressed
  message becomes a single-record batch, a compressed wrapper one batch.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from protocol.records import (
    Codec,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    compress,
    legacy_to_v2_batch,
)
from protocol.records.builder import write_v2_batch
from protocol.records.skim import TOMBSTONE_BIT, skim_v2_records
from protocol.records.varint import java_long, read_varint_fast, read_varlong_slow

from .offset_map import OffsetMap
from .transactions import CleanedTransactions


@attrs.define
class CleanerStats:
    """One round's figures: the filter counts records, the cleaner bytes, map use and time."""

    bytes_read: int = 0  # pass 2 (recopy) only, as Kafka's bytesRead
    bytes_written: int = 0
    map_bytes_read: int = 0  # pass 1, Kafka's mapBytesRead
    records_read: int = 0
    records_kept: int = 0
    invalid_records: int = 0
    batches_rebuilt: int = 0
    map_records: int = 0
    map_utilization: float = 0.0
    elapsed_s: float = 0.0
    end_offset: int = -1
    segments_written: int = 0


class BatchFilter:
    """Applies the keep rules of one round; see the module docstring."""

    def __init__(self, offset_map: OffsetMap, *, now: int, delete_retention_ms: int,
                 retain_batches: set[int], round_end: int, stats: CleanerStats | None = None,
                 pause: Callable[[], None] = lambda: None, retain_markers: dict[int, int] | None = None,
                 txns: CleanedTransactions | None = None) -> None:  # fmt: skip
        self.map = offset_map
        self.pause = pause
        self.now = now
        self.new_horizon = now + delete_retention_ms
        self.retain = retain_batches  # last offsets of batches kept even when emptied
        self.retain_markers = retain_markers or {}  # live producer id -> epoch, when its last entry is a marker
        self.txns = txns if txns is not None else CleanedTransactions()
        self.round_end = round_end
        self.stats = stats if stats is not None else CleanerStats()

    def filter(self, entry: Any) -> bytes | memoryview | None:
        if entry.magic != 2:
            entry = RecordBatchView(legacy_to_v2_batch(entry))
            out = self._filter_v2(entry)
            return bytes(entry.buffer) if out is entry.buffer else _kept_span(out)
        return self._filter_v2(entry)

    def _filter_v2(self, batch: RecordBatchView) -> bytes | memoryview | None:
        if batch.is_control:
            return self._filter_control(batch)
        if self.txns.on_data_batch(batch):  # aborted: no record survives, whatever its key
            self.stats.records_read += batch.records_count
            return self._emptied(batch)
        if batch.base_offset > self.map.latest_offset:
            self.stats.records_read += batch.records_count
            self.stats.records_kept += batch.records_count
            return batch.buffer
        payload = batch.records_payload()
        starts = self.map.positions.pop(batch.base_offset, None)
        if starts is not None and len(starts) == batch.records_count + 1 and \
                self.map.decides(batch.base_offset, batch.last_offset, self.pause):  # fmt: skip
            kept = self._kept_by_offset(batch.base_offset, starts)
        else:
            records = skim_v2_records(payload, batch.records_count, self.pause)
            kept = self._kept(batch.base_offset, records, batch.delete_horizon_ms)
        self.stats.records_read += batch.records_count
        self.stats.records_kept += len(kept)
        if not kept:  # an emptied batch, or one kept empty earlier, goes unless it must stay
            return self._emptied(batch)
        needs_horizon = batch.delete_horizon_ms is None and any(r[2] for r in kept)
        if len(kept) == batch.records_count and not needs_horizon:
            return batch.buffer
        self.stats.batches_rebuilt += 1
        if needs_horizon:
            return _rebuild(batch, {batch.base_offset + r[0] for r in kept}, self.new_horizon)
        return _splice(batch, payload, kept)

    def _kept_by_offset(self, base: int, starts) -> list:
        """Dirty batch fast path: a record survives when the map holds its offset (or it is past the round).

        Returns ``(offset_delta, None, is_tombstone, start, end)`` per kept record, from pass 1's
        positions; the key is not needed any more.
        """
        live, past = self.map.live_offsets(), self.map.latest_offset - base
        first = base - self.map.first_offset
        out = []
        for i in [i for i in range(len(starts) - 1) if i > past or live[first + i]]:
            start = starts[i]
            out.append((i, None, start >= TOMBSTONE_BIT, start & ~TOMBSTONE_BIT, starts[i + 1] & ~TOMBSTONE_BIT))
        return out

    def _kept(self, base: int, records: list, horizon: int | None) -> list:
        latest, get = self.map.latest_offset, self.map.get
        expired = horizon is not None and horizon <= self.now
        kept: list = []
        for record in records:
            delta, key, tombstone, _s, _e = record
            offset = base + delta
            if offset <= latest:
                if key is None:
                    self.stats.invalid_records += 1
                    continue
                if offset < get(key):
                    continue
                if tombstone and expired:
                    continue
            kept.append(record)
        return kept

    def _filter_control(self, batch: RecordBatchView) -> bytes | memoryview | None:
        """A transaction marker: kept while needed, then given a delete horizon, then dropped."""
        removable = self.txns.on_control_batch(batch)
        horizon = batch.delete_horizon_ms
        self.stats.records_read += batch.records_count
        if removable and batch.records_count and horizon is None:
            self.stats.records_kept += batch.records_count
            self.stats.batches_rebuilt += 1
            return _rebuild(batch, set(range(batch.base_offset, batch.next_offset)), self.new_horizon)
        if removable and (horizon is None or horizon <= self.now):
            return self._emptied(batch)
        self.stats.records_kept += batch.records_count
        return batch.buffer

    def _emptied(self, batch: RecordBatchView) -> bytes | memoryview | None:
        """A batch none of whose records survive: dropped, or kept as a header when it must stay."""
        if not self._must_retain(batch):
            return None
        return batch.buffer if batch.records_count == 0 else self._empty(batch)

    def _must_retain(self, batch: RecordBatchView) -> bool:
        if batch.is_control and self.retain_markers.get(batch.producer_id, -2) == batch.producer_epoch:
            return True
        return batch.last_offset in self.retain or batch.next_offset == self.round_end

    @staticmethod
    def _empty(batch: RecordBatchView) -> bytes:
        return RecordBatchBuilder.empty_batch(
            base_offset=batch.base_offset, last_offset=batch.last_offset, max_timestamp=batch.max_timestamp,
            timestamp_type=batch.timestamp_type, producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional, is_control=batch.is_control,
            partition_leader_epoch=batch.partition_leader_epoch, delete_horizon_ms=batch.delete_horizon_ms,
        )  # fmt: skip


def _splice(batch: RecordBatchView, payload: bytes, kept: list) -> bytes:
    """The batch with only ``kept`` records, their encoded bytes copied as they are."""
    max_timestamp = batch.max_timestamp
    if batch.timestamp_type != TimestampType.LOG_APPEND_TIME:
        base = batch.base_timestamp  # each timestamp wraps as Java's long does, so the max is taken after
        max_timestamp = max(java_long(base + _timestamp_delta(payload, start)) for _d, _k, _t, start, _e in kept)
    records = b"".join([payload[s:e] for _d, _k, _t, s, e in kept])
    if batch.compression is not Codec.NONE:
        records = compress(batch.compression, records, magic=2)
    fields = (
        batch.base_offset, 0, batch.partition_leader_epoch, 2, 0, batch.attributes, batch.last_offset_delta,
        batch.base_timestamp, max_timestamp, batch.producer_id, batch.producer_epoch,
        batch.base_sequence, len(kept),
    )  # fmt: skip
    return write_v2_batch(fields, records)


def _rebuild(batch: RecordBatchView, offsets: set[int], horizon: int) -> bytes:
    """The batch with the records at ``offsets``, re-encoded against the delete horizon ``horizon``."""
    lat = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    builder = RecordBatchBuilder(
        magic=2, compression=batch.compression, timestamp_type=batch.timestamp_type,
        base_offset=batch.base_offset, producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence, is_transactional=batch.is_transactional, is_control=batch.is_control,
        partition_leader_epoch=batch.partition_leader_epoch, delete_horizon_ms=horizon,
        log_append_time=batch.max_timestamp if lat else None,
    )  # fmt: skip
    for offset, timestamp, key, value, headers, attributes in batch.iter_tuples():
        if offset in offsets:
            builder.append(key, value, timestamp=timestamp, headers=headers, offset=offset, attributes=attributes)
    return builder.build(last_offset=batch.last_offset)


def _kept_span(out: bytes | memoryview | None) -> bytes | memoryview | None:
    """A legacy entry's survivors as Kafka's ``MemoryRecords.filterTo`` writes them: from the first record kept
    to the last (only a v2 batch keeps its own base and last offsets)."""
    if out is None:
        return None
    batch = RecordBatchView(out)
    offsets = [t[0] for t in batch.iter_tuples()]
    if not offsets or (offsets[0], offsets[-1]) == (batch.base_offset, batch.last_offset):
        return out
    lat = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    builder = RecordBatchBuilder(
        magic=2, compression=batch.compression, timestamp_type=batch.timestamp_type, base_offset=offsets[0],
        delete_horizon_ms=batch.delete_horizon_ms, log_append_time=batch.max_timestamp if lat else None,
    )  # fmt: skip
    for offset, timestamp, key, value, headers, attributes in batch.iter_tuples():
        builder.append(key, value, timestamp=timestamp, headers=headers, offset=offset, attributes=attributes)
    return builder.build()


def _timestamp_delta(payload: bytes, start: int) -> int:
    """The timestamp delta of the record at ``start``: after its length and its attributes byte."""
    _length, pos = read_varint_fast(payload, start)
    return read_varlong_slow(payload, pos + 1)[0]
