"""A log dir that fails while the logs load goes offline and the others load on, as Kafka's LogManager.loadLogs.

Kafka's start leaves out a log dir that cannot be made or read
(``createAndValidateLogDirs``) and takes offline one whose logs meet an
IOException while they load (``loadLogs`` hands it to the LogDirFailureChannel);
the broker starts on the others, unless none is left or the failed one holds
the metadata (then it halts). Here: an EIO injected into the file opens of dir
b's logs leaves dir a's logs loaded and b offline, b's partitions offline
stand-ins (never made anew in a), no file of b left open by the loading
threads, nothing written into b afterwards (checkpoints, cleaner offsets, a
deleted topic's directory), and a restart once the fault is gone recovers b's
logs whole. A disk error reading one of b's checkpoint files (recovery
points, log start offsets, cleaner offsets) takes b offline the same way, as
Kafka's ``CheckpointFileWithFailureHandler.read`` hands the dir to the
LogDirFailureChannel (the old start read such a file as empty and recovered
b's logs from their first offset). A dir that is a file is left out the same way. With every dir
failed, or the first, the start fails with ``LogDirsFailed`` and leaves no
thread or file behind; an error that is not the disk's still fails the start.
Each dir's clean-shutdown marker is removed before its logs load: an offline
dir never gets one back, so the next start recovers it. The old start failed
on any of these errors.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading
from pathlib import Path

import pytest

import storage.log as storage_log
import storage.log_loader as log_loader
from storage import LogDirsFailed, LogManager
from storage.dir_checkpoints import CLEANER_OFFSETS, LOG_STARTS, RECOVERY_POINTS
from storage.log_opening import CLEAN_SHUTDOWN
from protocol.records import Codec, iter_batches
from storage.offline_log import OfflineLog

from ..open_files import open_files_under
from .lead_helpers import Clock, append, read_all
from .test_upgrade import _legacy

PARTITIONS = 6


def _two_dirs(tmp_path: Path, clock: Clock, clean: bool = True) -> tuple[list[Path], dict[int, Path]]:
    """Dirs a and b holding topic t's partitions (3 each, 5 records in each); where each partition is."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    lm = LogManager.open(dirs, {}, clock)
    lm.create_topic("t", PARTITIONS, {"cleanup.policy": "compact,delete"})
    for p in range(PARTITIONS):
        append(lm.get_log("t", p), 5)
    where = {p: lm.get_log("t", p).dir.parent for p in range(PARTITIONS)}
    lm.close()
    if not clean:
        for d in dirs:
            (d / CLEAN_SHUTDOWN).unlink()
    assert sorted(where.values()).count(dirs[1]) == PARTITIONS // 2
    return dirs, where


def _eio_under(monkeypatch, root: Path, after: int = 0) -> list[str]:
    """Loading a log under ``root`` fails with EIO as its directory is listed, for all but the first ``after``
    of them (those load, opening their files); the directories refused."""
    real, refused, let, lock = log_loader.clean_directory, [], [after], threading.Lock()

    def clean_directory(directory, *args, **kwargs):
        if str(directory).startswith(str(root) + os.sep):
            with lock:
                fail = let[0] <= 0
                let[0] -= 1
            if fail:
                refused.append(str(directory))
                raise OSError(errno.EIO, "injected", str(directory))
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(log_loader, "clean_directory", clean_directory)
    return refused


def _loading_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("log-recovery-")]


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("clean", [True, False], ids=["clean", "crashed"])
def test_an_eio_while_loading_dir_b_takes_b_offline_and_a_loads(tmp_path, monkeypatch, threads, clean):
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock, clean)
    with monkeypatch.context() as patch:
        refused = _eio_under(patch, b, after=1)  # b's first log loads (opening files), then the disk fails
        lm = LogManager.open([a, b], {"num.recovery.threads.per.data.dir": threads}, clock)
    try:
        assert refused and lm.failures.offline == {b}
        assert _loading_threads() == []
        assert open_files_under(b) == 0  # what b's loading threads opened is closed
        for p, root in where.items():
            log_ = lm.get_log("t", p)
            if root == a:
                assert not log_.offline and [o for o, _v in read_all(log_)] == list(range(5))
            else:  # offline, in b, not made anew in a
                assert isinstance(log_, OfflineLog) and log_.offline and log_.dir == b / f"t-{p}"
        assert [l.partition for l in lm.online_logs()] == [p for p, r in where.items() if r == a]
        assert not (a / CLEAN_SHUTDOWN).exists() and not (b / CLEAN_SHUTDOWN).exists()
        b_files = {f.name: f.read_bytes() for f in b.iterdir() if f.is_file()}
        lm.write_checkpoints()
        in_a = next(p for p, r in where.items() if r == a)
        lm.update_cleaner_offset("t", in_a, 3)
        assert f"t {in_a} 3" in (a / CLEANER_OFFSETS).read_text()  # and not in b (below)
    finally:
        lm.close()
    assert {f.name: f.read_bytes() for f in b.iterdir() if f.is_file()} == b_files  # nothing written into b
    assert (a / CLEAN_SHUTDOWN).exists() and not (b / CLEAN_SHUTDOWN).exists()
    assert open_files_under(tmp_path) == 0
    again = LogManager.open([a, b], {}, clock)  # the fault gone: b's logs are recovered (no marker)
    try:
        assert not again.failures.offline
        assert {p: [o for o, _v in read_all(again.get_log("t", p))] for p in where} == {
            p: list(range(5)) for p in where
        }
        assert {p: again.get_log("t", p).dir.parent for p in where} == where
    finally:
        again.close()


@pytest.mark.parametrize("name", [RECOVERY_POINTS, LOG_STARTS, CLEANER_OFFSETS])
def test_an_eio_reading_a_checkpoint_of_dir_b_takes_b_offline(tmp_path, monkeypatch, caplog, name):
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    real, failing = Path.read_text, b / name

    def read_text(path, *args, **kwargs):
        if path == failing:
            raise OSError(errno.EIO, "injected", str(path))
        return real(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Path, "read_text", read_text)
        with caplog.at_level("INFO", logger="storage.log_opening"):
            lm = LogManager.open([a, b], {}, clock)
    try:
        assert lm.failures.offline == {b}
        assert {p: lm.get_log("t", p).offline for p in where} == {p: r == b for p, r in where.items()}
        assert open_files_under(b) == 0
        assert f"Loaded {PARTITIONS} logs in" in caplog.text  # b's too, as Kafka's numTotalLogs
    finally:
        lm.close()
    again = LogManager.open([a, b], {}, clock)
    try:
        assert not again.failures.offline
        assert {p: [o for o, _v in read_all(again.get_log("t", p))] for p in where} == {
            p: list(range(5)) for p in where
        }
    finally:
        again.close()


def _open_with_b_failing(tmp_path, monkeypatch, props: dict[str, str]) -> tuple[LogManager, Path, Path, dict]:
    """``_two_dirs`` opened again with ``props`` while every log of b fails to load: (manager, a, b, where)."""
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    with monkeypatch.context() as patch:
        _eio_under(patch, b)
        return LogManager.open([a, b], props, clock), a, b, where


def test_the_forced_v2_upgrade_runs_on_the_dirs_left_when_one_failed_at_load(tmp_path, monkeypatch):
    """``log.record.version.force.upgrade=2`` upgrades the logs that opened; an offline dir's are left alone."""
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    in_a = min(p for p, r in where.items() if r == a)
    lm = LogManager.open([a, b], {}, clock)
    log_ = lm.get_log("t", in_a)
    log_.append(_legacy(5, 3, 1, Codec.NONE), 5, 7, 0)  # a v1 entry in a's log
    lm.close()
    with monkeypatch.context() as patch:
        _eio_under(patch, b)
        lm = LogManager.open([a, b], {"log.record.version.force.upgrade": "2"}, clock)
    try:
        assert lm.failures.offline == {b}
        log_ = lm.get_log("t", in_a)
        magics = {batch.magic for seg in log_.segments
                  for batch in iter_batches(memoryview(os.pread(seg.fileno(), seg.size, 0)))}  # fmt: skip
        assert magics == {2} and [o for o, _v in read_all(log_)] == list(range(8))
    finally:
        lm.close()


def test_a_dir_that_is_a_file_is_left_out_and_its_partitions_are_offline(tmp_path):
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    b.rename(tmp_path / "b.away")
    b.write_text("not a directory")
    lm = LogManager.open([a, b], {}, clock)
    try:
        assert lm.failures.offline == {b}
        assert {p: lm.get_log("t", p).offline for p in where} == {p: r == b for p, r in where.items()}
    finally:
        lm.close()
    b.unlink()
    (tmp_path / "b.away").rename(b)
    again = LogManager.open([a, b], {}, clock)
    try:
        assert not again.failures.offline and all(not l.offline for l in again.logs())
    finally:
        again.close()


def test_a_topic_deleted_while_b_is_offline_leaves_b_alone(tmp_path, monkeypatch):
    lm, a, b, where = _open_with_b_failing(tmp_path, monkeypatch, {})
    clock = lm.clock
    try:
        before = sorted(p.name for p in b.iterdir())
        checkpoint = (b / RECOVERY_POINTS).read_bytes()
        lm.delete_topic("t")
        assert sorted(p.name for p in b.iterdir()) == before and (b / RECOVERY_POINTS).read_bytes() == checkpoint
        assert all(d.name.endswith("-delete") for d in a.glob("t-*"))  # a's copies go as usual
    finally:
        lm.close()
    again = LogManager.open([a, b], {}, clock)  # b back: its copies belong to no topic, set aside as strays
    try:
        assert again.logs() == [] and len(list(b.glob("t-*-stray"))) == PARTITIONS // 2
    finally:
        again.close()


@pytest.mark.parametrize("failing", ["every", "first"])
def test_losing_every_dir_or_the_first_fails_the_start_and_leaves_nothing_open(tmp_path, monkeypatch, failing):
    clock = Clock()
    (a, b), _where = _two_dirs(tmp_path, clock)
    with monkeypatch.context() as patch:
        _eio_under(patch, a if failing == "first" else tmp_path)
        message = "all log dirs in" if failing == "every" else "the metadata log dir .* has failed"
        with pytest.raises(LogDirsFailed, match=message):
            LogManager.open([a, b], {"num.recovery.threads.per.data.dir": "3"}, clock)
    assert _loading_threads() == []
    assert open_files_under(tmp_path) == 0


def test_a_single_dir_that_cannot_be_made_fails_the_start(tmp_path):
    (tmp_path / "data").write_text("a file")
    with pytest.raises(LogDirsFailed, match="none of the log dirs in .* can be created or validated"):
        LogManager.open([tmp_path / "data"], {}, Clock())


@pytest.mark.parametrize("order", ["eio first", "eio later"])
def test_an_error_that_is_not_the_disks_still_fails_the_start(tmp_path, monkeypatch, order):
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    in_b = sorted(p for p, r in where.items() if r == b)
    errors = [OSError(errno.EIO, "injected"), ValueError("not the disk")]
    failures = dict(zip(in_b, errors if order == "eio first" else errors[::-1]))
    real = storage_log.load_log

    def load(log_, *args, **kwargs):
        real(log_, *args, **kwargs)
        if log_.dir.parent == b and log_.partition in failures:
            raise failures[log_.partition]

    monkeypatch.setattr(storage_log, "load_log", load)
    with pytest.raises(ValueError, match="not the disk"):
        LogManager.open([a, b], {}, clock)
    assert _loading_threads() == []
    assert open_files_under(tmp_path) == 0


def _interrupted_move(a: Path, b: Path, where: dict[int, Path]) -> tuple[int, Path]:
    """A partition of b caught moving to a: its future copy in a, as a stop part way leaves it."""
    p = min(p for p, r in where.items() if r == b)
    future = a / f"t-{p}.{'0' * 32}-future"
    shutil.copytree(b / f"t-{p}", future)
    return p, future


def test_a_move_into_a_whose_source_dir_b_cannot_be_read_is_left_as_it_is(tmp_path):
    """The copy is not taken for the partition while b, which may hold it, is offline (the old start
    failed; without the check it would make it a's log, and b's copy a second one once b is back)."""
    clock = Clock()
    (a, b), where = _two_dirs(tmp_path, clock)
    p, future = _interrupted_move(a, b, where)
    b.rename(tmp_path / "b.away")
    b.write_text("not a directory")
    lm = LogManager.open([a, b], {}, clock)
    try:
        assert future.is_dir() and not (a / f"t-{p}").exists() and lm.get_log("t", p).offline
        assert lm.interrupted_moves == []
    finally:
        lm.close()
    b.unlink()
    (tmp_path / "b.away").rename(b)
    again = LogManager.open([a, b], {}, clock)  # b back: the unfinished copy goes, the move begins again
    try:
        assert not future.exists() and again.get_log("t", p).dir.parent == b
        assert again.interrupted_moves == [(("t", p), a)]
    finally:
        again.close()
