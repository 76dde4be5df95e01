"""Recovery and faults: every damage is survived and no complete valid batch is lost.

Damage injected: a truncated ``.log``, a zeroed tail, a garbage tail, a missing
or corrupt index, stray ``.cleaned``/``.swap``/``.deleted`` files, a
checkpoint with a bad line, ENOSPC and EROFS while appending, and a
randomized kill (object dropped without close, files cut at random bytes).
"""

from __future__ import annotations

import errno
import logging
import os
import random

import pytest

from protocol.records import iter_batches
from storage import StorageError
from storage.checkpoint import read_checkpoint, write_checkpoint
from storage.log_opening import CLEAN_SHUTDOWN

from .lead_helpers import Clock, append, crash, manager, read_all, reopen


def _fill(path, clock, n=40, **props):
    lm = manager(path, clock, **props)
    lm.create_topic("t", 1, {"segment.bytes": "1500", "index.interval.bytes": "200"})
    log = lm.get_log("t", 0)
    for _ in range(n):
        append(log)
    return lm, log


def _segment_files(path, suffix=".log"):
    return sorted((path / "t-0").glob("*" + suffix))


def test_clean_restart_opens_without_rescanning(tmp_path):
    clock = Clock()
    lm, log = _fill(tmp_path, clock)
    expected = read_all(log)
    lm.close()
    assert (tmp_path / CLEAN_SHUTDOWN).exists()
    lm2, log2 = reopen(tmp_path, clock)
    assert not (tmp_path / CLEAN_SHUTDOWN).exists()  # a crash from now on will be noticed
    assert read_all(log2) == expected and log2.log_end_offset == 40
    assert log2.recovery_point == 40


@pytest.mark.parametrize("damage", ["truncate", "zeros", "garbage"])
def test_torn_or_corrupt_tail_is_truncated(tmp_path, damage):
    clock = Clock()
    lm, log = _fill(tmp_path, clock)
    expected = read_all(log)
    last = _segment_files(tmp_path)[-1]
    size = last.stat().st_size
    if damage == "truncate":
        os.truncate(last, size - 7)
        expected = [e for e in expected if e[0] < 39]
    elif damage == "zeros":
        with open(last, "ab") as f:
            f.write(bytes(100))
    else:
        with open(last, "ab") as f:
            f.write(random.Random(1).randbytes(300))
    crash(lm)
    del lm, log  # unclean: no close, no marker
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == expected
    assert log2.log_end_offset == len(expected)
    first, _ = append(log2)
    assert first == len(expected)


def test_corrupt_batch_in_an_older_segment_drops_it_and_everything_after(tmp_path):
    clock = Clock()
    lm, log = _fill(tmp_path, clock)
    write_checkpoint(tmp_path / "recovery-point-offset-checkpoint", {("t", 0): 0})  # rescan every segment
    segs = _segment_files(tmp_path)
    victim = segs[1]
    data = bytearray(victim.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's CRC-covered bytes
    victim.write_bytes(bytes(data))
    crash(lm)
    del lm, log
    lm2, log2 = reopen(tmp_path, clock)
    survivors = read_all(log2)
    first_lost = int(victim.name.split(".")[0])
    assert survivors == [(i, b"v" * 50) for i in range(first_lost)]
    assert len(_segment_files(tmp_path)) == 2


def test_missing_or_corrupt_index_is_rebuilt(tmp_path):
    clock = Clock()
    lm, log = _fill(tmp_path, clock)
    expected = read_all(log)
    lm.close()
    indexes = _segment_files(tmp_path, ".index")
    assert indexes
    indexes[0].unlink()
    if len(indexes) > 1:
        indexes[1].write_bytes(b"\xff" * 13)
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == expected


def test_stray_cleaner_files_are_removed_and_swaps_completed(tmp_path, caplog):
    clock = Clock()
    lm, log = _fill(tmp_path, clock)
    expected = read_all(log)
    lm.close()
    d = tmp_path / "t-0"
    (d / "00000000000000000099.log.cleaned").write_bytes(b"partial cleaner output")
    (d / "00000000000000000003.log.deleted").write_bytes(b"old")
    caplog.set_level(logging.DEBUG, logger="storage.log_loader")
    lm2, log2 = reopen(tmp_path, clock)
    assert not list(d.glob("*.cleaned")) and not list(d.glob("*.deleted"))
    assert read_all(log2) == expected
    # a stop within log.segment.delete.delay.ms of a deletion leaves these: Kafka's LogLoader deletes them at DEBUG
    removed = [r for r in caplog.records if "00000000000000000003.log.deleted" in r.getMessage()]
    assert [r.levelno for r in removed] == [logging.DEBUG]


def test_bad_checkpoint_lines_are_skipped(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_checkpoint(path, {("t", 0): 5, ("u", 3): 9})
    assert read_checkpoint(path) == {("t", 0): 5, ("u", 3): 9}
    path.write_text("0\n3\nt 0 5\nthis is not a line\nu x 9\n")
    assert read_checkpoint(path) == {("t", 0): 5}
    path.write_text("7\n1\nt 0 5\n")
    assert read_checkpoint(path) == {}


def test_checkpoint_with_a_wrong_count_is_read_and_reported(tmp_path, caplog):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text("0\n5\nt 0 5\nu 1 2\n")  # cut short after two of five lines
    assert read_checkpoint(path) == {("t", 0): 5, ("u", 1): 2}
    assert "announces '5' entries and holds 2 lines" in caplog.text


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_disk_errors_fail_the_append_take_the_dir_offline_and_keep_earlier_data(tmp_path, monkeypatch, code):
    clock = Clock()
    lm, log = _fill(tmp_path, clock, n=5)
    before = read_all(log)
    real = os.pwrite

    def failing(fd, data, offset):
        real(fd, bytes(data)[:10], offset)  # a partial write, then the error
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "pwrite", failing)
    with pytest.raises(StorageError):
        append(log)
    monkeypatch.setattr(os, "pwrite", real)
    assert log.offline and log.log_end_offset == 5
    with pytest.raises(StorageError):  # no append reuses offset 5 before a restart
        append(log)
    lm.close()  # no clean-shutdown marker in an offline dir: the restart recovers it
    assert not (tmp_path / CLEAN_SHUTDOWN).exists()
    lm2, log2 = reopen(tmp_path, clock)
    assert read_all(log2) == before
    append(log2)
    assert read_all(log2) == before + [(5, b"v" * 50)]


@pytest.mark.parametrize("seed", range(12))
def test_randomized_kill_keeps_every_batch_but_the_damaged_ones(tmp_path, seed):
    """A cut segment loses its batches from the cut on; later segments survive when they were flushed
    (the cut one is below the recovery point) or when the cut fell between batches (nothing truncated)."""
    rng = random.Random(seed)
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": str(rng.choice([600, 1500, 5000])), "index.interval.bytes": "100"})
    log = lm.get_log("t", 0)
    for _ in range(rng.randint(5, 60)):
        append(log, n=rng.randint(1, 4), value=rng.randbytes(rng.randint(1, 90)))
    if rng.random() < 0.5:
        lm.write_checkpoints()
    expected, bases = read_all(log), [s.base_offset for s in log.segments]
    rp = read_checkpoint(tmp_path / "recovery-point-offset-checkpoint").get(("t", 0), 0)
    i = rng.randrange(len(bases))
    victim = _segment_files(tmp_path)[i]
    cut = rng.randint(0, victim.stat().st_size)
    whole = list(iter_batches(memoryview(victim.read_bytes()[:cut])))  # complete before the cut
    survivors = whole[-1].next_offset if whole else bases[i]
    lost_end = bases[i + 1] if i + 1 < len(bases) else len(expected)
    flushed = i + 1 < len(bases) and bases[i + 1] <= rp  # the recovery point is in a later segment
    between_batches = cut == sum(b.size_in_bytes for b in whole)
    os.truncate(victim, cut)
    crash(lm)
    del lm, log
    lm2, log2 = reopen(tmp_path, clock)
    got = read_all(log2)
    kept = [r for r in expected if not survivors <= r[0] < lost_end]
    assert got == (kept if flushed or between_batches else [r for r in kept if r[0] < survivors])
    first, _ = append(log2)
    assert first == (got[-1][0] + 1 if got else 0)


def test_group_commit_uses_far_fewer_fsyncs_than_appends(tmp_path, monkeypatch):
    import threading

    clock = Clock()
    lm = manager(tmp_path, clock, **{"log.flush.durable.enable": "true"})
    lm.create_topic("t", 1, {})
    log = lm.get_log("t", 0)
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    lock = threading.Lock()

    def producer(n):
        for _ in range(n):
            with lock:
                append(log)
                target = lm.flush_generation()
            lm.sync_to(target)

    threads = [threading.Thread(target=producer, args=(50,)) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert log.log_end_offset == 400
    assert lm.flushed_generation() == lm.flush_generation() == 400
    assert len(calls) < 400


def test_a_marker_the_disk_refuses_is_left_out_and_the_next_start_recovers(tmp_path, monkeypatch, caplog):
    """Kafka swallows a failed write of the clean-shutdown file (``CoreUtils.swallow`` in
    ``LogManager.shutdown``): the stop goes on, the dir's lock is released, and the next start, finding no
    marker, recovers the logs and keeps every record."""
    from storage import fileops

    lm, log = _fill(tmp_path, Clock(), n=3)
    expected = read_all(log)
    real = fileops.open_file

    def no_space_for_the_marker(path, *args, **kwargs):
        if CLEAN_SHUTDOWN in str(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(fileops, "open_file", no_space_for_the_marker)
    lm.close()  # does not raise
    monkeypatch.undo()
    assert not (tmp_path / CLEAN_SHUTDOWN).exists() and "could not write the clean-shutdown marker" in caplog.text
    again, log = reopen(tmp_path, Clock())  # the lock was released; no marker: recovered
    assert read_all(log) == expected and log.log_end_offset == 3
    again.close()
