"""Unclean restarts keep flushed data: offset gaps are not damage (Kafka's ``recoverLog`` has no contiguity check)."""

from __future__ import annotations

import os

from cleaner.service import CleanerConfig, LogCleaner
from protocol.records import RecordBatchBuilder

from .lead_helpers import Clock, append, manager, read_all, reopen


def _compacted_then_delete(path, clock):
    """A log compacted once (offset gaps, empty segments left by the cleaner), then ``cleanup.policy=delete``."""
    lm = manager(path, clock)
    lm.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": "1000", "min.cleanable.dirty.ratio": "0.01"})
    log = lm.get_log("t", 0)
    for i in range(60):
        b = RecordBatchBuilder(base_offset=i)
        b.append(b"k%d" % (i % 3), b"v%d" % i, timestamp=clock())
        log.append(b.build(), i, i, clock())
    clock.advance(1000)
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    lm.set_topic_overrides("t", {"cleanup.policy": "delete", "segment.bytes": "1000"})
    return lm, log


def test_offset_gaps_after_compaction_survive_an_unclean_restart(tmp_path):
    clock = Clock()
    lm, log = _compacted_then_delete(tmp_path, clock)
    segments = [(s.base_offset, s.next_offset) for s in log.segments]
    assert any(end == base for base, end in segments) and len(segments) > 2  # empty segments: gaps
    expected = read_all(log)
    assert len(expected) >= 3 and [o for o, _ in expected] != list(range(len(expected)))
    log.flush()
    lm.write_checkpoints()
    del lm, log  # a crash: no clean-shutdown marker
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == expected and log2.log_end_offset == 60
    assert [s.base_offset for s in log2.segments] == [base for base, _ in segments]


def test_offset_gaps_survive_a_full_rescan(tmp_path):
    """Recovery point 0 (checkpoint lost): every segment is rescanned, none is deleted for a gap."""
    clock = Clock()
    lm, log = _compacted_then_delete(tmp_path, clock)
    expected = read_all(log)
    log.flush()
    del lm, log
    (tmp_path / "recovery-point-offset-checkpoint").unlink(missing_ok=True)
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == expected and log2.log_end_offset == 60


def test_a_segment_cut_between_batches_is_caught_by_its_time_index(tmp_path):
    """No offset index entry points past the cut, but the time index (its final entry, written at the
    roll) names an offset the file no longer holds: the segment is recovered, its indexes rebuilt."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "700"})  # index.interval.bytes 4096: no offset index entries
    log, t0 = lm.get_log("t", 0), clock()
    for _ in range(30):
        clock.advance(10)  # offset k has timestamp t0 + 10 * (k + 1)
        append(log)
    lm.write_checkpoints()
    seg = log.segments[1]
    (pos, last, _), (_, kept_last, _) = list(seg.iter_batch_headers())[-1], list(seg.iter_batch_headers())[-2]
    assert len(seg.offset_index) == 0 and seg.time_index.last_entry()[1] == last
    expected = read_all(log)
    del lm, log
    os.truncate(seg.path, pos)  # exactly before its last batch
    lm2, log2 = reopen(tmp_path, clock)
    seg2 = log2.segments[1]
    assert seg2.next_offset == kept_last + 1 and seg2.damaged
    assert seg2.largest_timestamp == seg2.time_index.last_entry()[0] == t0 + 10 * (kept_last + 1)
    assert read_all(log2)[: kept_last + 1] == expected[: kept_last + 1]
