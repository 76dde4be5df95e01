"""Helpers for the transaction tests: transactional batches, markers, index bytes, opening after a crash."""

from __future__ import annotations

import struct
from pathlib import Path

from protocol.records import RecordBatchBuilder, iter_batches
from protocol.records.control import build_marker_batch
from storage import Log

from .lead_helpers import Clock, config

TS = 1_700_000_000_000


def data(log_: Log, pid: int = -1, n: int = 1, *, epoch: int = 0, seq: int = 0, txn: bool = True) -> int:
    """Append ``n`` records of producer ``pid`` (transactional unless ``txn=False``); returns the first offset."""
    base = log_.log_end_offset
    builder = RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=epoch if pid >= 0 else -1,
                                 base_sequence=seq if pid >= 0 else -1, is_transactional=txn and pid >= 0)  # fmt: skip
    for i in range(n):
        builder.append(b"k%d" % (base + i), b"v" * 20, timestamp=TS + base + i)
    log_.append(builder.build(), base, base + n - 1, TS + base + n - 1)
    return base


def marker(log_: Log, pid: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    """Append a COMMIT/ABORT marker of ``pid`` at the log end offset, as the coordinator does; its offset."""
    base = log_.log_end_offset
    batch = bytearray(build_marker_batch(pid, epoch, commit, coordinator_epoch, TS + base))
    next(iter_batches(memoryview(batch))).set_base_offset(base)
    log_.append(bytes(batch), base, base, TS + base)
    return base


def open_at(path: Path, clock: Clock, *, clean: bool, recovery_point: int = 0, **overrides) -> Log:
    """Open the partition directory as the log manager would: after a clean stop, or a crash."""
    return Log.open(path, "t", 0, config(**overrides), clock, recovery_point=recovery_point, clean=clean)


def txn_entry_bytes(pid: int, first: int, last: int, lso: int) -> bytes:
    """Kafka's AbortedTxn layout written out field by field (34 bytes)."""
    return (struct.pack(">h", 0) + struct.pack(">q", pid) + struct.pack(">q", first) + struct.pack(">q", last)
            + struct.pack(">q", lso))  # fmt: skip


def txn_files(path: Path) -> dict[int, bytes]:
    """Base offset -> bytes of every ``.txnindex`` in the directory."""
    return {int(p.name[:20]): p.read_bytes() for p in sorted(path.glob("*.txnindex"))}


def producer_view(log_: Log) -> dict[int, tuple]:
    """What a restart must rebuild: per producer (epoch, last seq, last offset, open txn, coordinator epoch)."""
    return {pid: (e.epoch, e.last_seq, e.last_offset, e.current_txn_first_offset, e.coordinator_epoch)
            for pid, e in log_.producer_state.producers.items()}  # fmt: skip
