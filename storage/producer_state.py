"""Idempotent producers: per-partition producer state, after Kafka's ProducerStateManager.

For every producer id that wrote to the partition we keep its epoch, the
metadata of its last five batches (first/last sequence, first/last offset,
max timestamp) and the time of its last write. ``check(batch)`` applies
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
  start at any sequence, as in Kafka since KIP-360.

``update(batch)`` records an appended batch. Producers idle for longer than
``producer.id.expiration.ms`` are forgotten by ``expire``.

Snapshots (``<20-digit offset>.snapshot``) are written at each segment roll
and at a clean stop, in Kafka's layout (version, CRC-32C, then one entry per
producer with its last batch). ``load`` takes the newest snapshot at or below
the log end offset and replays the batch headers after it, so state survives
restarts and crashes; only the last batch of each producer survives a restart
(Kafka's snapshot keeps no more). The two newest snapshots are kept.
"""

from __future__ import annotations

import collections
import os
import struct
from pathlib import Path
from typing import Any, Iterable

import attrs
import crc32c

from protocol import ErrorCode
from protocol.records.v2 import HEADER

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

    @classmethod
    def of(cls, view: Any) -> "BatchInfo":
        """From a ``RecordBatchView``."""
        return cls.from_fields(view.producer_id, view.producer_epoch, view.base_sequence, view.base_offset,
                               view.last_offset_delta, view.max_timestamp)  # fmt: skip

    @classmethod
    def from_header(cls, head: bytes) -> "BatchInfo":
        """From the first 61 bytes of a v2 batch (the header is enough)."""
        base, _len, _e, _m, _crc, _a, delta, _bt, max_ts, pid, epoch, seq, _n = HEADER.unpack_from(head)
        return cls.from_fields(pid, epoch, seq, base, delta, max_ts)

    @classmethod
    def from_fields(cls, pid: int, epoch: int, seq: int, base: int, delta: int, max_ts: int) -> "BatchInfo":
        last_seq = seq + delta
        if last_seq > INT32_MAX:
            last_seq -= INT32_MAX + 1
        return cls(pid, epoch, seq, last_seq, base, base + delta, max_ts)


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
            if entry.batches and not _in_sequence(entry.last_seq, batch.first_seq):
                return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        elif batch.first_seq != 0:
            return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    def update(self, batch: BatchInfo) -> None:
        entry = self.producers.get(batch.producer_id)
        if entry is None or entry.epoch != batch.epoch:
            entry = self.producers[batch.producer_id] = ProducerEntry(batch.epoch)
        entry.batches.append(batch)
        entry.last_timestamp = max(entry.last_timestamp, batch.timestamp)

    def expire(self, now_ms: int) -> None:
        dead = [pid for pid, e in self.producers.items() if e.last_timestamp < now_ms - self.expiration_ms]
        for pid in dead:
            del self.producers[pid]

    def last_offsets(self, now_ms: int) -> dict[int, int]:
        """Live producer id -> last offset it wrote (the cleaner keeps that batch).

        Called from a cleaner thread: it reads a copy and changes nothing.
        """
        horizon = now_ms - self.expiration_ms
        return {pid: e.last_offset for pid, e in list(self.producers.items())
                if e.last_offset >= 0 and e.last_timestamp >= horizon}  # fmt: skip

    # -- snapshots ---------------------------------------------------------------------

    def snapshot_path(self, offset: int) -> Path:
        return self.dir / f"{offset:020d}{SNAPSHOT}"

    def write_snapshot(self, offset: int) -> None:
        entries = [_ENTRY.pack(pid, e.epoch, e.last_seq, e.last_offset, e.batches[-1].last_offset
                               - e.batches[-1].first_offset, e.last_timestamp, -1, -1)
                   for pid, e in sorted(self.producers.items()) if e.batches]  # fmt: skip
        body = _COUNT.pack(len(entries)) + b"".join(entries)
        tmp = self.snapshot_path(offset).with_name(f"{offset:020d}{SNAPSHOT}.tmp")
        tmp.write_bytes(_HEADER.pack(1, crc32c.crc32c(body)) + body)
        os.replace(tmp, self.snapshot_path(offset))
        for old in self.snapshot_offsets()[:-2]:
            self.snapshot_path(old).unlink(missing_ok=True)

    def snapshot_offsets(self) -> list[int]:
        names = (p.name for p in self.dir.iterdir() if p.name.endswith(SNAPSHOT))
        return sorted(int(n[:20]) for n in names if len(n) == 20 + len(SNAPSHOT) and n[:20].isdigit())

    def load_snapshot(self, max_offset: int) -> int:
        """Load the newest valid snapshot at or below ``max_offset``; returns its offset (-1 if none)."""
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                self.snapshot_path(offset).unlink(missing_ok=True)  # from beyond a cut log: stale
                continue
            if self._read_snapshot(self.snapshot_path(offset)):
                return offset
        return -1

    def _read_snapshot(self, path: Path) -> bool:
        data = path.read_bytes()
        if len(data) < _HEADER.size + _COUNT.size:
            return False
        version, crc = _HEADER.unpack_from(data)
        body = data[_HEADER.size :]
        if version != 1 or crc32c.crc32c(body) != crc or len(body) != _COUNT.size + _COUNT.unpack_from(body)[0] * _ENTRY.size:
            return False
        self.producers = {}
        for pid, epoch, last_seq, last_offset, delta, ts, _c, _t in _ENTRY.iter_unpack(body[_COUNT.size :]):
            first_seq = last_seq - delta if last_seq - delta >= 0 else last_seq - delta + INT32_MAX + 1
            self.update(BatchInfo(pid, epoch, first_seq, last_seq, last_offset - delta, last_offset, ts))
        return True

    def replay(self, batches: Iterable[BatchInfo]) -> None:
        for batch in batches:
            if batch.producer_id >= 0:
                self.update(batch)
