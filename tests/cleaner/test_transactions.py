"""The cleaner and transactions (KIP-98), on real logs under an injected clock.

Logs are written as a broker writes them: plain batches, transactional batches
of producers (producer id, epoch, sequence, the transactional bit) and the
markers that end their transactions (``build_marker_batch``), which the log
turns into producer state and ``.txnindex`` entries. Rounds are driven one at
a time with ``Cleaner.clean``, the checkpoint carried from round to round.

What is checked, after Kafka (reference §5.1-5.4):

* an undecided transaction bounds the round: nothing from the segment holding
  its first offset on is rewritten (the bound is rounded down to that
  segment's base, and a round starting inside that segment maps nothing);
  once decided, the next round cleans past it;
* batches of aborted transactions are dropped whole and never enter the
  offset map, so an aborted write never removes an older committed value;
* an ABORT marker stays while a batch of its transaction remains and is
  carried into the cleaned segment's ``.txnindex``; the round after the
  batches went it gets a delete horizon and leaves the index, and it is
  dropped once the horizon passed; COMMIT markers likewise, once their
  transaction's batches are gone; the last batch of a live producer stays as
  an empty header, and so does a marker that bumped its producer's epoch;
* committed transactional records are compacted as any others, and KIP-87
  flagged tombstones inside transactions delete (committed) or do nothing
  (aborted) as elsewhere;
* a transaction spanning several segments, cleaned group by group, loses all
  its batches, and its entry follows its marker;
* ``CleanedTransactions`` alone, on stand-in batches.

``test_transactions_crash`` crashes such rounds at every file operation.
"""

from __future__ import annotations

import pytest

from cleaner import Cleaner, OffsetMap, log_to_clean
from cleaner.transactions import CleanedTransactions
from protocol.records import TOMBSTONE_FLAG, RecordBatchBuilder, RecordBatchView
from protocol.records.control import ABORT, COMMIT, build_marker_batch, marker_type
from storage import AbortedTxn
from tests.cleaner.helpers import compacted_log, open_manager, read_batches
from tests.storage.lead_helpers import Clock

RETENTION = 1000  # delete.retention.ms of the test logs
EXPIRY = 60_000  # producer.id.expiration.ms


class Writer:
    """Appends to a log as a broker would: plain batches, transactional batches, markers."""

    def __init__(self, log_, clock: Clock) -> None:
        self.log, self.clock = log_, clock
        self.sequences: dict[int, int] = {}

    def plain(self, records: list) -> int:
        return self._append(RecordBatchBuilder(base_offset=self.log.log_end_offset), records)

    def txn(self, pid: int, records: list, epoch: int = 0) -> int:
        seq = self.sequences.get(pid, 0)
        self.sequences[pid] = seq + len(records)
        builder = RecordBatchBuilder(base_offset=self.log.log_end_offset, producer_id=pid, producer_epoch=epoch,
                                     base_sequence=seq, is_transactional=True)  # fmt: skip
        return self._append(builder, records)

    def marker(self, pid: int, commit: bool, epoch: int = 0) -> int:
        base = self.log.log_end_offset
        data = bytearray(build_marker_batch(pid, epoch, commit, 0, self.clock()))
        RecordBatchView(data).set_base_offset(base)
        self.log.append(bytes(data), base, base, self.clock())
        return base

    def _append(self, builder: RecordBatchBuilder, records: list) -> int:
        base, now = self.log.log_end_offset, self.clock()
        for key, value, *attributes in records:
            builder.append(key, value, timestamp=now, attributes=attributes[0] if attributes else 0)
        self.log.append(builder.build(), base, base + len(records) - 1, now)
        return base


class Rounds:
    """Cleaning rounds one at a time, the checkpoint carried over as the cleaner manager does."""

    def __init__(self, log_, clock: Clock) -> None:
        self.log, self.clock, self.checkpoint = log_, clock, None

    def todo(self):
        return log_to_clean(self.log, self.checkpoint, self.clock())

    def run(self) -> int:
        ends: list[int] = []
        Cleaner(OffsetMap(1 << 20), clock=self.clock).clean(self.todo(), ends.append)
        self.checkpoint = ends[0]
        return ends[0]


@pytest.fixture
def setup(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock, **{"producer.id.expiration.ms": EXPIRY})
    log_ = compacted_log(lm, delete_retention_ms=RETENTION)
    yield log_, Writer(log_, clock), Rounds(log_, clock), clock
    lm.close()


def data(log_) -> list[tuple[int, bytes, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in read_batches(log_) if not b.is_control for r in b]


def markers(log_) -> list[tuple[int, int | None, bool]]:
    """(offset, type, has a delete horizon) of every control batch still holding its marker."""
    return [(b.base_offset, marker_type(bytes(b.buffer)), b.has_delete_horizon)
            for b in read_batches(log_) if b.is_control and b.records_count]  # fmt: skip


def txn_index_files(log_) -> list[str]:
    return sorted(p.name for p in log_.dir.iterdir() if p.name.endswith(".txnindex"))


def expire_producers(clock: Clock) -> None:
    clock.advance(EXPIRY + 1)  # no producer is live any more: none of their batches must stay


# ---------------------------------------------------------------- the last stable offset


def test_an_undecided_transaction_bounds_the_round_at_its_segment(setup):
    log_, w, rounds, clock = setup
    w.plain([(b"k", b"v1")])
    w.plain([(b"k", b"v1b")])
    log_.roll()
    w.plain([(b"a", b"0")])  # 2: same segment as the transaction, before it
    w.txn(7, [(b"k", b"v2")])  # 3: undecided
    w.plain([(b"k", b"v3")])  # 4
    log_.roll()
    w.plain([(b"a", b"1")])  # 5
    log_.roll()
    w.plain([(b"b", b"1")])  # 6, active
    assert log_.last_stable_offset == 3
    assert rounds.todo().first_uncleanable_offset == 2  # rounded down to the segment holding offset 3
    assert rounds.run() == 2
    assert data(log_) == [(1, b"k", b"v1b"), (2, b"a", b"0"), (3, b"k", b"v2"), (4, b"k", b"v3"),
                          (5, b"a", b"1"), (6, b"b", b"1")]  # fmt: skip
    w.marker(7, commit=True)  # 7
    log_.roll()
    w.plain([(b"c", b"1")])  # 8, active
    assert rounds.todo().first_uncleanable_offset == 8
    rounds.run()
    assert [(o, k, v) for o, k, v in data(log_) if k] == [(4, b"k", b"v3"), (5, b"a", b"1"), (6, b"b", b"1"),
                                                         (8, b"c", b"1")]  # fmt: skip


def test_cleanable_bytes_stop_at_the_undecided_transaction(setup):
    log_, w, rounds, _clock = setup
    w.plain([(b"k", b"v1")])
    log_.roll()
    w.txn(7, [(b"k", b"v2")])
    log_.roll()
    w.plain([(b"k", b"v3")])
    todo = rounds.todo()
    assert todo.first_uncleanable_offset == 1
    assert todo.cleanable_bytes == log_.segments[0].size
    rounds.checkpoint = 1  # everything below the transaction is clean: nothing is cleanable
    todo = rounds.todo()
    assert (todo.first_uncleanable_offset, todo.cleanable_bytes, todo.cleanable) == (1, 0, False)


def test_a_round_from_inside_the_segment_of_an_undecided_transaction_maps_nothing(setup):
    log_, w, rounds, _clock = setup
    w.plain([(b"k", b"v1")])  # 0
    w.plain([(b"k", b"v2")])  # 1
    w.plain([(b"a", b"1")])  # 2: the checkpoint (an earlier round's map filled here)
    w.txn(7, [(b"b", b"1")])  # 3: undecided
    w.plain([(b"a", b"2"), (b"k", b"v3")])  # 4-5: past the last stable offset
    log_.roll()
    w.plain([(b"z", b"1")])  # 6: a later inactive segment
    log_.roll()
    w.plain([(b"z", b"2")])  # 7, active
    before = data(log_)
    rounds.checkpoint = 2
    todo = rounds.todo()
    assert (todo.first_uncleanable_offset, todo.cleanable_bytes) == (2, 0)
    assert rounds.run() == 2  # nothing at or past offset 2 went into the map
    assert data(log_) == before


# ---------------------------------------------------------------- aborted transactions


def _aborted_then_committed(w) -> None:
    w.plain([(b"k", b"v1")])  # 0: committed value
    w.txn(7, [(b"k", b"v2"), (b"x", b"1", TOMBSTONE_FLAG)])  # 1-2: aborted
    w.marker(7, commit=False)  # 3
    w.txn(7, [(b"y", b"1")])  # 4: the producer's next transaction, committed
    w.marker(7, commit=True)  # 5


def test_aborted_records_are_dropped_and_never_shadow_a_committed_value(setup):
    log_, w, rounds, _clock = setup
    _aborted_then_committed(w)
    log_.roll()
    w.plain([(b"z", b"1")])  # 6, active
    entry = AbortedTxn(producer_id=7, first_offset=1, last_offset=3, last_stable_offset=4)
    assert log_.aborted_transactions(0, log_.log_end_offset) == [entry]
    rounds.run()
    assert data(log_) == [(0, b"k", b"v1"), (4, b"y", b"1"), (6, b"z", b"1")]
    assert markers(log_) == [(3, ABORT, False), (5, COMMIT, False)]  # both saw batches of their transaction
    assert log_.aborted_transactions(0, log_.log_end_offset) == [entry]  # carried into the cleaned .txnindex
    assert txn_index_files(log_) == ["00000000000000000000.txnindex"]


def test_abort_markers_get_a_horizon_once_their_batches_are_gone_then_go(setup):
    log_, w, rounds, clock = setup
    _aborted_then_committed(w)
    log_.roll()
    w.plain([(b"z", b"1")])
    rounds.run()
    assert markers(log_)[0] == (3, ABORT, False)
    rounds.run()  # the aborted batch is gone: the marker is removable
    assert markers(log_) == [(3, ABORT, True), (5, COMMIT, False)]
    assert log_.aborted_transactions(0, log_.log_end_offset) == []
    assert txn_index_files(log_) == []
    clock.advance(RETENTION - 1)
    rounds.run()
    assert markers(log_)[0] == (3, ABORT, True)
    clock.advance(1)
    rounds.run()
    assert [m[1] for m in markers(log_)] == [COMMIT]
    assert data(log_) == [(0, b"k", b"v1"), (4, b"y", b"1"), (6, b"z", b"1")]


def test_the_last_aborted_batch_of_a_live_producer_stays_empty_with_its_marker(setup):
    log_, w, rounds, clock = setup
    w.plain([(b"k", b"v1")])
    w.txn(7, [(b"k", b"v2")])  # 1: the producer's last data batch
    w.marker(7, commit=False)  # 2
    log_.roll()
    w.plain([(b"z", b"1")])
    for _ in range(2):
        rounds.run()
    batches = [(b.base_offset, b.records_count, b.is_transactional) for b in read_batches(log_) if not b.is_control]
    assert batches == [(0, 1, False), (1, 0, True), (3, 1, False)]  # kept as a header: sequence and epoch
    assert markers(log_) == [(2, ABORT, False)]  # a batch of its transaction remains
    assert len(log_.aborted_transactions(0, log_.log_end_offset)) == 1
    expire_producers(clock)
    rounds.run()
    assert [b.base_offset for b in read_batches(log_) if not b.is_control] == [0, 3]
    assert data(log_) == [(0, b"k", b"v1"), (3, b"z", b"1")]


def test_a_transaction_spanning_segments_and_groups(setup):
    log_, w, rounds, _clock = setup
    w.plain([(b"k", b"v1")])  # 0
    w.txn(7, [(b"k", b"v2")])  # 1: aborted, in segment 0
    log_.roll()
    w.txn(8, [(b"a", b"1")])  # 2: committed, interleaved
    w.txn(7, [(b"k", b"v3")])  # 3: aborted, in segment 2
    log_.roll()
    w.marker(8, commit=True)  # 4
    w.txn(7, [(b"b", b"1")])  # 5: aborted
    w.marker(7, commit=False)  # 6
    w.txn(7, [(b"c", b"1")])  # 7: committed
    w.marker(7, commit=True)  # 8
    log_.roll()
    w.plain([(b"z", b"1")])  # 9, active
    log_.config = log_.config.__class__(**{**_fields(log_.config), "segment_bytes": 1})  # one segment a group
    rounds.run()
    assert data(log_) == [(0, b"k", b"v1"), (2, b"a", b"1"), (7, b"c", b"1"), (9, b"z", b"1")]
    assert log_.aborted_transactions(0, log_.log_end_offset) == [AbortedTxn(7, 1, 6, 7)]
    assert txn_index_files(log_) == ["00000000000000000004.txnindex"]  # with its marker's segment


def _fields(config) -> dict:
    return {name: getattr(config, name) for name in config.__slots__ if not name.startswith("__")}


# ---------------------------------------------------------------- committed transactions


def test_committed_transactional_records_are_compacted_like_any(setup):
    log_, w, rounds, clock = setup
    w.txn(7, [(b"k", b"1"), (b"a", b"1")])  # 0-1
    w.marker(7, commit=True)  # 2
    w.txn(8, [(b"k", b"2")])  # 3
    w.plain([(b"a", b"2")])  # 4: plain write while 8's transaction is open
    w.marker(8, commit=True)  # 5
    w.plain([(b"k", b"3")])  # 6
    log_.roll()
    w.plain([(b"z", b"1")])  # 7, active
    expire_producers(clock)
    rounds.run()
    assert data(log_) == [(4, b"a", b"2"), (6, b"k", b"3"), (7, b"z", b"1")]
    assert markers(log_) == [(2, COMMIT, False), (5, COMMIT, False)]  # their batches were still there
    rounds.run()
    assert markers(log_) == [(2, COMMIT, True), (5, COMMIT, True)]
    clock.advance(RETENTION)
    rounds.run()
    assert markers(log_) == []
    assert data(log_) == [(4, b"a", b"2"), (6, b"k", b"3"), (7, b"z", b"1")]


def test_a_commit_marker_stays_while_its_transaction_has_records(setup):
    log_, w, rounds, clock = setup
    w.txn(7, [(b"k", b"1")])
    w.marker(7, commit=True)
    log_.roll()
    w.plain([(b"z", b"1")])
    expire_producers(clock)
    for _ in range(3):
        rounds.run()
        clock.advance(RETENTION)
    assert markers(log_) == [(1, COMMIT, False)]
    assert data(log_) == [(0, b"k", b"1"), (2, b"z", b"1")]


# ---------------------------------------------------------------- KIP-87 tombstones in transactions


def test_flagged_tombstones_in_transactions_behave_as_elsewhere(setup):
    log_, w, rounds, clock = setup
    w.plain([(b"a", b"1"), (b"b", b"1")])  # 0-1
    w.txn(7, [(b"a", b"meta", TOMBSTONE_FLAG)])  # 2: committed flagged tombstone
    w.marker(7, commit=True)  # 3
    w.txn(8, [(b"b", b"meta", TOMBSTONE_FLAG), (b"b", None)])  # 4-5: aborted tombstones
    w.marker(8, commit=False)  # 6
    log_.roll()
    w.plain([(b"z", b"1")])  # 7, active
    expire_producers(clock)
    rounds.run()
    assert data(log_) == [(1, b"b", b"1"), (2, b"a", b"meta"), (7, b"z", b"1")]
    tombstone = next(b for b in read_batches(log_) if b.base_offset == 2)
    assert tombstone.has_delete_horizon and tombstone.is_transactional
    clock.advance(RETENTION)
    rounds.run()
    assert data(log_) == [(1, b"b", b"1"), (7, b"z", b"1")]


# ---------------------------------------------------------------- the state machine alone


class _Batch:
    def __init__(self, pid: int, base: int, last: int, transactional: bool = True, marker: bytes | None = None):
        self.producer_id, self.base_offset, self.last_offset = pid, base, last
        self.is_transactional, self.buffer = transactional, marker
        self.records_count = 1 if marker is not None else last - base + 1


def _marker(pid: int, offset: int, commit: bool) -> _Batch:
    data = bytearray(build_marker_batch(pid, 0, commit, 0, 0))
    RecordBatchView(data).set_base_offset(offset)
    return _Batch(pid, offset, offset, marker=bytes(data))


def test_the_state_follows_aborted_and_committed_transactions():
    txns = CleanedTransactions()
    txns.add_aborted([AbortedTxn(1, 5, 9, 10)])
    assert not txns.on_data_batch(_Batch(1, 0, 2))  # before the aborted transaction: committed
    assert not txns.on_control_batch(_marker(1, 3, commit=True))  # it had a batch
    assert txns.on_control_batch(_marker(2, 4, commit=True))  # nothing of 2's transaction was seen
    assert txns.on_data_batch(_Batch(1, 5, 6))
    assert not txns.on_data_batch(_Batch(1, 7, 7, transactional=False))
    assert not txns.on_data_batch(_Batch(2, 8, 8))
    txns.add_aborted([AbortedTxn(1, 5, 9, 10)])  # the same transaction, given again while ongoing
    assert not txns.on_control_batch(_marker(1, 9, commit=False))  # kept: a batch was seen
    assert txns.kept_aborted == [AbortedTxn(1, 5, 9, 10)]
    assert not txns.on_data_batch(_Batch(1, 10, 10))  # after its marker, 1 writes committed data again


def test_an_abort_marker_without_batches_is_removable():
    txns = CleanedTransactions()
    txns.add_aborted([AbortedTxn(1, 5, 9, 10)])
    assert txns.on_control_batch(_marker(1, 9, commit=False))
    assert txns.kept_aborted == []


def test_a_marker_that_bumped_the_epoch_stays_as_an_empty_batch_while_its_producer_lives(setup):
    log_, w, rounds, clock = setup
    w.plain([(b"k", b"v1")])  # 0
    w.txn(7, [(b"k", b"v2")], epoch=0)  # 1
    w.marker(7, commit=False, epoch=1)  # 2: aborted by the coordinator with a new epoch: no batch of epoch 1
    w.plain([(b"y", b"1")])  # 3: so the marker is not the round's last batch (kept for that alone)
    log_.roll()
    w.plain([(b"z", b"1")])  # 4, active
    rounds.run()  # the batch goes; the marker saw it
    assert markers(log_) == [(2, ABORT, False)]
    rounds.run()
    assert markers(log_) == [(2, ABORT, True)]
    clock.advance(RETENTION)
    rounds.run()
    (kept,) = [b for b in read_batches(log_) if b.is_control]
    assert (kept.base_offset, kept.records_count, kept.producer_epoch) == (2, 0, 1)  # the epoch stays known
    expire_producers(clock)
    rounds.run()
    assert [b.base_offset for b in read_batches(log_)] == [0, 3, 4]
