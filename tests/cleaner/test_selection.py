"""Choosing the log to clean: first dirty / uncleanable offsets, ratios, thresholds."""

from __future__ import annotations

import os

from cleaner import CleanerConfig, LogCleaner, choose, log_to_clean
from tests.cleaner.helpers import Model, compacted_log, open_manager
from tests.storage.lead_helpers import Clock, batch


def _log(tmp_path, **overrides):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, **overrides)
    for i in range(4):
        Model().write(log_, [(b"k", b"v" * 100, 0)])
        log_.roll()
    Model().write(log_, [(b"k", b"v" * 100, 0)])  # active
    return clock, lm, log_


def test_first_dirty_offset_resets_to_the_log_start_when_out_of_range(tmp_path):
    clock, lm, log_ = _log(tmp_path)
    assert log_to_clean(log_, None, clock.now).first_dirty_offset == 0
    assert log_to_clean(log_, 2, clock.now).first_dirty_offset == 2
    for bad in (-5, 99):
        todo = log_to_clean(log_, bad, clock.now)
        assert (todo.first_dirty_offset, todo.checkpoint_reset) == (0, True)
    lm.update_cleaner_offset("t", 0, 99)
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    assert cleaner.manager.grab_filthiest(clock.now) is not None
    assert lm.cleaner_offsets()[("t", 0)] == 0  # written back at once, as Kafka does


def test_uncleanable_offset_is_the_active_segment_or_the_min_lag_segment(tmp_path):
    clock, _lm, log_ = _log(tmp_path)
    todo = log_to_clean(log_, None, clock.now)
    assert todo.first_uncleanable_offset == log_.active.base_offset == 4
    assert todo.cleanable_bytes == sum(s.size for s in log_.segments[:-1])
    log_.config = log_.config.__class__(**{**_fields(log_.config), "min_compaction_lag_ms": 1000})
    assert log_to_clean(log_, None, clock.now).first_uncleanable_offset == 0  # every segment is too young
    clock.advance(1001)
    assert log_to_clean(log_, None, clock.now).first_uncleanable_offset == 4


def test_min_lag_uses_the_segment_mtime_when_no_record_has_a_timestamp(tmp_path):
    """Kafka's cleanableOffsets reads LogSegment.largestTimestamp, which falls back to the file's mtime."""
    clock = Clock()
    log_ = compacted_log(open_manager(tmp_path, clock), min_compaction_lag_ms=3_600_000)
    for i in range(3):
        base = log_.log_end_offset
        log_.append(batch(base, ts=-1, value=b"v%d" % i), base, base, -1)
        log_.roll()
    assert log_.segments[0].largest_timestamp == -1
    for seg, age in zip(log_.segments[:-1], (7_200_000, 7_200_000, 60_000)):
        os.utime(seg.path, (clock.now / 1000 - age / 1000,) * 2)
    todo = log_to_clean(log_, None, clock.now)
    assert todo.first_uncleanable_offset == 2  # the third segment was written a minute ago
    assert todo.cleanable_bytes == sum(s.size for s in log_.segments[:2])
    os.utime(log_.segments[0].path, (clock.now / 1000,) * 2)
    assert log_to_clean(log_, None, clock.now).first_uncleanable_offset == 0


def _fields(config) -> dict:
    return {name: getattr(config, name) for name in config.__slots__ if not name.startswith("__")}


def test_the_dirty_ratio_must_be_strictly_above_the_threshold(tmp_path):
    clock, _lm, log_ = _log(tmp_path)
    todo = log_to_clean(log_, 2, clock.now)
    assert todo.dirty_ratio == 0.5
    assert not todo.cleanable
    assert choose([todo]) is None
    assert log_to_clean(log_, 1, clock.now).cleanable


def test_non_compacted_logs_are_never_candidates(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, cleanup_policy="delete")
    for _ in range(3):
        Model().write(log_, [(b"k", b"v", 0)])
        log_.roll()
    assert LogCleaner(lm, CleanerConfig(), clock=clock).manager.grab_filthiest(clock.now) is None
