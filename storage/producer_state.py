"""Idempotent and transactional producers: per-partition producer state, after Kafka's ProducerStateManager.

For every producer id that wrote to the partition we keep its epoch, the
metadata of its last five batches (first/last sequence, first/last offset,
max timestamp), the time of its last write, the coordinator epoch of its
last marker and the first offset of its open transaction. ``check(batch)`` applies
Kafka's rules to an incoming v2 batch *before* it is written:

* a batch whose epoch and sequence range equal one of the last five is a
  **duplicate** (a producer retry): it is not written again and the producer
  is answered with the original offsets (``Duplicate``);
* an epoch below the producer's current one is fenced: INVALID_PRODUCER_EPOCH;
* a new (higher) epoch must start at sequence 0, unless the producer is
  unknown: OUT_OF_ORDER_SEQUENCE_NUMBER otherwise;
* in the same epoch the first sequence must follow the last one (wrapping
  after Int32.MAX): OUT_OF_ORDER_SEQUENCE_NUMBER otherwise. A producer the
  partition no longer knows (never seen, expired, or removed by retention) may
  start at any sequence, as in Kafka since KIP-360;
* a batch in the producer's epoch when the entry holds no batch (a marker
  bumped the epoch) must start at sequence 0;
* a non-transactional batch while the producer's transaction is open is
  INVALID_TXN_STATE.

``check_marker(producer_id, epoch, coordinator_epoch)`` applies Kafka's checks
to a COMMIT/ABORT marker a coordinator (or an admin client, WriteTxnMarkers)
asks to write, *before* it is written (``appendEndTxnMarker``, origin
COORDINATOR): an epoch below the producer's is INVALID_PRODUCER_EPOCH (for
a marker of transaction version 2, KIP-1228, an equal one too while the
producer's transaction is open), a coordinator epoch below the one of the
producer's last marker is TRANSACTION_COORDINATOR_FENCED; a producer the
partition does not know passes.

``update(batch)`` records an appended data batch; a transactional one starts
the producer's transaction at its first offset when none is open.
``end_txn(marker)`` applies a COMMIT/ABORT marker (Kafka's
``appendEndTxnMarker`` + ``completeTxn``): a higher epoch replaces the
entry's epoch and clears its batches, the coordinator epoch is kept, the
transaction is closed, and for an ABORT the ``AbortedTxn`` for the
segment's ``.txnindex`` is returned, whose last stable offset is the first
offset of the oldest open transaction of *another* producer, or the marker
offset + 1 (Kafka's ``lastStableOffset(completedTxn)``). A marker for a
producer with no open transaction changes only epoch, coordinator epoch and
time. ``first_unstable_offset(high_watermark)`` is the first offset of the
oldest open transaction, or of a completed one whose marker is not yet below
the high watermark (durable mode: not yet fsynced), as Kafka counts
unreplicated transactions. A producer is expired once ``producer.id.expiration.ms``
has passed since its last timestamp (``now - last >= expiration``, Kafka's
``isProducerExpired``), never while its transaction is open: ``expire`` (the
broker's periodic check) forgets such producers, and loading a snapshot with
the current time leaves them out, as Kafka's ``loadFromSnapshot`` does.

Snapshots (``<20-digit offset>.snapshot``) are written at each segment roll
and at a clean stop, in Kafka's layout (version, CRC-32C, then one entry per
producer: its last batch, coordinator epoch and open transaction's first
offset, -1 when none; an entry with no batch has last sequence and offset -1,
delta 0). Loading takes the newest valid snapshot at or below the log end
offset (a corrupt one is deleted, as Kafka does) and replays the batches
after it, so state survives restarts and crashes; only the last batch of
each producer survives a restart (Kafka's snapshot keeps no more). The two
newest snapshots are kept. A stop's snapshot is fsynced before it takes its
name, then the directory; a roll's is fsynced by the log's next flush
(``flush_snapshots``), as Kafka defers it.
"""

from __future__ import annotations

import collections
import logging
import os
import struct
from pathlib import Path
from typing import Any, Iterable

import attrs
import crc32c

from protocol import ErrorCode
from protocol.records.control import ABORT, read_marker
from protocol.records.v2 import HEADER, TRANSACTIONAL_FLAG

from . import fileops
from .checkpoint import fsync_dir
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)

SNAPSHOT = ".snapshot"
INT32_MAX = 2**31 - 1
_BATCHES_KEPT = 5
_HEADER = struct.Struct(">hI")  # version, crc (over everything after it)
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")  # pid, epoch, last seq, last offset, offset delta, timestamp, coord epoch, txn


@attrs.frozen
class BatchInfo:
    """What producer state needs of a v2 batch (all in its header)."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int
    transactional: bool = False

    @classmethod
    def of(cls, view: Any) -> "BatchInfo":
        """From a ``RecordBatchView``."""
        return cls.from_fields(view.producer_id, view.producer_epoch, view.base_sequence, view.base_offset,
                               view.last_offset_delta, view.max_timestamp, view.is_transactional)  # fmt: skip

    @classmethod
    def from_header(cls, head: bytes) -> "BatchInfo":
        """From the first 61 bytes of a v2 batch (the header is enough)."""
        base, _len, _e, _m, _crc, attrs_, delta, _bt, max_ts, pid, epoch, seq, _n = HEADER.unpack_from(head)
        return cls.from_fields(pid, epoch, seq, base, delta, max_ts, bool(attrs_ & TRANSACTIONAL_FLAG))

    @classmethod
    def from_fields(cls, pid: int, epoch: int, seq: int, base: int, delta: int, max_ts: int,
                    transactional: bool = False) -> "BatchInfo":  # fmt: skip
        last_seq = seq + delta
        if last_seq > INT32_MAX:
            last_seq -= INT32_MAX + 1
        return cls(pid, epoch, seq, last_seq, base, base + delta, max_ts, transactional)


@attrs.frozen
class Marker:
    """What producer state needs of a COMMIT/ABORT marker (a control batch with its record)."""

    producer_id: int
    epoch: int
    offset: int
    control_type: int
    coordinator_epoch: int
    timestamp: int

    @classmethod
    def of(cls, view: Any) -> "Marker | None":
        """From a control ``RecordBatchView``; None when its record is gone (the cleaner emptied it) or unreadable."""
        marker = read_marker(view.buffer)
        if marker is None:
            return None
        kind, coordinator_epoch, timestamp = marker
        return cls(view.producer_id, view.producer_epoch, view.base_offset, kind, coordinator_epoch, timestamp)


@attrs.frozen
class Duplicate:
    """A retried batch already in the log: answer with its offsets, write nothing."""

    first_offset: int
    last_offset: int
    timestamp: int


@attrs.define
class ProducerEntry:
    epoch: int
    batches: collections.deque = attrs.field(factory=lambda: collections.deque(maxlen=_BATCHES_KEPT))
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    coordinator_epoch: int = -1

    def set_epoch(self, epoch: int) -> None:
        """A new epoch forgets the batches of the old one (Kafka's ``maybeUpdateProducerEpoch``)."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    def __init__(self, directory: Path, expiration_ms: int = 86_400_000) -> None:
        self.dir = directory
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.unreplicated: dict[int, int] = {}  # first -> marker offset of completed transactions above the HW
        self.unsynced_snapshots: list[int] = []  # offsets of snapshots written without an fsync (a roll's)

    # -- the produce path ------------------------------------------------------------

    def check(self, batch: BatchInfo) -> Duplicate | ErrorCode | None:
        """Kafka's checks for one idempotent batch; None when it may be appended."""
        entry = self.producers.get(batch.producer_id)
        if entry is None:
            return None
        if batch.epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if batch.epoch == entry.epoch:
            for old in entry.batches:
                if (old.first_seq, old.last_seq) == (batch.first_seq, batch.last_seq):
                    return Duplicate(old.first_offset, old.last_offset, old.timestamp)
            last_seq = entry.last_seq if entry.batches else -1  # no batch in this epoch: it starts at 0
            if entry.epoch >= 0 and not _in_sequence(last_seq, batch.first_seq):
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        elif batch.first_seq != 0:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        if entry.current_txn_first_offset is not None and not batch.transactional:
            return ErrorCode.INVALID_TXN_STATE
        return None

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int,
                     transaction_version: int = 0) -> ErrorCode | None:  # fmt: skip
        """Kafka's checks for a COMMIT/ABORT marker of ``producer_id``; None when it may be appended.

        A marker of transaction version 2 (KIP-1228) carries an epoch its coordinator bumped, so it must be
        above the producer's, except a retry of the marker that ended the transaction (same epoch, no
        transaction open), which Kafka lets through; before version 2 the epoch may equal the producer's."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        if epoch < entry.epoch or (transaction_version >= 2 and epoch == entry.epoch
                                   and entry.current_txn_first_offset is not None):  # fmt: skip
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if coordinator_epoch < entry.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return None

    def update(self, batch: BatchInfo) -> None:
        """Record an appended data batch; a transactional one may open the producer's transaction."""
        entry = self.producers.get(batch.producer_id)
        if entry is None:
            entry = self.producers[batch.producer_id] = ProducerEntry(batch.epoch)
        entry.set_epoch(batch.epoch)
        entry.batches.append(batch)
        entry.last_timestamp = batch.timestamp  # the latest batch's, as Kafka's ProducerStateEntry.addBatch
        if batch.transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = batch.first_offset
            self.ongoing[batch.producer_id] = batch.first_offset

    def end_txn(self, marker: Marker) -> AbortedTxn | None:
        """Apply an appended COMMIT/ABORT marker; the ``.txnindex`` entry of an aborted transaction, else None."""
        pid = marker.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(marker.epoch)
        entry.set_epoch(marker.epoch)
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.last_timestamp = marker.timestamp  # the marker's, as ProducerAppendInfo.appendEndTxnMarker
        first, entry.current_txn_first_offset = entry.current_txn_first_offset, None
        if first is None:
            return None
        self.ongoing.pop(pid, None)
        self.unreplicated[first] = marker.offset
        if marker.control_type != ABORT:
            return None
        # the LSO once this one is done: the oldest transaction still open (of another producer)
        return AbortedTxn(pid, first, marker.offset, min(self.ongoing.values(), default=marker.offset + 1))

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """First offset of the oldest transaction that is open, or whose marker is not below ``high_watermark``."""
        firsts = list(self.ongoing.values())
        firsts += [first for first, last in list(self.unreplicated.items()) if last >= high_watermark]
        return min(firsts, default=None)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below the high watermark."""
        if self.unreplicated:
            self.unreplicated = {f: last for f, last in self.unreplicated.items() if last >= high_watermark}

    def expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        """Kafka's isProducerExpired: idle for ``producer.id.expiration.ms`` or more, no transaction open."""
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.expiration_ms

    def expire(self, now_ms: int) -> None:
        """Kafka's removeExpiredProducers: forget the expired producers."""
        for pid in [pid for pid, e in self.producers.items() if self.expired(e, now_ms)]:
            del self.producers[pid]

    def last_offsets(self, now_ms: int) -> dict[int, int]:
        """Live producer id -> last offset it wrote (the cleaner keeps that batch).

        Called from a cleaner thread: it reads a copy and changes nothing.
        """
        return {pid: e.last_offset for pid, e in list(self.producers.items())
                if e.last_offset >= 0 and not self.expired(e, now_ms)}  # fmt: skip

    def clear(self) -> None:
        self.producers, self.ongoing, self.unreplicated = {}, {}, {}

    # -- snapshots ---------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> Path:
        return self.dir / f"{offset:020d}{SNAPSHOT}"

    def write_snapshot(self, offset: int, *, sync: bool = True) -> None:
        """Write the snapshot at ``offset`` through a temporary file; ``sync``: fsync it and the directory
        (Kafka's ``writeSnapshot(..., sync)``), else ``flush_snapshots`` does (a roll's: off the append path)."""
        entries = [_pack_entry(pid, e) for pid, e in sorted(self.producers.items())]
        body = _COUNT.pack(len(entries)) + b"".join(entries)
        tmp = self.snapshot_path(offset).with_name(f"{offset:020d}{SNAPSHOT}.tmp")
        with open(tmp, "wb") as f:
            f.write(_HEADER.pack(1, crc32c.crc32c(body)) + body)
            if sync:
                f.flush()
                fileops.fsync(f.fileno())
        os.replace(tmp, self.snapshot_path(offset))
        if sync:
            fsync_dir(self.dir)
        else:
            self.unsynced_snapshots.append(offset)
        for old in self.snapshot_offsets()[:-2]:
            self.snapshot_path(old).unlink(missing_ok=True)

    def flush_snapshots(self) -> None:
        """fsync the snapshots written without it, then the directory (Kafka's ``flushProducerStateSnapshot``)."""
        if not self.unsynced_snapshots:
            return
        while self.unsynced_snapshots:
            fileops.fsync_if_exists(self.snapshot_path(self.unsynced_snapshots.pop()))
        fileops.fsync_if_exists(self.dir)  # gone if the topic was deleted meanwhile (Kafka's flushDirIfExists)

    def snapshot_offsets(self) -> list[int]:
        names = (p.name for p in self.dir.iterdir() if p.name.endswith(SNAPSHOT))
        return sorted(int(n[:20]) for n in names if len(n) == 20 + len(SNAPSHOT) and n[:20].isdigit())

    def load_snapshot(self, max_offset: int, now_ms: int, *, stale_above: int | None = None) -> int:
        """Load the newest valid snapshot at or below ``max_offset`` (corrupt newer ones are deleted, and those
        above ``stale_above``, by default ``max_offset``: from beyond a cut log), without the producers expired
        at ``now_ms``; returns its offset (-1 if none)."""
        stale_above = max_offset if stale_above is None else stale_above
        for offset in reversed(self.snapshot_offsets()):
            if offset > stale_above:
                self.snapshot_path(offset).unlink(missing_ok=True)
            if offset > max_offset:
                continue
            if self._read_snapshot(self.snapshot_path(offset), now_ms):
                return offset
            log.warning("%s: deleting the corrupt producer snapshot %020d%s", self.dir.name, offset, SNAPSHOT)
            self.snapshot_path(offset).unlink(missing_ok=True)  # as Kafka's loadFromSnapshot does
        return -1

    def _read_snapshot(self, path: Path, now_ms: int) -> bool:
        data = path.read_bytes()
        if len(data) < _HEADER.size + _COUNT.size:
            return False
        version, crc = _HEADER.unpack_from(data)
        body = data[_HEADER.size :]
        if version != 1 or crc32c.crc32c(body) != crc or len(body) != _COUNT.size + _COUNT.unpack_from(body)[0] * _ENTRY.size:
            return False
        self.clear()
        for fields in _ENTRY.iter_unpack(body[_COUNT.size :]):
            pid, entry = _unpack_entry(*fields)
            if self.expired(entry, now_ms):
                continue
            self.producers[pid] = entry
            if entry.current_txn_first_offset is not None:
                self.ongoing[pid] = entry.current_txn_first_offset
        return True

    def replay(self, items: Iterable[BatchInfo | Marker]) -> list[AbortedTxn]:
        """Apply batches and markers read back from the log; the aborted transactions their markers end."""
        aborted = []
        for item in items:
            if isinstance(item, Marker):
                txn = self.end_txn(item)
                if txn is not None:
                    aborted.append(txn)
            elif item.producer_id >= 0:
                self.update(item)
        return aborted


def _pack_entry(pid: int, e: ProducerEntry) -> bytes:
    last = e.batches[-1] if e.batches else None
    delta = last.last_offset - last.first_offset if last is not None else 0
    txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
    return _ENTRY.pack(pid, e.epoch, e.last_seq, e.last_offset, delta, e.last_timestamp, e.coordinator_epoch, txn)


def _unpack_entry(pid: int, epoch: int, last_seq: int, last_offset: int, delta: int, ts: int, coordinator_epoch: int,
                  txn_first: int) -> tuple[int, ProducerEntry]:  # fmt: skip
    entry = ProducerEntry(epoch, last_timestamp=ts, coordinator_epoch=coordinator_epoch,
                          current_txn_first_offset=txn_first if txn_first >= 0 else None)  # fmt: skip
    if last_offset >= 0:
        first_seq = last_seq - delta if last_seq - delta >= 0 else last_seq - delta + INT32_MAX + 1
        entry.batches.append(BatchInfo(pid, epoch, first_seq, last_seq, last_offset - delta, last_offset, ts))
    return pid, entry
