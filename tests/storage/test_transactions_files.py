"""``.txnindex`` files over a log's life: restarts, crashes, retention, DeleteRecords, truncation, cleaner swaps."""

from __future__ import annotations

import os

import pytest

from storage import AbortedTxn
from storage.file_names import cleaned_log_path, cleaned_txn_index_path
from storage.log_txn import aborted_transactions
from storage.txn_index import TransactionIndex, write_txn_index

from .lead_helpers import Clock
from .txn_helpers import data, marker, open_at, producer_view, txn_entry_bytes, txn_files


def _history(log_):
    """Two segments: an aborted and a committed transaction, then a snapshot (roll), an abort, and an open one."""
    data(log_, pid=1, n=2)  # 0-1
    data(log_, pid=2)  # 2
    marker(log_, 1, commit=False, coordinator_epoch=3)  # 3 -> (1, 0, 3, 2)
    marker(log_, 2, commit=True)  # 4
    log_.roll()  # snapshot at 5
    data(log_, pid=3)  # 5
    data(log_, pid=1, seq=2)  # 6
    marker(log_, 3, commit=False, epoch=1)  # 7 -> (3, 5, 7, 6), epoch bump to 1
    data(log_, pid=4, n=2)  # 8-9, still open


def _state(log_):
    return (producer_view(log_), log_.first_unstable_offset, log_.last_stable_offset,
            log_.aborted_transactions(0, log_.log_end_offset))  # fmt: skip


def test_restart_after_a_clean_stop_rebuilds_the_same_state(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False)
    _history(log_)
    before, files = _state(log_), txn_files(tmp_path)
    assert before[1:3] == (6, 6) and len(before[3]) == 2
    log_.close()
    again = open_at(tmp_path, clock, clean=True)
    assert _state(again) == before and txn_files(tmp_path) == files
    assert again.producer_state.producers[1].coordinator_epoch == 3
    again.close()


def test_restart_after_a_crash_replays_markers_without_duplicate_entries(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False)
    _history(log_)
    before, files = _state(log_), txn_files(tmp_path)
    del log_  # a crash: no snapshot at the end; the one at 5 and the batches after it are replayed
    assert [int(p.name[:20]) for p in tmp_path.glob("*.snapshot")] == [5]
    again = open_at(tmp_path, clock, clean=False)
    assert _state(again) == before and txn_files(tmp_path) == files
    del again
    third = open_at(tmp_path, clock, clean=False)  # and again: still no duplicate
    assert _state(third) == before and txn_files(tmp_path) == files
    third.close()


def test_a_crash_that_lost_an_index_write_gets_the_entry_back(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False)
    _history(log_)
    before, files = _state(log_), txn_files(tmp_path)
    del log_
    (tmp_path / f"{5:020d}.txnindex").unlink()  # the page cache never wrote it
    again = open_at(tmp_path, clock, clean=False)
    assert _state(again) == before and txn_files(tmp_path) == files
    again.close()


def test_a_torn_tail_that_loses_a_marker_reopens_its_transaction_and_cuts_the_index(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False)
    _history(log_)
    marker(log_, 4, commit=False)  # 10 -> (4, 8, 10, 6): producer 1 is open since 6
    assert txn_files(tmp_path)[5] == txn_entry_bytes(3, 5, 7, 6) + txn_entry_bytes(4, 8, 10, 6)
    del log_
    seg = tmp_path / f"{5:020d}.log"
    os.truncate(seg, seg.stat().st_size - 5)  # the marker at 10 is torn
    again = open_at(tmp_path, clock, clean=False)
    assert again.log_end_offset == 10 and again.last_stable_offset == 6
    assert txn_files(tmp_path)[5] == txn_entry_bytes(3, 5, 7, 6)  # the entry of the lost marker is cut
    assert again.producer_state.producers[4].current_txn_first_offset == 8
    again.close()


def test_a_torn_index_entry_is_ignored_and_overwritten(tmp_path):
    path = tmp_path / f"{0:020d}.txnindex"
    path.write_bytes(txn_entry_bytes(1, 0, 3, 4) + txn_entry_bytes(2, 4, 6, 7)[:20])
    index = TransactionIndex(path, 0)
    assert index.entries == [AbortedTxn(1, 0, 3, 4)]
    index.append(AbortedTxn(5, 5, 9, 10))
    index.close()
    assert path.read_bytes() == txn_entry_bytes(1, 0, 3, 4) + txn_entry_bytes(5, 5, 9, 10)
    with pytest.raises(ValueError):
        TransactionIndex(path, 0).append(AbortedTxn(6, 0, 9, 10))  # last offsets must grow


def test_truncation_cuts_the_index_and_reopens_transactions(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False)
    _history(log_)
    log_.truncate_to(7)  # the abort at 7 goes; 5's transaction of producer 3 is open again
    assert txn_files(tmp_path) == {0: txn_entry_bytes(1, 0, 3, 2), 5: b""}
    assert log_.first_unstable_offset == 5 and log_.aborted_transactions(0, 7) == [AbortedTxn(1, 0, 3, 2)]
    marker(log_, 3, commit=False)  # the index takes new entries after the cut
    assert log_.aborted_transactions(5, 8) == [AbortedTxn(3, 5, 7, 6)]
    log_.truncate_to(3)  # the whole second segment goes, with its index file
    assert txn_files(tmp_path) == {0: b""} and log_.first_unstable_offset == 0
    log_.truncate_to(0)
    assert txn_files(tmp_path) == {} and log_.producer_state.producers == {}
    log_.close()


def test_retention_and_delete_records_rename_then_remove_the_index(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False, file_delete_delay_ms=1000)
    _history(log_)
    log_.roll()
    marker(log_, 4, commit=False)  # 10, segment 10
    log_.delete_records_before(10)
    log_.run_retention(clock.now)  # segments 0 and 5 go at the retention pass
    assert [s.base_offset for s in log_.segments] == [10]
    assert sorted(p.name for p in tmp_path.glob("*.txnindex*")) == [
        f"{0:020d}.txnindex.deleted", f"{5:020d}.txnindex.deleted", f"{10:020d}.txnindex"]
    assert log_.aborted_transactions(10, 11) == [AbortedTxn(4, 8, 10, 6)]
    clock.advance(1001)
    log_.delete_expired_files(clock.now)
    assert [p.name for p in tmp_path.glob("*.txnindex*")] == [f"{10:020d}.txnindex"]
    log_.close()


def test_retention_by_time_takes_the_index_with_its_segment(tmp_path):
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False, retention_ms=1000, file_delete_delay_ms=0)
    _history(log_)
    log_.roll()
    clock.advance(10**12)
    assert log_.run_retention(clock.now) == 2
    log_.delete_expired_files(clock.now)
    assert txn_files(tmp_path) == {}
    log_.close()


def test_deleting_the_log_deletes_every_index(tmp_path):
    log_ = open_at(tmp_path, Clock(), clean=False)
    _history(log_)
    log_.delete()
    assert not list(tmp_path.glob("*.txnindex*"))


def _clean_first_segment(log_, tmp_path, entries):
    """What the cleaner does: a copy of segment 0 as .log.cleaned, and its kept aborts as .txnindex.cleaned."""
    old = log_.segments[:1]
    cleaned = cleaned_log_path(log_.dir, 0)
    cleaned.write_bytes((tmp_path / f"{0:020d}.log").read_bytes())
    assert write_txn_index(cleaned_txn_index_path(log_.dir, 0), entries) == bool(entries)
    return cleaned, old


def test_replace_segments_carries_the_cleaned_index(tmp_path):
    log_ = open_at(tmp_path, Clock(), clean=False, cleanup_policy="compact")
    _history(log_)
    kept = [AbortedTxn(1, 0, 3, 2)]
    cleaned, old = _clean_first_segment(log_, tmp_path, kept)
    new = log_.replace_segments(cleaned, old)
    assert new.txn_index.entries == kept and log_.aborted_transactions(0, 4) == kept
    assert (tmp_path / f"{0:020d}.txnindex.deleted").exists() and not list(tmp_path.glob("*.cleaned"))
    cleaned, old = _clean_first_segment(log_, tmp_path, [])  # nothing kept: the new segment has no index
    log_.replace_segments(cleaned, old)
    assert not (tmp_path / f"{0:020d}.txnindex").exists() and log_.aborted_transactions(0, 4) == []
    log_.close()


def _crash_during_swap(tmp_path, stage):
    """Leave the files of a swap of segment 0 interrupted at ``stage``, with a new index differing from the old."""
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False, cleanup_policy="compact")
    _history(log_)
    log_.close()
    d, name = tmp_path, f"{0:020d}"
    new_index = txn_entry_bytes(1, 0, 3, 4)  # recognisably the cleaner's (LSO 4, not 2)
    if stage == "cleaned":  # crashed while writing: the old segment stays
        (d / f"{name}.log.cleaned").write_bytes((d / f"{name}.log").read_bytes())
        (d / f"{name}.txnindex.cleaned").write_bytes(new_index)
    elif stage == "swap":  # .swap files written, old segment still under its names: the swap is redone
        (d / f"{name}.log.swap").write_bytes((d / f"{name}.log").read_bytes())
        (d / f"{name}.txnindex.swap").write_bytes(new_index)
    elif stage == "swap-without-index":  # the cleaner kept no abort: the old segment's index must go
        (d / f"{name}.log.swap").write_bytes((d / f"{name}.log").read_bytes())
    else:  # the .log was already renamed, only the .txnindex.swap is left
        (d / f"{name}.txnindex").rename(d / f"{name}.txnindex.deleted")
        (d / f"{name}.txnindex.swap").write_bytes(new_index)
    # recovery point 5: segment 0 is flushed, so its index is the swap's, not one rebuilt by a rescan
    return open_at(tmp_path, clock, clean=False, recovery_point=5, cleanup_policy="compact"), new_index


@pytest.mark.parametrize(
    ("stage", "index"), [("cleaned", "old"), ("swap", "new"), ("swap-without-index", None), ("log-renamed", "new")]
)
def test_a_crash_during_a_swap_keeps_exactly_one_index(tmp_path, stage, index):
    log_, new_index = _crash_during_swap(tmp_path, stage)
    expected = {"old": txn_entry_bytes(1, 0, 3, 2), "new": new_index, None: None}[index]
    assert txn_files(tmp_path).get(0) == expected
    assert not list(tmp_path.glob("*.swap")) and not list(tmp_path.glob("*.cleaned"))
    assert [s.base_offset for s in log_.segments] == [0, 5] and log_.log_end_offset == 10
    log_.close()


def test_an_orphan_index_is_deleted_on_open(tmp_path):
    (tmp_path / f"{42:020d}.txnindex").write_bytes(txn_entry_bytes(1, 42, 43, 44))
    log_ = open_at(tmp_path, Clock(), clean=False)
    assert txn_files(tmp_path) == {} and log_.aborted_transactions(0, 100) == []
    log_.close()


def test_a_new_segment_never_inherits_a_stale_index(tmp_path):
    log_ = open_at(tmp_path, Clock(), clean=False)
    data(log_, n=5)
    (tmp_path / f"{5:020d}.txnindex").write_bytes(txn_entry_bytes(1, 5, 6, 7))  # left by someone else
    log_.roll()  # a fresh segment at 5
    assert log_.aborted_transactions(5, 10) == [] and txn_files(tmp_path) == {}
    log_.close()


def test_recovery_cuts_index_entries_past_the_end_of_the_log(tmp_path):
    (tmp_path / f"{0:020d}.txnindex").write_bytes(txn_entry_bytes(1, 0, 3, 4))
    (tmp_path / f"{0:020d}.log").write_bytes(b"")
    log_ = open_at(tmp_path, Clock(), clean=False)
    assert log_.aborted_transactions(0, 10) == [] and txn_files(tmp_path) == {0: b""}
    log_.close()


def test_replace_segments_strips_the_index_swap_after_the_log(tmp_path, monkeypatch):
    """Until the .log has its name the loader redoes the swap; only then may the new .txnindex take its name."""
    import pathlib

    log_ = open_at(tmp_path, Clock(), clean=False, cleanup_policy="compact")
    _history(log_)
    cleaned, old = _clean_first_segment(log_, tmp_path, [AbortedTxn(1, 0, 3, 2)])
    renames, real = [], pathlib.Path.rename

    def recording(self, target):
        renames.append((self.name, pathlib.Path(target).name))
        return real(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", recording)
    log_.replace_segments(cleaned, old)
    stripped = [src for src, dst in renames if src.endswith(".swap")]
    assert stripped == [f"{0:020d}.log.swap", f"{0:020d}.txnindex.swap"]
    assert renames.index((f"{0:020d}.txnindex.cleaned", f"{0:020d}.txnindex.swap")) < renames.index(
        (f"{0:020d}.txnindex", f"{0:020d}.txnindex.deleted"))  # fmt: skip
    monkeypatch.undo()
    log_.close()


@pytest.mark.parametrize("damage", ["lost", "stale entry"])
def test_a_rescanned_segment_gets_its_txn_index_rebuilt_from_its_batches(tmp_path, damage):
    """As Kafka's ``LogSegment.recover``: the index of a segment at or above the recovery point is reset and
    rebuilt from its markers, with producer state brought up to its base, even when the newest snapshot is
    past it (two rolls after the abort)."""
    clock = Clock()
    log_ = open_at(tmp_path, clock, clean=False, segment_bytes="1000")
    data(log_, pid=7, n=3)
    marker(log_, 7, commit=False)
    for i in range(20):
        data(log_, pid=8, n=1, seq=i, txn=False)
    assert len(log_.segments) == 3 and min(int(p.name[:20]) for p in tmp_path.glob("*.snapshot")) > 0
    before = aborted_transactions(log_, 0, log_.log_end_offset)
    assert before == [AbortedTxn(7, 0, 3, 4)]
    index, snapshots = tmp_path / f"{0:020d}.txnindex", sorted(tmp_path.glob("*.snapshot"))
    del log_  # a crash
    if damage == "lost":
        index.unlink()
    else:  # an entry whose marker never reached the .log
        index.write_bytes(index.read_bytes() + txn_entry_bytes(9, 5, 8, 9))
    log2 = open_at(tmp_path, clock, clean=False, recovery_point=0, segment_bytes="1000")
    assert aborted_transactions(log2, 0, log2.log_end_offset) == before
    assert txn_files(tmp_path) == {0: txn_entry_bytes(7, 0, 3, 4)}
    assert sorted(tmp_path.glob("*.snapshot")) == snapshots  # the newer ones are kept, only passed over
