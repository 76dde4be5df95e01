"""Log behaviour: every roll rule, reads, index lookups, timestamps, retention, DeleteRecords."""

from __future__ import annotations

import pytest

from storage import OffsetOutOfRangeError

from .lead_helpers import Clock, append, open_log, read_all

HOUR = 3_600_000


def test_roll_on_segment_bytes(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=1000)
    for _ in range(30):
        append(log)
    assert len(log.segments) > 3
    assert all(s.size <= 1000 for s in log.segments)
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and bases[0] == 0
    assert read_all(log) == [(i, b"v" * 50) for i in range(30)]


def test_roll_on_record_timestamps_not_wall_clock(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_ms=HOUR)
    t0 = clock.now
    append(log, ts=t0)
    clock.advance(10 * HOUR)  # wall clock alone never rolls on append
    append(log, ts=t0 + HOUR)  # exactly segment.ms later: not yet (strictly greater)
    assert len(log.segments) == 1
    append(log, ts=t0 + HOUR + 1)
    assert len(log.segments) == 2 and log.active.base_offset == 2


def test_kip354_compacted_log_rolls_at_max_compaction_lag(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact", max_compaction_lag_ms=60_000, segment_ms=HOUR)
    t0 = clock.now
    append(log, ts=t0)
    append(log, ts=t0 + 60_001)
    assert len(log.segments) == 2


def test_kip354_idle_active_segment_rolls_on_the_timer(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact", max_compaction_lag_ms=60_000)
    append(log, ts=clock.now)
    assert not log.roll_if_idle(clock.now + 60_000)
    assert log.roll_if_idle(clock.now + 60_001)
    assert len(log.segments) == 2 and log.active.size == 0
    assert not log.roll_if_idle(clock.now + 10 * HOUR)  # an empty active segment never rolls


def test_delete_policy_log_never_rolls_on_the_timer(tmp_path):
    """Kafka rolls on append only; the KIP-354 timer is for compacted logs with max.compaction.lag.ms."""
    clock = Clock()
    log = open_log(tmp_path, clock, max_compaction_lag_ms=60_000, segment_ms=HOUR)
    append(log, ts=clock.now)
    assert not log.roll_if_idle(clock.now + 60_001)  # max.compaction.lag.ms only counts for compact
    assert not log.roll_if_idle(clock.now + 10 * HOUR)  # nor segment.ms: the next append rolls
    append(log, ts=clock.now + HOUR + 1)
    assert len(log.segments) == 2


def test_compacted_log_without_max_compaction_lag_never_rolls_on_the_timer(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact", segment_ms=HOUR)
    append(log, ts=clock.now)
    assert not log.roll_if_idle(clock.now + 10 * HOUR)
    assert len(log.segments) == 1


def test_backfilled_timestamps_roll_on_the_timer_once_per_max_compaction_lag(tmp_path):
    """Records stamped a week ago are due at once by record time; the timer waits until the segment
    has also existed for max.compaction.lag.ms by the wall clock, so it rolls at most once a period."""
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact", max_compaction_lag_ms=60_000)
    old = clock.now - 7 * 24 * HOUR
    for i in range(5):
        append(log, ts=old + i)
        assert not log.roll_if_idle(clock.now + 1000 * i)
    clock.advance(60_001)
    assert log.roll_if_idle(clock.now)  # the new segment is created now, by the wall clock
    append(log, ts=old + 10)
    assert not log.roll_if_idle(clock.now + 59_000)
    assert log.roll_if_idle(clock.now + 60_001)
    assert [s.base_offset for s in log.segments] == [0, 5, 6]


def test_a_segment_found_at_startup_rolls_on_the_timer_by_its_first_record_time(tmp_path):
    """A loaded segment's created_ms is only the load time (as Kafka's); the wall-clock wait is for segments
    made in this run, so a restart does not put the KIP-354 roll off by another max.compaction.lag.ms."""
    clock = Clock()
    rules = {"cleanup_policy": "compact", "max_compaction_lag_ms": 60_000}
    log = open_log(tmp_path, clock, **rules)
    append(log, ts=clock.now)
    for age, due in ((40_000, False), (80_000, True)):  # a restart every 40 s: the old rule never rolled
        log.close()
        log = open_log(tmp_path, Clock(clock.now + age), **rules)
        assert log.roll_if_idle(log.clock()) is due
    assert [s.base_offset for s in log.segments] == [0, 1]


def test_backfilled_timestamps_roll_once_at_startup_then_once_per_max_compaction_lag(tmp_path):
    clock = Clock()
    rules = {"cleanup_policy": "compact", "max_compaction_lag_ms": 60_000}
    log = open_log(tmp_path, clock, **rules)
    old = clock.now - 7 * 24 * HOUR
    append(log, ts=old)
    log.close()
    log = open_log(tmp_path, clock, **rules)
    assert log.roll_if_idle(clock.now)  # found on disk with a week-old first record
    append(log, ts=old + 1)  # the segment this run made waits for max.compaction.lag.ms by the clock
    assert not log.roll_if_idle(clock.now + 60_000)
    assert log.roll_if_idle(clock.now + 60_001)
    assert [s.base_offset for s in log.segments] == [0, 1, 2]


def test_jitter_is_drawn_below_segment_ms(tmp_path):
    log = open_log(tmp_path, Clock(), segment_ms=1000, segment_jitter_ms=500)
    assert 0 <= log.active.roll_jitter_ms < 500


def test_roll_when_index_full(tmp_path):
    log = open_log(tmp_path, Clock(), index_interval_bytes=0, segment_index_bytes=64)
    for _ in range(40):
        append(log)
    assert len(log.segments) > 2
    assert read_all(log) == [(i, b"v" * 50) for i in range(40)]


def test_sparse_index_lookup_matches_brute_force(tmp_path):
    log = open_log(tmp_path, Clock(), index_interval_bytes=300, segment_bytes=5000)
    for i in range(120):
        append(log, n=1 + i % 3)
    assert any(len(s.offset_index) for s in log.segments)
    for target in range(0, log.log_end_offset, 7):
        piece = log.read(target, 100, min_one_message=True)
        from protocol.records import iter_batches

        first = next(iter_batches(memoryview(piece.read_bytes())))
        assert first.base_offset <= target <= first.last_offset


def test_read_limits_and_min_one_message(tmp_path):
    log = open_log(tmp_path, Clock())
    append(log, n=10, value=b"x" * 200)
    whole = log.read(0, 10, min_one_message=True)
    assert whole.size > 2000  # the first batch goes out whole
    cut = log.read(0, 10, min_one_message=False)
    assert cut.size == 10  # hard limit, like Fetch v0-2
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100, min_one_message=True)
    assert log.read(10, 100, min_one_message=True) is None  # at the log end: nothing yet


def test_offset_for_timestamp_and_max_timestamp(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=600)
    t0 = 1_000_000
    for i in range(20):
        append(log, ts=t0 + i * 10)
    assert log.offset_for_timestamp(t0 + 55) == (6, t0 + 60)
    assert log.offset_for_timestamp(t0 + 1000) is None
    assert log.max_timestamp_offset() == (19, t0 + 190)


def test_retention_ms_deletes_prefix_only_and_keeps_the_log_usable(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=400, retention_ms=HOUR)
    old = clock.now - 2 * HOUR
    for i in range(6):
        append(log, ts=old)
    for i in range(3):
        append(log, ts=clock.now)
    deleted = log.run_retention(clock.now)
    assert deleted > 0
    assert log.log_start_offset == log.segments[0].base_offset <= 6
    assert [o for o, _ in read_all(log)][-3:] == [6, 7, 8]


def test_retention_never_deletes_the_empty_active_segment_and_rolls_when_all_expire(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, retention_ms=1000)
    append(log, ts=clock.now - 10_000)
    assert log.run_retention(clock.now) == 1
    assert log.log_start_offset == 1 == log.log_end_offset and len(log.segments) == 1
    assert log.run_retention(clock.now) == 0


def test_retention_bytes_keeps_at_most_one_segment_over(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=400, retention_bytes=1000)
    for _ in range(20):
        append(log)
    log.run_retention(Clock().now)
    assert log.size_in_bytes - log.segments[0].size <= 1000


def test_compact_only_log_has_no_time_retention(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, cleanup_policy="compact", retention_ms=1)
    append(log, ts=0)
    append(log, ts=0)
    assert log.run_retention(clock.now) == 0


def test_delete_records_before(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=400)
    for _ in range(20):
        append(log)
    bases, size = [s.base_offset for s in log.segments], log.size_in_bytes
    assert log.delete_records_before(9) == 9
    assert [s.base_offset for s in log.segments] == bases and log.size_in_bytes == size  # only the offset moved
    assert read_all(log)[0][0] == 9
    assert log.run_retention(log.clock()) > 0  # the next retention pass removes what lies wholly below
    assert log.segments[0].base_offset <= 9 < (log.segments[1].base_offset if len(log.segments) > 1 else 99)
    assert log.log_start_offset == 9 and read_all(log)[0][0] == 9
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(21)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100, min_one_message=True)


def test_append_must_continue_at_log_end(tmp_path):
    log = open_log(tmp_path, Clock())
    append(log)
    from .lead_helpers import batch

    with pytest.raises(ValueError):
        log.append(batch(5), 5, 5, 0)
