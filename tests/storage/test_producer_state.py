"""Producer state (idempotent producers): Kafka's sequence rules, snapshots, rebuild after a crash."""

from __future__ import annotations

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder
from storage.producer_state import INT32_MAX, BatchInfo, Duplicate, ProducerStateManager

from .lead_helpers import Clock, crash, manager

TS = 1_700_000_000_000


def info(seq: int, n: int = 1, epoch: int = 0, pid: int = 7, offset: int = 0, ts: int = TS) -> BatchInfo:
    return BatchInfo.from_fields(pid, epoch, seq, offset, n - 1, ts)


def test_duplicates_of_the_last_five_batches_are_found(tmp_path):
    state = ProducerStateManager(tmp_path)
    for i in range(7):
        state.update(info(seq=i * 2, n=2, offset=100 + i * 2))
    assert state.check(info(seq=12, n=2)) == Duplicate(112, 113, TS)
    assert state.check(info(seq=4, n=2)) == Duplicate(104, 105, TS)
    assert state.check(info(seq=2, n=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # older than the window
    assert state.check(info(seq=14, n=3)) is None


def test_gaps_stale_epochs_and_new_epochs(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(seq=0, n=3, epoch=2))
    assert state.check(info(seq=5, epoch=2)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(info(seq=3, epoch=1)) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check(info(seq=1, epoch=3)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check(info(seq=0, epoch=3)) is None
    assert state.check(info(seq=42, pid=99)) is None  # an unknown producer may start anywhere (KIP-360)


def test_sequences_wrap_after_int32_max(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(seq=INT32_MAX - 1, n=2))
    assert state.producers[7].last_seq == INT32_MAX
    assert state.check(info(seq=0)) is None
    wrapped = info(seq=INT32_MAX, n=3)
    assert (wrapped.first_seq, wrapped.last_seq) == (INT32_MAX, 1)


def test_idle_producers_expire(tmp_path):
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    state.update(info(seq=0, ts=TS))
    state.update(info(seq=0, pid=8, ts=TS + 900))
    assert state.last_offsets(TS + 1500) == {8: 0}


def test_a_producer_expires_once_the_expiration_has_passed_exactly(tmp_path):
    """Kafka's isProducerExpired: ``now - last timestamp >= producer.id.expiration.ms``."""
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    state.update(info(seq=0, ts=TS))
    state.update(info(seq=0, pid=8, ts=TS + 1))
    assert state.last_offsets(TS + 1000) == {8: 0}
    state.expire(TS + 1000)
    assert sorted(state.producers) == [8]
    assert state.check(info(seq=5)) is None  # unknown again: any sequence


def test_loading_a_snapshot_at_a_time_leaves_the_expired_producers_out(tmp_path):
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    state.update(info(seq=0, ts=TS))
    state.update(info(seq=0, pid=8, ts=TS + 1))
    state.update(BatchInfo.from_fields(9, 0, 0, 1, 0, TS, transactional=True))  # open transaction
    state.write_snapshot(2)
    loaded = ProducerStateManager(tmp_path, expiration_ms=1000)
    assert loaded.load_snapshot(100, TS + 1000) == 2
    assert sorted(loaded.producers) == [8, 9] and loaded.ongoing == {9: 1}
    assert loaded.load_snapshot(100, TS + 999) == 2 and sorted(loaded.producers) == [7, 8, 9]  # none expired yet


def test_snapshot_round_trip_and_corrupt_snapshots_are_skipped(tmp_path):
    state = ProducerStateManager(tmp_path)
    state.update(info(seq=10, n=4, epoch=3, offset=50))
    state.write_snapshot(60)
    (tmp_path / f"{70:020d}.snapshot").write_bytes(b"\x00\x01garbage")
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_snapshot(100, TS) == 60
    entry = loaded.producers[7]
    assert (entry.epoch, entry.last_seq, entry.last_offset) == (3, 13, 53)
    assert loaded.check(info(seq=10, n=4, epoch=3)) == Duplicate(50, 53, TS)
    assert loaded.check(info(seq=14, epoch=3)) is None


def _idempotent(log_, seq: int, n: int = 2, pid: int = 7) -> None:
    base = log_.log_end_offset
    b = RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0, base_sequence=seq)
    for i in range(n):
        b.append(b"k", b"v", timestamp=TS + i)
    log_.append(b.build(), base, base + n - 1, TS + n - 1)


def test_state_survives_a_clean_stop_a_crash_and_a_roll(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    log_ = lm.get_log("t", 0)
    _idempotent(log_, 0)
    log_.roll()  # a snapshot at offset 2
    _idempotent(log_, 2)
    assert log_.producer_state.check(info(seq=2, n=2)) == Duplicate(2, 3, TS + 1)
    lm.close()
    lm = manager(tmp_path, clock)
    log_ = lm.get_log("t", 0)
    assert log_.producer_state.check(info(seq=2, n=2)) == Duplicate(2, 3, TS + 1)
    _idempotent(log_, 4)
    crash(lm)
    del lm, log_  # a crash: no snapshot at the end, the tail is replayed from the batch headers
    lm = manager(tmp_path, clock)
    state = lm.get_log("t", 0).producer_state
    assert state.check(info(seq=4, n=2)) == Duplicate(4, 5, TS + 1)
    assert state.check(info(seq=7)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert len(list(tmp_path.glob("t-0/*.snapshot"))) <= 2


def test_the_last_timestamp_is_the_latest_batch_s_even_when_it_goes_back(tmp_path):
    """Kafka's ProducerStateEntry.addBatch and appendEndTxnMarker set ``lastTimestamp`` to the newest batch's
    (or marker's) timestamp, not the largest seen: a producer whose clock went back expires by it."""
    state = ProducerStateManager(tmp_path, expiration_ms=1000)
    state.update(info(seq=0, ts=TS + 5000))
    state.update(info(seq=1, ts=TS))
    assert state.producers[7].last_timestamp == TS
    assert state.last_offsets(TS + 1000) == {}
