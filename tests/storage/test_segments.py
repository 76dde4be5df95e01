"""Segment files as Kafka writes them: names, index entries, preallocation, lazy open, slices."""

from __future__ import annotations

import errno
import os
import struct

import pytest

from protocol.records import iter_batches
from storage.index import OffsetIndex, TimeIndex

from ..open_files import open_files_under
from .lead_helpers import Clock, append, batch, config, crash, manager, open_log, read_all


def _entries(path, fmt):
    data = path.read_bytes()
    return list(struct.iter_unpack(fmt, data))


def test_file_names_are_20_digit_base_offsets(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=300)
    for _ in range(5):
        append(log)
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert names == [f"{s.base_offset:020d}.log" for s in log.segments]
    assert all((tmp_path / n.replace(".log", ".index")).exists() for n in names)


def test_index_entries_follow_kafkas_append_rule(tmp_path):
    """An entry is written when more than index.interval.bytes were appended since the last one;
    it maps the last offset of the append to the position where the append starts."""
    log = open_log(tmp_path, Clock(), index_interval_bytes=150)
    sizes, positions, lasts = [], [], []
    for i in range(12):
        positions.append(log.active.size)
        first, last = append(log, n=1 + i % 2)
        sizes.append(log.active.size - positions[-1])
        lasts.append(last)
    expected, since = [], 0
    for size, position, last in zip(sizes, positions, lasts):
        if since > 150:
            expected.append((last, position))
            since = 0
        since += size
    log.close()
    assert expected and [(rel, pos) for rel, pos in _entries(tmp_path / f"{0:020d}.index", ">ii")] == expected


def test_indexes_are_preallocated_then_trimmed_at_roll_and_close(tmp_path):
    log = open_log(tmp_path, Clock(), segment_index_bytes=1000, index_interval_bytes=0, segment_bytes=2000)
    append(log)
    index = tmp_path / f"{0:020d}.index"
    time_index = tmp_path / f"{0:020d}.timeindex"
    assert index.stat().st_size == 1000 // 8 * 8 and time_index.stat().st_size == 1000 // 12 * 12
    while len(log.segments) == 1:
        append(log)
    entries = len(log.segments[0].offset_index)
    assert entries > 0 and index.stat().st_size == entries * 8
    # the final time-index entry holds the segment's largest timestamp
    last_ts, _ = _entries(time_index, ">qi")[-1]
    assert last_ts == log.segments[0].largest_timestamp
    log.close()
    active = log.active
    assert (tmp_path / f"{active.base_offset:020d}.index").stat().st_size == len(active.offset_index) * 8


def test_time_index_only_grows(tmp_path):
    log = open_log(tmp_path, Clock(), index_interval_bytes=0)
    for ts in [100, 50, 300, 200, 400, 400]:
        append(log, ts=ts)
    log.close()
    stamps = [ts for ts, _ in _entries(tmp_path / f"{0:020d}.timeindex", ">qi")]
    assert stamps == sorted(set(stamps)) and stamps[-1] == 400


def test_offset_index_lookup_matches_brute_force(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", 100, 8 * 50)
    entries = [(100 + k * 3, k * 70 + 10) for k in range(1, 40)]
    for offset, position in entries:
        assert index.append(offset, position)
    for target in range(90, 240):
        below = [e for e in entries if e[0] <= target]
        assert index.lookup(target) == (below[-1] if below else (100, 0))
    index.close()
    again = OffsetIndex(tmp_path / "x.index", 100, 8 * 50)
    assert again.load(log_size=10**6) and again.lookup(150) == index.lookup(150)


def test_time_index_reserves_its_last_slot(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", 0, 12 * 4)
    assert [index.maybe_append(ts, ts) for ts in (1, 2, 3, 4)] == [True, True, True, False]
    assert index.is_full() and index.maybe_append(5, 5, skip_full_check=True)


def test_clean_open_reads_no_segment_until_used(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 3, {"segment.bytes": "400"})
    for p in range(3):
        for _ in range(12):
            append(lm.get_log("t", p))
    expected = read_all(lm.get_log("t", 1))
    lm.close()
    lm2 = manager(tmp_path, clock)
    segments = [s for p in range(3) for s in lm2.get_log("t", p).segments]
    assert len(segments) > 6
    assert all(s._handle is None and not s._loaded for s in segments)  # nothing opened or read
    assert read_all(lm2.get_log("t", 1)) == expected
    assert lm2.get_log("t", 2).log_end_offset == 12


def test_slice_stays_readable_after_its_segment_is_deleted(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=300, file_delete_delay_ms=0)
    for _ in range(6):
        append(log)
    piece = log.read(0, 10_000, min_one_message=True)
    before = piece.read_bytes()
    log.delete_records_before(5)
    log.run_retention(clock.now)  # the segments below the new start go at the retention pass
    log.delete_expired_files(clock.now + 1)
    assert not (tmp_path / f"{0:020d}.log").exists() and not list(tmp_path.glob("*.deleted"))
    assert os.pread(piece.fileno, piece.size, piece.position) == before


def test_read_at_reads_windows_of_a_slice_and_never_past_its_end(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=10_000)
    for _ in range(4):
        append(log)
    piece = log.read(1, 10_000, min_one_message=True)
    whole = piece.read_bytes()
    assert piece.position > 0 and len(whole) == piece.size
    windows = [piece.read_at(at, 7) for at in range(0, piece.size, 7)]
    assert b"".join(windows) == whole
    assert piece.read_at(piece.size - 3, 100) == whole[-3:]
    assert piece.read_at(piece.size, 100) == b"" and piece.read_at(piece.size + 5, 10) == b""


def _six_small_segments(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=300, file_delete_delay_ms=60_000)
    for _ in range(6):
        append(log)
    return log


def test_deleted_files_wait_for_file_delete_delay(tmp_path):
    clock = Clock()
    log = _six_small_segments(tmp_path, clock)
    log.delete_records_before(5)
    log.run_retention(clock.now)
    assert list(tmp_path.glob("*.log.deleted"))
    log.delete_expired_files(clock.now + 59_999)
    assert list(tmp_path.glob("*.log.deleted"))
    log.delete_expired_files(clock.now + 60_000)
    assert not list(tmp_path.glob("*.deleted"))


def test_the_delete_delay_is_the_one_in_force_when_the_files_were_renamed(tmp_path):
    """Kafka's LocalLog.deleteSegmentFiles schedules the removal with file.delete.delay.ms as it is then."""
    clock = Clock()
    log = _six_small_segments(tmp_path, clock)
    log.delete_records_before(3)
    log.run_retention(clock.now)
    first = sorted(tmp_path.glob("*.log.deleted"))
    assert first
    log.config = config(segment_bytes=300, file_delete_delay_ms=0)
    log.delete_expired_files(clock.now + 59_999)
    assert sorted(tmp_path.glob("*.log.deleted")) == first  # still waiting their 60 s
    log.delete_records_before(5)
    log.run_retention(clock.now)
    assert len(list(tmp_path.glob("*.log.deleted"))) > len(first)
    log.delete_expired_files(clock.now)  # renamed under a delay of 0: due at once
    assert sorted(tmp_path.glob("*.log.deleted")) == first
    log.delete_expired_files(clock.now + 60_000)
    assert not list(tmp_path.glob("*.deleted"))


def test_read_stops_below_max_offset(tmp_path):
    log = open_log(tmp_path, Clock())
    for _ in range(5):
        append(log, n=2)
    piece = log.read(0, 1 << 20, min_one_message=True, max_offset=6)
    offsets = [b.last_offset for b in iter_batches(memoryview(piece.read_bytes()))]
    assert offsets == [1, 3, 5]
    assert log.read(6, 1 << 20, min_one_message=True, max_offset=6) is None
    mid = log.read(3, 1 << 20, min_one_message=True)
    assert next(iter_batches(memoryview(mid.read_bytes()))).base_offset == 2  # the batch holding 3


def test_roll_on_offset_overflow(tmp_path):
    log = open_log(tmp_path, Clock())
    append(log)
    first = 1
    far = first + 2**31
    log.append(batch(first, 1), first, first, 0)  # normal
    log.append(_wide_batch(2, far), 2, far, 0)  # offsets 2..far do not fit int32 relative to base 0
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.log_end_offset == far + 1


def _wide_batch(first: int, last: int) -> bytes:
    data = bytearray(batch(first, 1))
    struct.pack_into(">i", data, 23, last - first)  # lastOffsetDelta; CRC is not checked on append
    return bytes(data)


def test_truncate_to_removes_everything_from_the_batch_holding_the_offset(tmp_path):
    log = open_log(tmp_path, Clock(), segment_bytes=400)
    for _ in range(12):
        append(log, n=2)
    log.truncate_to(9)
    assert log.log_end_offset == 8 and [o for o, _ in read_all(log)] == list(range(8))
    assert all(s.base_offset <= 8 for s in log.segments)
    first, _ = append(log)
    assert first == 8


def test_segment_without_timestamps_rolls_on_wall_clock(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_ms=1000)
    first = log.log_end_offset
    log.append(batch(first, ts=-1), first, first, -1)
    clock.advance(1000)
    log.append(batch(1, ts=-1), 1, 1, -1)
    assert len(log.segments) == 1
    clock.advance(1)
    log.append(batch(2, ts=-1), 2, 2, -1)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_largest_timestamp_falls_back_to_the_log_file_mtime(tmp_path):
    """Kafka's LogSegment.largestTimestamp: the max record timestamp, else the .log file's last-modified time."""
    clock = Clock()
    log = open_log(tmp_path, clock)
    log.append(batch(0, ts=-1), 0, 0, -1)
    seg = log.active
    os.utime(seg.path, (1_600_000_000.5, 1_600_000_000.5))
    assert (seg.largest_timestamp, seg.largest_timestamp_or_mtime()) == (-1, 1_600_000_000_500)
    append(log, ts=1_700_000_000_123)
    assert seg.largest_timestamp_or_mtime() == 1_700_000_000_123


def test_retention_ms_ages_a_segment_without_timestamps_by_its_mtime(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, retention_ms=60_000)
    log.append(batch(0, ts=-1), 0, 0, -1)
    log.roll()
    os.utime(log.segments[0].path, (clock.now / 1000 - 59,) * 2)
    assert log.run_retention(clock.now) == 0
    os.utime(log.segments[0].path, (clock.now / 1000 - 61,) * 2)
    assert log.run_retention(clock.now) == 1
    assert log.log_start_offset == 1


def test_unclean_open_rescans_only_from_the_recovery_point(tmp_path, monkeypatch):
    from storage.segment import Segment

    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "400"})
    log = lm.get_log("t", 0)
    for _ in range(20):
        append(log)
    lm.write_checkpoints()  # recovery point = base of the active segment
    rescanned_from = log.recovery_point
    for _ in range(3):
        append(log)
    crash(lm)
    del lm, log
    scanned = []
    real = Segment.recover
    monkeypatch.setattr(Segment, "recover", lambda self, *a: (scanned.append(self.base_offset), real(self, *a))[1])
    lm2 = manager(tmp_path, clock)
    log2 = lm2.get_log("t", 0)
    assert scanned and min(scanned) == max(s.base_offset for s in log2.segments if s.base_offset <= rescanned_from)
    assert log2.log_end_offset == 23


def test_log_start_offset_above_every_segment_leaves_one_empty_segment(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    for _ in range(3):
        append(lm.get_log("t", 0))
    lm.close()
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nt 0 50\n")
    lm2 = manager(tmp_path, clock)
    log = lm2.get_log("t", 0)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (50, 50, 1)
    assert log.active.base_offset == 50 and not (tmp_path / "t-0" / f"{0:020d}.log").exists()


def test_a_segment_that_cannot_open_its_log_file_closes_its_indexes(tmp_path, monkeypatch):
    """The index files are opened first and hold plain descriptors, which nothing would close later."""
    from storage import StorageError, segment
    from storage.config import ConfigModel

    def no_descriptors_left(*args, **kwargs):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(segment, "FileHandle", no_descriptors_left)
    config = ConfigModel.from_broker_props({}).effective({})
    with pytest.raises(StorageError, match="creating segment .*00000000000000000000.log failed: Too many open files"):
        segment.Segment.create(tmp_path, 0, config, 0)
    assert open_files_under(tmp_path) == 0 and sorted(p.name for p in tmp_path.iterdir()) == []
