"""Unclean restarts keep flushed data, as Kafka's ``LogLoader`` does.

Offset gaps between segments are not damage (``recoverLog`` has no
contiguity check); a damaged segment below the recovery point is cut back
alone (``recoverSegment`` after a failed sanity check) and the flushed
segments after it stay; only a truncation at or above the recovery point
deletes the (unflushed) segments after it.
"""

from __future__ import annotations

import os

from cleaner.service import CleanerConfig, LogCleaner
from protocol.records import RecordBatchBuilder
from storage.checkpoint import write_checkpoint

from .lead_helpers import Clock, append, crash, manager, read_all, reopen


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
    crash(lm)
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
    crash(lm)
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
    crash(lm)
    del lm, log
    os.truncate(seg.path, pos)  # exactly before its last batch
    lm2, log2 = reopen(tmp_path, clock)
    seg2 = log2.segments[1]
    assert seg2.next_offset == kept_last + 1 and seg2.damaged
    assert seg2.largest_timestamp == seg2.time_index.last_entry()[0] == t0 + 10 * (kept_last + 1)
    assert read_all(log2) == [r for r in expected if r[0] != last]  # the later, flushed segments stay


def _five_segments(path, clock):
    lm = manager(path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "1500", "index.interval.bytes": "200"})
    log = lm.get_log("t", 0)
    for _ in range(60):
        append(log)
    log.flush()
    lm.write_checkpoints()
    return lm, log


def test_a_torn_segment_below_the_recovery_point_keeps_the_later_flushed_segments(tmp_path):
    clock = Clock()
    lm, log = _five_segments(tmp_path, clock)
    assert log.recovery_point == 60 and len(log.segments) == 5
    expected, bases = read_all(log), [s.base_offset for s in log.segments]
    last_of_seg1 = list(log.segments[1].iter_batch_headers())[-1][1]
    victim = log.segments[1].path
    crash(lm)
    del lm, log
    os.truncate(victim, victim.stat().st_size - 7)  # its last batch torn
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == [r for r in expected if r[0] != last_of_seg1]
    assert [s.base_offset for s in log2.segments] == bases and log2.log_end_offset == 60


def test_a_truncation_at_the_recovery_point_still_deletes_the_unflushed_segments(tmp_path):
    clock = Clock()
    lm, log = _five_segments(tmp_path, clock)
    expected, bases = read_all(log), [s.base_offset for s in log.segments]
    victim = log.segments[2].path
    crash(lm)
    del lm, log
    write_checkpoint(tmp_path / "recovery-point-offset-checkpoint", {("t", 0): bases[2]})
    os.truncate(victim, victim.stat().st_size - 7)
    lm2, log2 = reopen(tmp_path, clock)
    got = read_all(log2)
    assert got == expected[: len(got)] and len(got) == bases[3] - 1
    assert [s.base_offset for s in log2.segments] == bases[:3]
    assert not (tmp_path / "t-0" / f"{bases[3]:020d}.log").exists()
