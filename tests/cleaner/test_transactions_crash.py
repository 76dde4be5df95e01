"""A crash at every file operation of a cleaning round over transactions, then a restart.

Three producers write interleaved transactions, every fourth aborted, over
segments a few batches long, so a round rewrites several groups, keeps some
ABORT markers (in ``.txnindex.cleaned`` files) and drops others. For each N
the N-th file operation of the round raises ``Crash`` (see
``test_crash_safety``); the directory is then opened again from disk. What a
read_committed consumer would see must hold before, after the crash and after
later rounds finish: no leftover ``.cleaned``/``.swap``/``.deleted`` file,
every remaining record of an aborted transaction covered by an index entry of
its producer (so it stays hidden), every other record visible, the latest
committed value of every key there, and the index holding no entry twice and
none the log did not have.
"""

from __future__ import annotations

import pytest

from cleaner import CleanerConfig, LogCleaner
from tests.cleaner.helpers import compacted_log, open_manager, read_batches
from tests.cleaner.test_crash_safety import _stray, crash_round
from tests.cleaner.test_transactions import Writer
from tests.storage.lead_helpers import Clock

def _txn_history(path, clock):
    """Three producers' interleaved transactions, every fourth aborted, over segments of a few batches."""
    lm = open_manager(path, clock)
    log_ = compacted_log(lm, segment_bytes=600, delete_retention_ms=0, min_cleanable_dirty_ratio=0.01)
    w, latest = Writer(log_, clock), {}
    for i in range(8):
        for pid in (100, 101, 102):
            aborted = (i + pid) % 4 == 0
            key, value = b"k%d" % ((i + pid) % 5), b"%s-%d-%d" % (b"abort" if aborted else b"ok", pid, i)
            w.txn(pid, [(key, value)])
            if not aborted:
                latest[key] = value
        for pid in (100, 101, 102):
            w.marker(pid, commit=(i + pid) % 4 != 0)
    log_.roll()
    w.plain([(b"z", b"1")])
    return lm, log_, latest


def _check_read_committed(log_, latest: dict, original: list | None = None) -> list:
    """What a read_committed consumer sees: no aborted record (each one covered by an index entry), the latest
    values; the index holds no entry twice, and only entries the log had before cleaning. Returns the entries."""
    entries = log_.aborted_transactions(log_.log_start_offset, log_.log_end_offset)
    assert len(set(entries)) == len(entries) and set(entries) <= set(original if original is not None else entries)
    visible = {}
    for b in read_batches(log_):
        for r in ([] if b.is_control else b):
            covered = any(t.producer_id == b.producer_id and t.first_offset <= r.offset <= t.last_offset
                          for t in entries)  # fmt: skip
            assert covered == r.value.startswith(b"abort"), r
            if not covered:
                visible[r.key] = r.value
    assert {k: v for k, v in visible.items() if k != b"z"} == latest
    return entries


@pytest.mark.parametrize("fail_at", range(1, 216, 2))  # a round here has 212 file operations
def test_a_crash_at_any_file_operation_keeps_aborted_data_hidden(tmp_path, monkeypatch, fail_at):
    clock = Clock()
    lm, log_, latest = _txn_history(tmp_path, clock)
    original = _check_read_committed(log_, latest)
    crash_round(lm, clock, monkeypatch, fail_at)
    lm2 = open_manager(tmp_path, clock)  # the old objects are dropped: a crash
    log2 = lm2.get_log("t", 0)
    assert not _stray(tmp_path)
    _check_read_committed(log2, latest, original)
    again = LogCleaner(lm2, CleanerConfig(), clock=clock)
    while again.run_once():
        pass
    _check_read_committed(log2, latest, original)
    assert not [b for b in read_batches(log2) if not b.is_control and any(r.value.startswith(b"abort") for r in b)]
    lm2.close()
