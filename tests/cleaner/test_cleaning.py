"""One cleaning round at a time, on real logs under an injected clock."""

from __future__ import annotations

import os

import pytest

from cleaner import Cleaner, CleanerConfig, LogCleaner, OffsetMap, group_segments, log_to_clean
from protocol.records import TOMBSTONE_FLAG, Codec, iter_batches
from tests.cleaner.helpers import Model, compacted_log, open_manager, read_batches, read_records, write
from tests.storage.lead_helpers import Clock

DAY = 86_400_000


def _cleaner(lm, clock, **kw) -> LogCleaner:
    return LogCleaner(lm, CleanerConfig(**kw), clock=clock)


def _fill(log_, model, rounds: int, keys: int, per_batch: int = 5, **kw) -> None:
    n = 0
    for _ in range(rounds):
        recs = []
        for _ in range(per_batch):
            recs.append((b"k%d" % (n % keys), b"v%d" % n, 0))
            n += 1
        model.write(log_, recs, **kw)


def test_a_round_keeps_the_latest_value_per_key_and_every_offset(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, segment_bytes=1024)
    model = Model()
    _fill(log_, model, rounds=40, keys=7)
    log_.roll()
    before = log_.size_in_bytes
    assert _cleaner(lm, clock).run_once()
    records = model.check(log_, cleaned_below=log_.log_end_offset)
    assert sorted(r.key for r in records) == sorted(b"k%d" % i for i in range(7))
    assert log_.size_in_bytes < before / 3
    assert lm.cleaner_offsets()[("t", 0)] == log_.log_end_offset
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith((".cleaned", ".swap"))]


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_compressed_batches_are_rebuilt_with_their_codec(tmp_path, codec):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    model = Model()
    _fill(log_, model, rounds=10, keys=3, codec=codec)
    log_.roll()
    _cleaner(lm, clock).run_once()
    model.check(log_, cleaned_below=log_.log_end_offset)
    assert {b.compression for b in read_batches(log_)} == {codec}


def test_offsets_and_last_offset_of_a_rebuilt_batch_are_preserved(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    model = Model()
    model.write(log_, [(b"a", b"1", 0), (b"b", b"1", 0), (b"a", b"2", 0)])  # offsets 0..2
    model.write(log_, [(b"b", b"2", 0)])  # 3
    log_.roll()
    _cleaner(lm, clock).run_once()
    batches = read_batches(log_)
    assert [(b.base_offset, b.last_offset, b.records_count) for b in batches] == [(0, 2, 1), (3, 3, 1)]
    assert [r.offset for r in read_records(log_)] == [2, 3]
    assert log_.log_end_offset == 4


def test_keyless_records_in_the_cleaned_range_are_dropped(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    model = Model()
    model.write(log_, [(None, b"x", 0), (b"a", b"1", 0)])
    log_.roll()
    c = _cleaner(lm, clock)
    c.run_once()
    assert [(r.offset, r.key) for r in read_records(log_)] == [(1, b"a")]
    assert c.last_stats[0].invalid_records == 1


def test_tombstones_get_a_delete_horizon_and_go_after_it(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock, **{"log.cleaner.min.cleanable.ratio": "0.01"})
    log_ = compacted_log(lm, delete_retention_ms=1000)
    model = Model()
    model.write(log_, [(b"a", b"1", 0), (b"b", b"1", 0)])
    model.write(log_, [(b"a", None, 0), (b"b", b"payload", TOMBSTONE_FLAG)])  # null and flagged tombstones
    log_.roll()
    c = _cleaner(lm, clock)
    c.run_once()
    records = read_records(log_)
    assert [(r.key, r.value, r.attributes) for r in records] == [(b"a", None, 0), (b"b", b"payload", 1)]
    (batch,) = read_batches(log_)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == clock.now + 1000
    assert [r.timestamp for r in records] == [clock.now, clock.now]  # deltas rebased, timestamps kept
    model.write(log_, [(b"c", b"1", 0)])
    log_.roll()
    clock.advance(999)
    c.run_once()
    assert [r.key for r in read_records(log_)] == [b"a", b"b", b"c"]
    model.write(log_, [(b"d", b"1", 0)])
    log_.roll()
    clock.advance(1)
    c.run_once()
    assert [r.key for r in read_records(log_)] == [b"c", b"d"]


def test_an_empty_value_is_not_a_tombstone(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, delete_retention_ms=0)
    Model().write(log_, [(b"a", b"", 0)])
    log_.roll()
    c = _cleaner(lm, clock)
    for _ in range(3):
        Model().write(log_, [(b"x", b"1", 0)])
        log_.roll()
        clock.advance(10)
        c.run_once()
    assert (b"a", b"") in [(r.key, r.value) for r in read_records(log_)]
    assert not read_batches(log_)[0].has_delete_horizon


def test_a_full_offset_map_ends_the_round_early_and_the_next_round_goes_on(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, segment_bytes=512, min_cleanable_dirty_ratio=0.01)
    model = Model()
    for i in range(30):
        model.write(log_, [(b"key-%d" % i, b"v", 0), (b"key-%d" % i, b"w", 0)])
    log_.roll()
    c = _cleaner(lm, clock, dedupe_buffer_size=24 * 12, io_buffer_load_factor=0.9)  # 10 keys a round
    assert c.cleaners[0].map.capacity == 10
    c.run_once()
    first_end = lm.cleaner_offsets()[("t", 0)]
    assert 0 < first_end < log_.log_end_offset
    stats = c.last_stats[0]
    assert 0.5 <= stats.map_utilization == pytest.approx(stats.map_records / 12)
    for _ in range(10):
        c.run_once()
    assert lm.cleaner_offsets()[("t", 0)] == log_.log_end_offset
    model.check(log_, cleaned_below=log_.log_end_offset)
    assert len(read_records(log_)) == 30


def test_segments_are_merged_up_to_segment_bytes(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, segment_bytes=600, min_cleanable_dirty_ratio=0.01)
    model = Model()
    for i in range(40):
        model.write(log_, [(b"same", b"v%d" % i, 0)])
    log_.roll()
    assert len(log_.segments) > 5
    c = _cleaner(lm, clock)
    c.run_once()  # groups by the source sizes: each segment alone, most now empty
    assert len(log_.segments) > 5
    model.write(log_, [(b"other", b"x", 0)])
    log_.roll()
    c.run_once()
    assert len(log_.segments) == 2  # everything cleaned fits one segment, plus the active one
    model.check(log_, cleaned_below=log_.log_end_offset)
    names = sorted(p.name for p in log_.dir.iterdir() if not p.name.endswith(".deleted"))
    assert "00000000000000000000.index" in names and "00000000000000000000.timeindex" in names


def test_the_cleaned_segment_indexes_serve_lookups_after_a_reopen(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, segment_bytes=100_000, index_interval_bytes=100)
    model = Model()
    _fill(log_, model, rounds=200, keys=150, per_batch=2)
    log_.roll()
    _cleaner(lm, clock).run_once()
    assert len(log_.segments[0].offset_index) > 5
    expected = [(r.offset, r.value) for r in read_records(log_)]
    lm.close()
    lm2 = open_manager(tmp_path, clock)
    log2 = lm2.get_log("t", 0)
    assert [(r.offset, r.value) for r in read_records(log2)] == expected
    for offset, value in expected[::7]:
        piece = log2.read(offset, 1, min_one_message=True)
        (first,) = iter_batches(memoryview(piece.read_bytes()))
        assert first.base_offset <= offset <= first.last_offset


def test_the_active_segment_is_never_cleaned(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    model = Model()
    _fill(log_, model, rounds=5, keys=1)
    assert not _cleaner(lm, clock).run_once()
    assert len(read_records(log_)) == 25


def test_old_segment_files_are_removed_after_file_delete_delay(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, file_delete_delay_ms=5000)
    _fill(log_, Model(), rounds=5, keys=1)
    log_.roll()
    _cleaner(lm, clock).run_once()
    assert [p for p in os.listdir(log_.dir) if p.endswith(".deleted")]
    clock.advance(5000)
    lm.delete_expired_files(clock())
    assert not [p for p in os.listdir(log_.dir) if p.endswith(".deleted")]


def test_cleaning_by_hand_with_an_injected_map(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    model = Model()
    _fill(log_, model, rounds=4, keys=2)
    log_.roll()
    ends = []
    stats = Cleaner(OffsetMap(1 << 20), clock=clock).clean(log_to_clean(log_, None, clock()), ends.append)
    assert ends == [log_.log_end_offset] and stats.records_read == 20 and stats.records_kept == 2


def test_groups_also_respect_segment_index_bytes(tmp_path):
    """Kafka's groupSegmentsBySize: the summed index entries of a group fit one index, whatever the log sizes."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, segment_bytes=1 << 20, segment_index_bytes=120, index_interval_bytes=1)
    model = Model()
    for i in range(60):
        model.write(log_, [(b"k%d" % i, b"v", 0)])
        if i % 4 == 3:
            log_.roll()  # segments of 4 batches: a few index entries each
    segments = log_.segments[:-1]
    assert len(segments) > 3 and sum(s.size for s in segments) < 1 << 20  # one group by size alone
    groups = group_segments(segments, log_.config)
    assert 1 < len(groups) < len(segments)  # neighbours merge, as far as their indexes fit
    for group in groups:
        offset_bytes, time_bytes = (sum(sizes) for sizes in zip(*(s.index_sizes for s in group)))
        assert offset_bytes <= 120 and time_bytes <= 120
    _cleaner(lm, clock).run_once()
    model.check(log_, cleaned_below=log_.log_end_offset)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
@pytest.mark.parametrize("tombstone", [False, True], ids=["splice", "rebuild-with-horizon"])
def test_a_rebuilt_batch_gets_the_newest_kept_timestamp_as_kafka_does(tmp_path, codec, tombstone):
    """Kafka's filterTo builds the retained records afresh, so maxTimestamp is theirs, not the dropped ones'."""
    from protocol.records import RecordBatchBuilder

    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    t0 = clock()
    builder = RecordBatchBuilder(base_offset=0, compression=codec)
    builder.append(b"a", None if tombstone else b"1", timestamp=t0 + 5)
    builder.append(b"b", b"1", timestamp=t0 + 9)  # the newest, superseded below
    builder.append(b"c", b"1", timestamp=t0 + 2)
    log_.append(builder.build(), 0, 2, t0 + 9)
    write(log_, [(b"b", b"2", 0)])
    log_.roll()
    _cleaner(lm, clock).run_once()
    first = read_batches(log_)[0]
    assert [r.offset for r in first] == [0, 2] and first.max_timestamp == t0 + 5
    assert first.has_delete_horizon is tombstone
    assert [r.timestamp for r in first] == [t0 + 5, t0 + 2]


def test_an_emptied_batch_keeps_its_max_timestamp_and_log_append_time_is_kept(tmp_path):
    from protocol.records import RecordBatchBuilder, TimestampType

    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    t0 = clock()
    builder = RecordBatchBuilder(base_offset=0, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=t0 + 50)
    builder.append(b"a", b"1", timestamp=t0)
    builder.append(b"b", b"1", timestamp=t0)
    log_.append(builder.build(), 0, 1, t0 + 50)
    write(log_, [(b"b", b"2", 0)])
    log_.roll()
    _cleaner(lm, clock).run_once()
    first = read_batches(log_)[0]
    assert first.records_count == 1 and first.max_timestamp == t0 + 50
    assert [r.timestamp for r in first] == [t0 + 50]
