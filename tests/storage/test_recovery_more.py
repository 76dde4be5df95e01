"""More recovery cases: interrupted swaps, orphan indexes, damage below the recovery point, index faults."""

from __future__ import annotations

import errno
import os
import random

import pytest

from storage import LogManager, StorageError, fileops
from storage.checkpoint import write_checkpoint
from storage.file_names import cleaned_log_path

from .lead_helpers import Clock, append, crash, manager, read_all, reopen


def _filled(path, clock, n=30, **overrides):
    lm = manager(path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "700", "index.interval.bytes": "150", **overrides})
    log = lm.get_log("t", 0)
    for _ in range(n):
        append(log)
    return lm, log


def test_interrupted_swap_is_finished(tmp_path):
    """A cleaner output renamed .swap replaces the segments whose offsets it covers."""
    clock = Clock()
    lm, log = _filled(tmp_path, clock)
    expected = read_all(log)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    lm.close()
    d = tmp_path / "t-0"
    # the "cleaned" copy of segments 0 and 1 is simply their bytes concatenated
    merged = (d / f"{bases[0]:020d}.log").read_bytes() + (d / f"{bases[1]:020d}.log").read_bytes()
    (d / f"{bases[0]:020d}.log.swap").write_bytes(merged)
    (tmp_path / ".kafka_cleanshutdown").unlink()
    lm2, log2 = reopen(tmp_path, clock)
    assert [s.base_offset for s in log2.segments] == [bases[0]] + bases[2:]
    assert not list(d.glob("*.swap")) and read_all(log2) == expected


def test_swap_of_an_unfinished_split_is_dropped(tmp_path):
    clock = Clock()
    lm, log = _filled(tmp_path, clock)
    expected = read_all(log)
    bases = [s.base_offset for s in log.segments]
    lm.close()
    d = tmp_path / "t-0"
    (d / f"{bases[1]:020d}.log.cleaned").write_bytes(b"half written")
    (d / f"{bases[1]:020d}.log.swap").write_bytes(b"never finished")
    lm2, log2 = reopen(tmp_path, clock)
    assert [s.base_offset for s in log2.segments] == bases
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned")) and read_all(log2) == expected


def test_orphan_index_files_are_deleted(tmp_path):
    clock = Clock()
    lm, log = _filled(tmp_path, clock, n=5)
    lm.close()
    d = tmp_path / "t-0"
    (d / f"{999:020d}.index").write_bytes(bytes(16))
    (d / f"{999:020d}.timeindex").write_bytes(bytes(24))
    reopen(tmp_path, clock)
    assert not (d / f"{999:020d}.index").exists() and not (d / f"{999:020d}.timeindex").exists()


@pytest.mark.parametrize("where", ["middle", "boundary"])
def test_damage_below_the_recovery_point_loses_only_the_damaged_batches(tmp_path, where):
    """As Kafka recovers a flushed segment that fails its sanity check: that segment is cut back, the
    flushed segments after it are kept, and appends go on at the log end offset."""
    clock = Clock()
    lm, log = _filled(tmp_path, clock)
    expected = read_all(log)
    lm.write_checkpoints()
    bases = [s.base_offset for s in log.segments]
    victim = tmp_path / "t-0" / f"{bases[1]:020d}.log"
    size = victim.stat().st_size
    headers = list(log.segments[1].iter_batch_headers())
    cut = size - 5 if where == "middle" else headers[-1][0]  # mid-batch, or exactly before the last batch
    crash(lm)
    del lm, log
    os.truncate(victim, cut)
    lm2, log2 = reopen(tmp_path, clock)
    lost = headers[-1][1]  # the last batch of segment 1 (one record)
    assert read_all(log2) == [r for r in expected if r[0] != lost]
    assert [s.base_offset for s in log2.segments] == bases
    first, _ = append(log2)
    assert first == len(expected)


def test_failed_index_write_takes_the_dir_offline_and_leaves_the_log_unchanged(tmp_path, monkeypatch):
    clock = Clock()
    lm, log = _filled(tmp_path, clock, n=3)
    before = read_all(log)
    entries = len(log.active.offset_index)
    real = fileops.write_all

    def failing(fd, data, position):
        if len(data) in (8, 12):  # an index entry
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data, position)

    monkeypatch.setattr(fileops, "write_all", failing)
    with pytest.raises(StorageError) as info:
        for _ in range(10):
            append(log)
    assert info.value.errno == errno.ENOSPC
    monkeypatch.setattr(fileops, "write_all", real)
    assert log.offline and len(log.active.offset_index) == entries
    end = log.log_end_offset
    with pytest.raises(StorageError):
        append(log)
    crash(lm)
    del lm, log  # crash
    _, again = reopen(tmp_path, clock)
    after = read_all(again)
    assert after[: len(before)] == before and again.log_end_offset == end
    append(again)
    assert read_all(again) == after + [(end, b"v" * 50)]


def _raising(code: int, text: str):
    """A stand-in for a file operation that fails with ``code``."""

    def fail(*_args):
        raise OSError(code, text)

    return fail


def test_read_only_directory_fails_appends_with_storage_error(tmp_path, monkeypatch):
    clock = Clock()
    lm, log = _filled(tmp_path, clock, n=3)
    before = read_all(log)

    monkeypatch.setattr(fileops, "pwrite", _raising(errno.EROFS, "Read-only file system"))
    with pytest.raises(StorageError) as info:
        append(log)
    assert info.value.errno == errno.EROFS and isinstance(info.value, OSError)
    assert log.offline and log.log_end_offset == 3
    with pytest.raises(StorageError):  # reads too, as Kafka's offline partitions
        read_all(log)
    monkeypatch.undo()
    crash(lm)
    del lm, log  # crash
    _, again = reopen(tmp_path, clock)
    assert read_all(again) == before


def _damage(path, rng, rescan: bool) -> None:
    """Cut the file, or cut it and add a garbage or zeroed tail; flip bytes only if all is rescanned."""
    size = path.stat().st_size
    mode = rng.choice(["cut", "garbage", "zeros"] + (["flip"] if rescan else []))
    if mode == "flip" and size:
        with open(path, "r+b") as f:
            f.seek(rng.randrange(size))
            f.write(rng.randbytes(rng.randint(1, 20)))
        return
    os.truncate(path, rng.randint(0, size))
    if mode != "cut":
        tail = rng.randbytes(rng.randint(1, 300)) if mode == "garbage" else bytes(rng.randint(1, 300))
        with open(path, "ab") as f:
            f.write(tail)


@pytest.mark.parametrize("seed", range(int(os.environ.get("STORAGE_SEEDS", "8"))))
def test_randomized_damage_to_many_files(tmp_path, seed):
    """Several files damaged at random; what survives is what was written, in order, and usable."""
    rng = random.Random(seed)
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": str(rng.choice([500, 900])), "index.interval.bytes": "64"})
    log = lm.get_log("t", 0)
    for _ in range(rng.randint(20, 50)):
        append(log, n=rng.randint(1, 3), value=rng.randbytes(rng.randint(1, 60)))
    if rng.random() < 0.5:
        lm.write_checkpoints()
    expected = read_all(log)
    files = sorted((tmp_path / "t-0").glob("0*"))
    crash(lm)
    del lm, log
    rescan = rng.random() < 0.4  # a lost checkpoint: every segment is rescanned and CRC-checked
    for path in rng.sample(files, k=min(3, len(files))):
        _damage(path, rng, rescan)
    if rescan:
        write_checkpoint(tmp_path / "recovery-point-offset-checkpoint", {("t", 0): 0})
    lm2, log2 = reopen(tmp_path, clock)
    got = read_all(log2)
    # nothing reordered or invented; flushed segments after a damaged one may stay (a gap, as in Kafka)
    assert got == [r for r in expected if r[0] in {o for o, _ in got}]
    end = log2.log_end_offset
    first, _ = append(log2)
    assert first == end == log2.log_end_offset - 1 and end >= (got[-1][0] + 1 if got else 0)


def _cleaner_output(segments) -> tuple[bytes, set[int]]:
    """Stand-in for the cleaner: keep every other batch of ``segments``; returns bytes and kept last offsets."""
    out, kept = b"", set()
    for seg in segments:
        for i, (pos, last, size) in enumerate(seg.iter_batch_headers()):
            if i % 2 == 0:
                out += os.pread(seg.fileno(), size, pos)
                kept.add(last)
    return out, kept


def test_replace_segments_swaps_cleaner_output_in(tmp_path):
    clock = Clock()
    lm, log = _filled(tmp_path, clock, **{"cleanup.policy": "compact"})
    old = log.segments[:2]
    later = {o for o, _ in read_all(log) if o >= log.segments[2].base_offset}
    output, kept = _cleaner_output(old)
    cleaned = cleaned_log_path(log.dir, old[0].base_offset)
    cleaned.write_bytes(output)
    piece = log.read(0, 1 << 20, min_one_message=True)  # an in-flight read of the old segment
    before = piece.read_bytes()
    new = log.replace_segments(cleaned, old)
    assert log.segments[0] is new and new.base_offset == old[0].base_offset
    assert {o for o, _ in read_all(log)} == kept | later
    assert os.pread(piece.fileno, piece.size, piece.position) == before
    d = tmp_path / "t-0"
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned")) and list(d.glob("*.deleted"))
    lm.close()
    lm2, log2 = reopen(tmp_path, clock)
    assert {o for o, _ in read_all(log2)} == kept | later and not list(d.glob("*.deleted"))


def test_crash_after_swap_rename_keeps_the_cleaned_data(tmp_path):
    clock = Clock()
    lm, log = _filled(tmp_path, clock, **{"cleanup.policy": "compact"})
    old = log.segments[:2]
    later = {o for o, _ in read_all(log) if o >= log.segments[2].base_offset}
    output, kept = _cleaner_output(old)
    lm.close()
    d = tmp_path / "t-0"
    (d / f"{old[0].base_offset:020d}.log.swap").write_bytes(output)  # crashed right after .cleaned -> .swap
    (tmp_path / ".kafka_cleanshutdown").unlink()
    lm2, log2 = reopen(tmp_path, clock)
    assert {o for o, _ in read_all(log2)} == kept | later  # the cleaned copy replaced both old segments
    assert log2.segments[0].base_offset == old[0].base_offset


def test_a_checkpoint_that_cannot_be_written_takes_the_dir_offline(tmp_path, monkeypatch):
    """Kafka's checkpoint files: a failed write takes the log dir offline, and the restart recovers it."""
    import storage.dir_checkpoints as dir_checkpoints

    clock = Clock()
    lm, log = _filled(tmp_path, clock, n=3)
    before = read_all(log)

    monkeypatch.setattr(dir_checkpoints, "write_checkpoint", _raising(errno.ENOSPC, "No space left on device"))
    lm.write_checkpoints()  # the periodic duty: no exception, the dir is offline
    assert log.offline and lm.failures.offline == {tmp_path}
    with pytest.raises(StorageError):
        append(log)
    monkeypatch.undo()
    lm.close()
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    _, again = reopen(tmp_path, clock)
    assert read_all(again) == before


def test_a_failed_fsync_at_close_leaves_that_dir_unmarked_and_closes_the_rest(tmp_path, monkeypatch):
    """Kafka's shutdown flushes each live dir apart: one that fails gets no clean-shutdown marker."""
    clock = Clock()
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    lm = LogManager.open([d1, d2], {}, clock)
    lm.create_topic("t", 2, {})
    logs = [lm.get_log("t", p) for p in range(2)]
    for log_ in logs:
        append(log_)
    failing = logs[0].dir.parent
    real = fileops.fsync

    def eio_in_failing_dir(fd):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(failing)):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(fileops, "fsync", eio_in_failing_dir)
    lm.close()
    monkeypatch.undo()
    assert {d for d in (d1, d2) if (d / ".kafka_cleanshutdown").exists()} == {d1, d2} - {failing}
    again = LogManager.open([d1, d2], {}, clock)
    assert [len(read_all(again.get_log("t", p))) for p in range(2)] == [1, 1]


def test_a_retention_roll_that_fails_takes_its_dir_offline_and_the_other_logs_still_get_retention(tmp_path,
                                                                                                  monkeypatch):
    """Kafka's deleteOldSegments rolls an active segment that is due; a failure there is a log dir failure,
    and the timer duty goes on with the other logs (before, it raised and no later log got retention)."""
    clock = Clock()
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    lm = LogManager.open([d1, d2], {}, clock)
    lm.create_topic("t", 2, {"retention.ms": "1000"})
    logs = [lm.get_log("t", p) for p in range(2)]
    for log_ in logs:
        append(log_)
    failing = logs[0].dir.parent
    assert logs[1].dir.parent != failing
    real = fileops.open_file

    def no_space_in_failing_dir(path, flags, mode=0o644):
        if flags & os.O_CREAT and str(path).startswith(str(failing)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, flags, mode)

    monkeypatch.setattr(fileops, "open_file", no_space_in_failing_dir)
    clock.advance(10_000)
    lm.run_retention(clock())
    assert logs[0].offline and not logs[1].offline
    assert (logs[0].log_start_offset, logs[1].log_start_offset) == (0, 1)
