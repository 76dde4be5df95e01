"""Transactions in a partition log: last stable offset, markers, ``.txnindex`` entries, aborted-range lookups."""

from __future__ import annotations

import pytest

from storage import AbortedTxn

from .lead_helpers import Clock, open_log
from .txn_helpers import data, marker, txn_entry_bytes, txn_files


@pytest.fixture
def log_(tmp_path):
    log = open_log(tmp_path, Clock())
    yield log
    log.close()


def test_an_open_transaction_holds_the_last_stable_offset_at_its_first_offset(log_):
    data(log_, n=2)  # plain records 0-1
    first = data(log_, pid=7, n=2)  # transactional 2-3
    data(log_, n=1)  # plain 4: above the open transaction, not readable by read_committed
    data(log_, pid=7, n=1, seq=2)  # more of the same transaction: the start does not move
    assert (first, log_.high_watermark) == (2, 6)
    assert log_.first_unstable_offset == 2 and log_.last_stable_offset == 2


def test_a_commit_marker_releases_the_last_stable_offset_and_writes_no_index(log_, tmp_path):
    data(log_, pid=7, n=3)
    assert log_.last_stable_offset == 0
    marker(log_, 7, commit=True)
    assert log_.first_unstable_offset is None and log_.last_stable_offset == log_.high_watermark == 4
    assert txn_files(tmp_path) == {} and log_.aborted_transactions(0, 4) == []


def test_an_abort_marker_indexes_the_transaction_with_kafkas_last_stable_offset(log_, tmp_path):
    data(log_, n=1)
    data(log_, pid=7, n=2)  # 1-2
    at = marker(log_, 7, commit=False)  # 3
    assert log_.last_stable_offset == 4 and log_.first_unstable_offset is None
    assert log_.aborted_transactions(0, 4) == [AbortedTxn(7, 1, 3, 4)]
    assert txn_files(tmp_path) == {0: txn_entry_bytes(7, 1, at, at + 1)}


def test_a_marker_without_an_open_transaction_changes_no_offset_and_indexes_nothing(log_, tmp_path):
    data(log_, n=2)
    marker(log_, 9, commit=False, epoch=3, coordinator_epoch=4)
    assert log_.last_stable_offset == 3 and txn_files(tmp_path) == {}
    entry = log_.producer_state.producers[9]
    assert (entry.epoch, entry.coordinator_epoch, entry.current_txn_first_offset) == (3, 4, None)


def test_two_interleaved_producers(log_, tmp_path):
    data(log_, pid=1)  # 0: A opens
    data(log_, pid=2)  # 1: B opens
    data(log_, pid=1, seq=1)  # 2
    marker(log_, 1, commit=False)  # 3: A aborts while B is open: the entry's LSO is B's first offset
    assert log_.last_stable_offset == 1
    marker(log_, 2, commit=True)  # 4
    assert log_.last_stable_offset == 5
    data(log_, pid=2, seq=1)  # 5: B opens again
    data(log_, pid=1, seq=2)  # 6: A opens again
    marker(log_, 2, commit=False)  # 7: B aborts, A open since 6
    assert log_.last_stable_offset == 6
    marker(log_, 1, commit=False)  # 8: A aborts, nobody open
    assert log_.aborted_transactions(0, 9) == [AbortedTxn(1, 0, 3, 1), AbortedTxn(2, 5, 7, 6), AbortedTxn(1, 6, 8, 9)]
    expected = txn_entry_bytes(1, 0, 3, 1) + txn_entry_bytes(2, 5, 7, 6) + txn_entry_bytes(1, 6, 8, 9)
    assert txn_files(tmp_path) == {0: expected}
    assert log_.last_stable_offset == 9


def _three_segments(log_):
    """seg 0: A 0-1, abort 2 | seg 3: B 3, C 4, abort B 5 | seg 6: abort C 6, D 7-8, abort D 9."""
    data(log_, pid=1, n=2)
    marker(log_, 1, commit=False)
    log_.roll()
    data(log_, pid=2)
    data(log_, pid=3)
    marker(log_, 2, commit=False)
    log_.roll()
    marker(log_, 3, commit=False)
    data(log_, pid=4, n=2)
    marker(log_, 4, commit=False)
    return AbortedTxn(1, 0, 2, 3), AbortedTxn(2, 3, 5, 4), AbortedTxn(3, 4, 6, 7), AbortedTxn(4, 7, 9, 10)


@pytest.mark.parametrize(
    ("start", "upper", "expected"),
    [
        (0, 10, "abcd"),  # everything, in index order
        (0, 1, "a"),  # a's LSO 3 >= 1: the search stops in the first segment
        (3, 4, "b"),  # from the segment holding 3; b's LSO 4 >= 4 ends the search; c starts at 4
        (4, 5, "bc"),  # b ends at 5 >= 4; its LSO 4 < 5 so the next segment is searched: c
        (6, 7, "c"),  # from the third segment only: a and b ended before 6
        (7, 9, "d"),
        (10, 12, ""),  # past every marker
        (2, 3, "a"),  # a's marker itself is in range
    ],
)
def test_aborted_transactions_selects_by_range_across_segments(log_, start, upper, expected):
    txns = dict(zip("abcd", _three_segments(log_)))
    assert [s.base_offset for s in log_.segments] == [0, 3, 6]
    assert log_.aborted_transactions(start, upper) == [txns[k] for k in expected]


def test_the_search_stops_at_an_entry_whose_last_stable_offset_reaches_the_upper_bound(log_):
    a, _b, _c, _d = _three_segments(log_)

    class Untouchable:
        def collect(self, start, upper):
            raise AssertionError("searched a segment past the end of the search")

        def close(self):
            pass

    for seg in log_.segments[1:]:
        seg._txn_index = Untouchable()
    assert log_.aborted_transactions(0, 3) == [a]  # a's LSO is 3


def test_each_segment_indexes_the_aborts_whose_marker_it_holds(log_, tmp_path):
    a, b, c, d = _three_segments(log_)
    files = txn_files(tmp_path)
    assert files == {0: a_bytes(a), 3: a_bytes(b), 6: a_bytes(c) + a_bytes(d)}


def a_bytes(t: AbortedTxn) -> bytes:
    return txn_entry_bytes(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)


def test_the_first_unstable_offset_is_never_below_the_log_start_offset(log_):
    data(log_, pid=7)  # 0, open
    data(log_, n=3)  # 1-3
    assert log_.last_stable_offset == 0
    log_.delete_records_before(2)
    assert log_.first_unstable_offset == 2 and log_.last_stable_offset == 2  # as Kafka raises it


def test_durable_mode_holds_the_lso_until_the_marker_is_fsynced(log_):
    """Kafka counts a decided transaction as unstable until its marker is below the high watermark."""
    log_.durable_high_watermark = True
    data(log_, pid=7)  # 0
    log_.flush()
    assert (log_.high_watermark, log_.last_stable_offset) == (1, 0)
    marker(log_, 7, commit=True)  # 1, not yet on disk
    assert log_.high_watermark == 1 and log_.last_stable_offset == 0
    log_.flush()
    assert log_.high_watermark == log_.last_stable_offset == 2


def test_an_append_whose_index_write_fails_is_undone(log_, tmp_path, monkeypatch):
    from storage import StorageError, fileops

    data(log_, pid=7, n=2)
    real = fileops.write_all

    def refuse_txn_index(fd, buf, position):
        if len(memoryview(buf)) == 34:
            raise OSError(28, "No space left on device")
        return real(fd, buf, position)

    monkeypatch.setattr(fileops, "write_all", refuse_txn_index)
    with pytest.raises(StorageError):
        marker(log_, 7, commit=False)
    assert log_.log_end_offset == 2 and log_.last_stable_offset == 0  # the marker is gone, the txn open
    assert log_.producer_state.producers[7].current_txn_first_offset == 0
    monkeypatch.setattr(fileops, "write_all", real)
    marker(log_, 7, commit=False)
    assert log_.aborted_transactions(0, 3) == [AbortedTxn(7, 0, 2, 3)] and log_.last_stable_offset == 3


def test_a_flush_fsyncs_the_transaction_index_too(log_, monkeypatch):
    from storage import fileops

    data(log_, pid=7)
    marker(log_, 7, commit=False)
    synced = []
    monkeypatch.setattr(fileops, "fsync", synced.append)
    log_.flush()
    assert log_.active.txn_index._handle.fd in synced
