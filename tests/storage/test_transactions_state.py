"""Producer state for transactions: markers, epochs, expiration, snapshot bytes; the marker batch format."""

from __future__ import annotations

import struct

import crc32c
import pytest

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder, iter_batches
from protocol.records.control import ABORT, COMMIT, build_marker_batch, marker_type, read_marker
from storage import AbortedTxn
from storage.producer_state import BatchInfo, Duplicate, Marker, ProducerStateManager

TS = 1_700_000_000_000


def info(seq: int, n: int = 1, *, epoch: int = 0, pid: int = 7, offset: int = 0, txn: bool = True) -> BatchInfo:
    return BatchInfo.from_fields(pid, epoch, seq, offset, n - 1, TS, txn)


def end(state, offset: int, *, commit: bool, epoch: int = 0, pid: int = 7, coordinator_epoch: int = 0):
    return state.end_txn(Marker(pid, epoch, offset, COMMIT if commit else ABORT, coordinator_epoch, TS + 5))


# -- the marker batch --------------------------------------------------------------------------


@pytest.mark.parametrize(("commit", "kind"), [(True, 1), (False, 0)])
def test_marker_batch_layout(commit, kind):
    raw = build_marker_batch(4242, 7, commit, 13, TS)
    view = next(iter_batches(memoryview(raw)))
    assert view.is_valid() and view.size_in_bytes == len(raw)
    assert (view.base_offset, view.producer_id, view.producer_epoch, view.base_sequence) == (0, 4242, 7, -1)
    assert view.attributes == 0x30 and view.records_count == 1 and view.last_offset_delta == 0  # txn | control
    record = next(iter(view))
    assert record.key == bytes([0, 0, 0, kind]) and record.value == bytes([0, 0, 0, 0, 0, 13])
    assert record.timestamp == TS and record.headers == ()
    assert marker_type(raw) == kind and read_marker(view.buffer) == (kind, 13, TS)


def test_marker_type_is_none_for_what_is_not_a_readable_marker():
    data = RecordBatchBuilder(producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
    data.append(b"\x00\x00\x00\x01", b"x", timestamp=TS)
    emptied = RecordBatchBuilder.empty_batch(base_offset=5, last_offset=5, producer_id=1, producer_epoch=0,
                                             is_transactional=True, is_control=True)  # fmt: skip
    short_key = RecordBatchBuilder(producer_id=1, producer_epoch=0, is_transactional=True, is_control=True)
    short_key.append(b"\x00", b"", timestamp=TS)
    for raw in (data.build(), emptied, short_key.build(), b"\x00" * 10, build_marker_batch(1, 0, True, 0, TS)[:-3]):
        assert marker_type(raw) is None


def test_a_marker_of_a_future_key_version_is_still_read():
    b = RecordBatchBuilder(producer_id=1, producer_epoch=0, is_transactional=True, is_control=True)
    b.append(struct.pack(">hh", 1, COMMIT), struct.pack(">hih", 1, 9, 0), timestamp=TS)
    assert read_marker(b.build()) == (COMMIT, 9, TS)


# -- producer state ------------------------------------------------------------------------------


def test_an_epoch_bump_by_marker_makes_the_next_batch_start_at_sequence_zero(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(0, n=2))
    assert state.check(info(2)) is None
    assert end(state, 2, commit=False, epoch=1) == AbortedTxn(7, 0, 2, 3)
    entry = state.producers[7]
    assert (entry.epoch, list(entry.batches), entry.current_txn_first_offset) == (1, [], None)
    assert state.check(info(2, epoch=1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(info(5, epoch=1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(info(0, epoch=1)) is None
    assert state.check(info(2, epoch=0)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check(info(9, pid=8)) is None  # an unknown producer is still free


def test_a_marker_in_the_same_epoch_keeps_the_batches_for_duplicate_detection(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(0, n=2, offset=10))
    assert end(state, 12, commit=True, coordinator_epoch=2) is None  # a commit indexes nothing
    assert state.check(info(0, n=2)) == Duplicate(10, 11, TS)
    assert state.check(info(2)) is None and state.producers[7].coordinator_epoch == 2


def test_a_plain_batch_during_an_open_transaction_is_refused(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(0))
    assert state.check(info(1, txn=False)) == ErrorCode.INVALID_TXN_STATE
    assert state.check(info(1)) is None
    end(state, 1, commit=True)
    assert state.check(info(1, txn=False)) is None


def test_only_the_first_transactional_batch_opens_the_transaction(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(0, offset=4, txn=False))
    assert state.first_unstable_offset(100) is None
    state.update(info(1, offset=6))
    state.update(info(2, offset=9))
    assert state.producers[7].current_txn_first_offset == 6 and state.first_unstable_offset(100) == 6


def test_the_expiration_sweep_never_drops_a_producer_with_an_open_transaction(tmp_path):
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    state.update(info(0, pid=1))  # open transaction
    state.update(info(0, pid=2, txn=False))  # idempotent only
    state.update(info(0, pid=3))
    end(state, 1, commit=True, pid=3)  # decided
    state.expire(TS + 10 * 1000)
    assert sorted(state.producers) == [1]
    end(state, 2, commit=False, pid=1)
    state.expire(TS + 10 * 1000)
    assert state.producers == {}


def _expected_entry(pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn_first) -> bytes:
    """The reference layout, field by field: int64 int16 int32 int64 int32 int64 int32 int64."""
    return (pid.to_bytes(8, "big", signed=True) + epoch.to_bytes(2, "big", signed=True)
            + last_seq.to_bytes(4, "big", signed=True) + last_offset.to_bytes(8, "big", signed=True)
            + delta.to_bytes(4, "big", signed=True) + ts.to_bytes(8, "big", signed=True)
            + coordinator_epoch.to_bytes(4, "big", signed=True) + txn_first.to_bytes(8, "big", signed=True))  # fmt: skip


def test_snapshot_bytes_carry_coordinator_epoch_and_the_open_transaction(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(3, n=4, pid=5, offset=20, epoch=2))  # open at 20, offsets 20-23, sequences 3-6
    state.update(info(0, pid=6, offset=24))
    end(state, 25, commit=False, pid=6, epoch=1, coordinator_epoch=9)  # epoch bump: no batch left
    state.write_snapshot(26)
    body = (2).to_bytes(4, "big") + _expected_entry(5, 2, 6, 23, 3, TS, -1, 20) + _expected_entry(
        6, 1, -1, -1, 0, TS + 5, 9, -1)  # fmt: skip
    expected = (1).to_bytes(2, "big") + crc32c.crc32c(body).to_bytes(4, "big") + body
    assert (tmp_path / f"{26:020d}.snapshot").read_bytes() == expected


def test_loading_a_snapshot_restores_open_transactions_and_empty_entries(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(3, n=4, pid=5, offset=20, epoch=2))
    state.update(info(0, pid=6, offset=24))
    end(state, 25, commit=False, pid=6, epoch=1, coordinator_epoch=9)
    state.update(info(0, pid=8, offset=26))
    state.write_snapshot(27)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_snapshot(100, TS) == 27
    assert loaded.ongoing == {5: 20, 8: 26} and loaded.first_unstable_offset(27) == 20
    assert loaded.producers[6].epoch == 1 and loaded.producers[6].coordinator_epoch == 9
    assert loaded.check(info(1, pid=6, epoch=1)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # still must start at 0
    assert loaded.check(info(3, n=4, pid=5, epoch=2)) == Duplicate(20, 23, TS)
    assert end(loaded, 27, commit=False, pid=5, epoch=2) == AbortedTxn(5, 20, 27, 26)  # 8 still open at 26
