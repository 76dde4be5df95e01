"""Storage API details: append results, slice metadata, the cleaner checkpoint, damaged topic metadata,
Kafka's time-roll rule for timestamp-less batches, and faults while rolling or fsyncing."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from storage import LogManager, StorageError, fileops
from storage.checkpoint import read_checkpoint
from storage.index import OffsetIndex
from storage.dir_checkpoints import CLEANER_OFFSETS
from storage.topic_store import TOPICS_FILE

from .lead_helpers import Clock, append, batch, crash, manager, open_log, read_all, reopen


def test_append_returns_offsets_position_and_append_time(tmp_path):
    clock = Clock()
    log = open_log(tmp_path / "a", clock, segment_bytes=400)
    infos = []
    for n in (1, 3, 2, 1, 4, 2):
        first = log.log_end_offset
        data = batch(first, n, clock.now)
        infos.append((log.append(data, first, first + n - 1, clock.now + n - 1), data))
    assert len(log.segments) > 1
    for info, data in infos:
        seg = next(s for s in log.segments if s.base_offset == info.segment_base_offset)
        assert os.pread(seg.fileno(), info.size, info.position) == data
        assert info.log_append_time == -1 and info.max_timestamp == clock.now + info.last_offset - info.first_offset
    assert [i.first_offset for i, _ in infos] == [0, 1, 4, 6, 7, 11]
    stamped = open_log(tmp_path / "b", clock, message_timestamp_type="LogAppendTime")
    stamp = clock.now
    clock.advance(7)  # the broker stamped the batch a moment before the append
    assert stamped.append(batch(0, ts=stamp), 0, 0, stamp).log_append_time == stamp


def test_read_slice_reports_high_watermark_and_log_start(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, segment_bytes=300)
    for _ in range(12):
        append(log)
    log.delete_records_before(5)
    piece = log.read(7, 1 << 20, min_one_message=True)
    assert (piece.high_watermark, piece.log_start_offset) == (12, log.log_start_offset)
    assert log.log_start_offset == 5 and piece.segment_base_offset <= 7
    seg = next(s for s in log.segments if s.base_offset == piece.segment_base_offset)
    assert piece.fileno == seg.fileno() and piece.read_bytes() == os.pread(seg.fileno(), piece.size, piece.position)


def test_read_says_when_max_bytes_cut_the_first_batch(tmp_path):
    log = open_log(tmp_path, Clock())
    append(log, n=3)
    append(log)
    first = log.read(0, 1 << 20, min_one_message=True)
    size = next(s for s in log.segments).batch_end(0)
    cut = log.read(0, size - 1, min_one_message=False)
    assert (cut.size, cut.first_entry_incomplete) == (size - 1, True)  # Kafka's firstEntryIncomplete
    assert not log.read(0, size - 1, min_one_message=True).first_entry_incomplete  # taken whole
    assert not log.read(0, size, min_one_message=False).first_entry_incomplete
    assert not first.first_entry_incomplete and first.size > size


def test_a_read_that_fits_whole_does_not_read_the_first_batch_header_again(tmp_path, monkeypatch):
    """The first batch's end only matters when ``max_bytes`` cuts the slice; a read that fits skips that pread."""
    from storage.segment import Segment

    log = open_log(tmp_path, Clock())
    append(log, n=3)
    append(log)
    calls = []
    real = Segment.batch_end
    monkeypatch.setattr(Segment, "batch_end", lambda seg, pos: calls.append(pos) or real(seg, pos))
    whole = log.read(0, 1 << 20, min_one_message=True)
    assert (calls, whole.first_entry_incomplete) == ([], False)
    size = real(log.segments[0], 0)
    assert log.read(0, size - 1, min_one_message=True).size == size and calls == [0]  # min_one widens to it


def test_cleaner_offset_checkpoint_is_kafkas_text_and_survives_restarts(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("c", 2, {"cleanup.policy": "compact"})
    lm.create_topic("d", 1, {"cleanup.policy": "compact"})
    lm.update_cleaner_offset("c", 1, 42)
    lm.update_cleaner_offset("d", 0, 7)
    path = tmp_path / CLEANER_OFFSETS
    assert path.read_text().splitlines() == ["0", "2", "c 1 42", "d 0 7"]
    lm.close()
    lm2 = manager(tmp_path, clock)
    assert lm2.cleaner_offsets() == {("c", 1): 42, ("d", 0): 7}
    lm2.delete_topic("d")
    assert lm2.cleaner_offsets() == {("c", 1): 42} and read_checkpoint(path) == {("c", 1): 42}
    lm2.close()
    path.write_text("0\n3\nc 1 42\nc one 5\ngone 0 9\n")  # a bad line and a partition that no longer exists
    assert manager(tmp_path, clock).cleaner_offsets() == {("c", 1): 42}


@pytest.mark.parametrize("text", ["{not json", '{"t": {"topic_id": "zz"}}', '["t"]', ""])
def test_damaged_topic_metadata_stops_the_start_with_a_clear_error(tmp_path, text):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"cleanup.policy": "compact"})
    lm.close()
    (tmp_path / TOPICS_FILE).write_text(text)
    with pytest.raises(StorageError) as info:
        manager(tmp_path, clock)
    assert TOPICS_FILE in str(info.value) and info.value.errno == errno.EIO


def test_batch_without_timestamp_is_measured_against_record_time_not_wall_clock(tmp_path):
    """Kafka's timeWaitedForRoll: once the segment has a first timestamp, incoming max timestamp minus it."""
    clock = Clock()
    log = open_log(tmp_path, clock, segment_ms=1000)
    append(log, ts=clock.now)
    clock.advance(10_000)
    first = log.log_end_offset
    log.append(batch(first), first, first, -1)  # no timestamp: -1 - first ts is never past segment.ms
    assert len(log.segments) == 1
    append(log, ts=clock.now)
    assert len(log.segments) == 2 and log.active.base_offset == 2


def test_roll_into_a_read_only_directory_takes_the_dir_offline_and_damages_nothing(tmp_path, monkeypatch):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "300"})
    log = lm.get_log("t", 0)
    while len(log.segments) < 2:
        append(log)
    while log.active.size + len(batch(0)) <= 300:
        append(log)
    before = read_all(log)
    real = fileops.open_file

    def erofs(path, flags, mode=0o644):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(path, flags, mode)

    monkeypatch.setattr(fileops, "open_file", erofs)
    with pytest.raises(StorageError) as info:
        append(log)  # needs a new segment
    assert info.value.errno == errno.EROFS
    assert log.offline and lm.failures.offline == {tmp_path} and log.log_end_offset == len(before)
    monkeypatch.setattr(fileops, "open_file", real)
    with pytest.raises(StorageError):  # offline until a restart, as Kafka's log dir failure
        append(log)
    crash(lm)
    del lm, log  # crash
    _, again = reopen(tmp_path, clock)
    assert read_all(again) == before
    append(again)
    assert read_all(again) == before + [(len(before), b"v" * 50)]


def test_failed_group_commit_fsync_acknowledges_nothing_even_when_a_retry_succeeds(tmp_path, monkeypatch):
    """After a failed fsync the kernel may have dropped the dirty pages: a later fsync that succeeds proves
    nothing, so the appends of the failed round are never acknowledged and the log dir goes offline."""
    clock = Clock()
    lm = manager(tmp_path, clock, **{"log.flush.durable.enable": "true"})
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    append(log)
    target = lm.flush_generation()
    real = fileops.fsync

    def eio(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fileops, "fsync", eio)
    lm.sync_to(target)  # the round covered it: its waiter checks its log, offline (was: a StorageError)
    assert log.offline and log.recovery_point == 0
    monkeypatch.setattr(fileops, "fsync", real)
    lm.sync_to(target)
    assert log.offline and log.recovery_point == 0
    with pytest.raises(StorageError):
        append(log)


def _two_dirs_one_round(tmp_path):
    """A durable-mode manager over dirs ``d0`` and ``d1``, one log of ``t`` in each, both appended to: the
    manager, the ``d0`` log, the ``d1`` log and the generation that covers both appends."""
    lm = LogManager.open([tmp_path / "d0", tmp_path / "d1"], {"log.flush.durable.enable": "true"}, Clock())
    lm.create_topic("t", 2, {})
    healthy, sick = sorted((lm.get_log("t", p) for p in (0, 1)), key=lambda l: l.dir.parent.name)
    append(healthy)
    append(sick)
    return lm, healthy, sick, lm.flush_generation()


def _fsync_failing_in(monkeypatch, root, code: int) -> None:
    """From now on an fsync of a file under ``root`` fails with ``code``; the others are real."""
    real = fileops.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(f"{root}/"):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(fileops, "fsync", fsync)


def test_a_round_failing_one_log_answers_every_waiter_which_finds_that_log_offline(tmp_path, monkeypatch):
    """Two dirs, one log in each, both in one durable-mode round; the second dir's fsync fails. The round goes
    on: the first log is fsynced (its recovery point moves), the second goes offline, and the generation is
    published: every waiter returns and checks its own logs (the broker's Produce, internal topics, group
    store and markers all do), as Kafka answers each append for its own log. Before, a waiter that did not
    pass ``checks_offline`` was refused for the healthy log too, and only while no later round succeeded."""
    lm, healthy, sick, target = _two_dirs_one_round(tmp_path)
    _fsync_failing_in(monkeypatch, tmp_path / "d1", errno.EIO)
    lm.sync_to(target)
    assert sick.offline and not healthy.offline and healthy.recovery_point == 1 and sick.recovery_point == 0
    assert lm.flushed_generation() >= target
    lm.sync_to(target)
    lm.close()


def test_a_round_after_a_partly_failed_one_fails_only_for_its_own_appends(tmp_path, monkeypatch):
    """Round 1 fsyncs the first dir's log and takes the second dir offline (EIO); round 2, for a later append,
    fails whole (EMFILE: nothing about the disk). A waiter of round 1 that checks its logs is still answered
    once a round succeeds: round 2 took only appends after round 1's. Before, round 2's failure was recorded
    from the last published generation, so it covered round 1's appends too and refused their waiter, whose
    records were on disk."""
    lm, healthy, sick, first = _two_dirs_one_round(tmp_path)
    real = fileops.fsync
    with monkeypatch.context() as m:
        _fsync_failing_in(m, tmp_path / "d1", errno.EIO)
        lm.sync_to(first)
        append(healthy)
        _fsync_failing_in(m, tmp_path / "d0", errno.EMFILE)
        with pytest.raises(OSError):
            lm.sync_to(lm.flush_generation())
    assert sick.offline and not healthy.offline and fileops.fsync is real
    lm.sync_to(first)
    assert lm.flushed_generation() >= first
    lm.close()


def test_lazy_segment_load_is_safe_from_two_threads(tmp_path, monkeypatch):
    """The checkpoint writer (a worker thread) and the owner thread may both be first to touch a cold segment."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    for _ in range(25):
        append(lm.get_log("t", 0))
    lm.close()
    _, log = reopen(tmp_path, clock)
    real_load = OffsetIndex.load

    def slow_load(self, log_size):
        time.sleep(0.2)  # widen the window in which a half-loaded segment would be visible
        return real_load(self, log_size)

    monkeypatch.setattr(OffsetIndex, "load", slow_load)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(log.recovery_point))
    worker.start()
    time.sleep(0.05)
    assert log.log_end_offset == 25  # not the base offset of a segment still being loaded
    worker.join()
    assert seen == [25]


def test_durable_mode_high_watermark_is_the_fsynced_offset(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock, **{"log.flush.durable.enable": "true"})
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    append(log, n=3)
    assert (log.log_end_offset, log.high_watermark) == (3, 0)
    assert log.read(0, 1 << 20, min_one_message=True) is None  # nothing a consumer may see yet
    lm.sync_to(lm.flush_generation())
    assert log.high_watermark == 3 and read_all(log) == [(i, b"v" * 50) for i in range(3)]
    append(log, n=2)
    crash(lm)
    del lm, log  # a crash before the next fsync round: on restart the survivors are fsynced, then visible
    lm = manager(tmp_path, clock, **{"log.flush.durable.enable": "true"})
    log = lm.get_log("t", 0)
    assert log.high_watermark == log.log_end_offset == 5 == log.recovery_point


def test_without_durable_mode_the_high_watermark_is_the_log_end(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    append(log, n=3)
    assert log.high_watermark == 3 and log.recovery_point == 0
