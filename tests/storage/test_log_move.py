"""Moving a log between log dirs (``storage.log_move``): exact copies, the swap, and every crash point.

A move is driven here as the broker drives it, round by round (``plan`` +
``copy``), with appends, rolls and deletions from the front in between, then
``finish``. What must hold: every record, offset and timestamp, the log start
offset, the producer state, the aborted transactions and the cleaner offset
are the same afterwards and after a restart; the ``Log`` object carries on in
the new directory; the copy holds the files of the log and nothing else.
A crash at each step of the swap (simulated by an exception no code catches,
then opening the directories again without closing) leaves exactly one whole
copy of the partition.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from storage import LogManager, fileops, log_move
from storage.checkpoint import read_checkpoint
from storage.dir_checkpoints import LOG_STARTS, RECOVERY_POINTS
from storage.index import OffsetIndex
from storage.log_move import LogMove, MoveStopped
from storage.throttle import Throttler

from .lead_helpers import Clock, append, crash, read_all
from .txn_helpers import data, marker, producer_view

PROPS = {"log.segment.bytes": "2000", "log.index.interval.bytes": "100"}


class Crash(BaseException):
    """A simulated crash: no code of the broker catches it."""


def _open(tmp_path: Path, clock: Clock) -> LogManager:
    return LogManager.open([tmp_path / "d1", tmp_path / "d2"], PROPS, clock)


def _setup(tmp_path: Path, clock: Clock):
    """A log of several segments in d1 with a raised log start offset, producers and an aborted transaction."""
    lm = _open(tmp_path, clock)
    lm.create_topic("t", 1, {})
    log_ = lm.get_log("t", 0)
    assert log_.dir.parent == tmp_path / "d1"
    for _ in range(20):
        append(log_, 3)
    data(log_, pid=7, n=2)
    marker(log_, 7, commit=False)
    data(log_, pid=8, n=1, txn=False)
    log_.delete_records_before(5)
    lm.update_cleaner_offset("t", 0, 9)
    return lm, log_


def _state(log_) -> tuple:
    return (read_all(log_), log_.log_start_offset, log_.log_end_offset, producer_view(log_),
            log_.aborted_transactions(0, log_.log_end_offset), [s.base_offset for s in log_.segments])  # fmt: skip


def _rounds(lm: LogManager, move: LogMove, between=()) -> None:
    """The broker's rounds: a copy, the destination's checkpoints, then one more copy per ``between`` step."""
    move.copy(move.plan())
    lm.write_dir_checkpoints(move.dest_root)
    for step in between:
        step()
        move.copy(move.plan())


def _finish(lm: LogManager, move: LogMove) -> None:
    move.finish()
    lm.moves.end(move)
    move.remove_source()


def _partition_dirs(tmp_path: Path) -> list[str]:
    return sorted(f"{p.parent.name}/{p.name}" for p in tmp_path.glob("d*/t-0*"))


def test_a_moved_log_keeps_its_records_offsets_and_state_and_carries_on(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    before = _state(log_)
    move = lm.moves.start(log_, tmp_path / "d2")
    _rounds(lm, move)
    _finish(lm, move)
    assert lm.get_log("t", 0) is log_ and log_.dir == tmp_path / "d2" / "t-0"
    assert _partition_dirs(tmp_path) == ["d2/t-0"]
    assert _state(log_) == before and before[4]  # an aborted transaction survived
    assert lm.cleaner_offsets() == {("t", 0): 9}
    first, _ = append(log_, 2)
    assert first == before[2] and read_all(log_)[-2:] == [(first, b"v" * 50), (first + 1, b"v" * 50)]
    assert (tmp_path / "d2" / "t-0" / f"{log_.active.base_offset:020d}.log").stat().st_size == log_.active.size
    after = _state(log_)
    lm.close()
    lm2 = _open(tmp_path, clock)
    again = lm2.get_log("t", 0)
    assert again.dir == tmp_path / "d2" / "t-0" and _state(again) == after
    assert lm2.cleaner_offsets() == {("t", 0): 9}
    assert read_checkpoint(tmp_path / "d2" / LOG_STARTS) == {("t", 0): 5}
    assert ("t", 0) not in read_checkpoint(tmp_path / "d1" / RECOVERY_POINTS)


def test_appends_rolls_and_deletions_between_rounds_reach_the_copy_and_nothing_else(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    steps = [lambda: append(log_, 4), lambda: [append(log_, 3) for _ in range(10)],
             lambda: log_.delete_records_before(40), lambda: append(log_, 1)]  # fmt: skip
    _rounds(lm, move, steps)
    append(log_, 2)  # after the last round: copied by finish
    before = _state(log_)
    _finish(lm, move)
    assert _state(log_) == before and before[1] == 40
    names = sorted(os.listdir(log_.dir))
    wanted = {f"{s.base_offset:020d}{ext}" for s in log_.segments for ext in (".log", ".index", ".timeindex")}
    assert wanted <= set(names)
    extra = set(names) - wanted - {"partition.metadata"}
    assert all(n.endswith((".snapshot", ".txnindex")) for n in extra), extra
    assert all(int(n[:20]) in {s.base_offset for s in log_.segments} for n in extra if n.endswith(".txnindex"))
    lm.close()
    assert _state(_open(tmp_path, clock).get_log("t", 0)) == before


def test_indexes_are_copied_up_to_their_entries_and_still_answer_lookups(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    _rounds(lm, move, [lambda: append(log_, 5)])
    entries = len(log_.active.offset_index)
    _finish(lm, move)
    assert entries and (log_.dir / f"{log_.active.base_offset:020d}.index").stat().st_size == entries * 8
    middle = log_.segments[1]
    piece = log_.read(middle.base_offset + 1, 1 << 20, min_one_message=True)
    assert piece is not None and piece.read_bytes()
    ts = log_.offset_for_timestamp(0)
    assert ts is not None and ts[0] == log_.log_start_offset


def test_a_segment_rebuilt_between_rounds_is_copied_again(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    _rounds(lm, move)
    active = log_.active
    future = move.future_dir / f"{active.base_offset:020d}.index"
    (move.future_dir / future.name).write_bytes(b"\xff" * 8)  # what a stale copy of a rebuilt index would be
    active.recover()  # what an undone append does; the index is written anew
    before = _state(log_)
    _finish(lm, move)
    index = active.offset_index
    written = b"".join(OffsetIndex.ENTRY.pack(k, v) for k, v in zip(index.keys, index.values))
    assert len(index) and (log_.dir / future.name).read_bytes()[: len(written)] == written
    assert _state(log_) == before
    lm.close()
    assert _state(_open(tmp_path, clock).get_log("t", 0)) == before


@pytest.mark.parametrize("stage", ["copying", "source renamed", "copy renamed"])
def test_a_crash_during_a_move_leaves_exactly_one_whole_copy(tmp_path, monkeypatch, stage):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    lm.write_checkpoints()
    move = lm.moves.start(log_, tmp_path / "d2")
    _rounds(lm, move, [lambda: append(log_, 2)])
    if stage == "copying":
        append(log_, 1)
        move.copy(move.plan())
    else:  # the crash comes at the fsync of the directory just renamed in: the source's, or the copy's
        crash_in = tmp_path / ("d1" if stage == "source renamed" else "d2")

        def crash_at(path):
            if path == crash_in:
                raise Crash()

        monkeypatch.setattr(log_move, "fsync_dir", crash_at)
        with pytest.raises(Crash):
            move.finish()
        monkeypatch.undo()
    expected = _state(log_)
    where = "d1" if stage == "copying" else "d2"
    crash(lm)
    del lm, log_, move  # never closed: a crash
    reopened = _open(tmp_path, clock)
    again = reopened.get_log("t", 0)
    reopened.delete_expired_files(clock.now + 60_000)  # a source renamed -delete waits file.delete.delay.ms
    assert _partition_dirs(tmp_path) == [f"{where}/t-0"]
    assert again.dir == tmp_path / where / "t-0" and _state(again) == expected
    assert reopened.interrupted_moves == ([(("t", 0), tmp_path / "d2")] if stage == "copying" else [])


def test_a_failed_rename_leaves_the_log_where_it_was(tmp_path, monkeypatch):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    _rounds(lm, move)
    real = Path.rename

    def refuse_the_future(self, target):
        if self.name.endswith("-future"):
            raise OSError(errno.EIO, "Input/output error")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", refuse_the_future)
    with pytest.raises(OSError):
        move.finish()
    monkeypatch.undo()
    assert not move.committed and log_.dir == tmp_path / "d1" / "t-0"
    move.abandon()
    lm.moves.end(move)
    assert _partition_dirs(tmp_path) == ["d1/t-0"]  # the source is back, the copy gone
    append(log_, 1)
    expected = _state(log_)
    lm.close()
    assert _state(_open(tmp_path, clock).get_log("t", 0)) == expected


def test_a_full_destination_stops_the_move_and_the_log_stays(tmp_path, monkeypatch):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    before = _state(log_)
    move = lm.moves.start(log_, tmp_path / "d2")

    def full(fd, data, position):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileops, "pwrite", full)
    with pytest.raises(OSError) as failed:
        move.copy(move.plan())
    monkeypatch.undo()
    assert failed.value.errno == errno.ENOSPC
    move.abandon()
    lm.moves.end(move)
    assert _partition_dirs(tmp_path) == ["d1/t-0"]  # the copy is gone
    assert _state(log_) == before
    append(log_, 1)
    assert read_all(log_)[-1][0] == before[2]


def test_a_stopped_move_copies_no_further(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    move.stop()
    with pytest.raises(MoveStopped):
        move.copy(move.plan())
    move.abandon()
    assert not move.future_dir.exists()


def _ticking(step_ms: float):
    """A clock that moves ``step_ms`` on at every reading (the throttle reads it twice per check)."""
    now = [0.0]

    def clock() -> float:
        now[0] += step_ms
        return now[0]

    return clock


def _throttled_move(tmp_path, monkeypatch, rate: float, step_ms: float):
    monkeypatch.setattr(log_move, "CHUNK", 1000)
    lm, log_ = _setup(tmp_path, Clock())
    lm.moves.throttle = Throttler(rate, clock=_ticking(step_ms))
    return lm, lm.moves.start(log_, tmp_path / "d2")


def test_the_moves_copy_at_most_the_throttled_rate(tmp_path, monkeypatch):
    # Every second chunk is a check 300 fake ms after the last: 2000 bytes at 6000 B/s want 333 ms, so 33 ms of sleep.
    lm, move = _throttled_move(tmp_path, monkeypatch, 6000, 150)
    plan = move.plan()
    move.copy(plan)
    chunks = sum(-(-(j.end - j.start) // 1000) for j in plan.jobs if j.end)
    assert chunks >= 4 and 0 < lm.moves.throttle.slept_ms <= 33.4 * (chunks // 2)
    lm.moves.set_rate(2**63 - 1)  # Kafka's Long.MAX_VALUE: no limit
    assert lm.moves.throttle.rate == float("inf")


@pytest.mark.parametrize("rate", [1, 0])
def test_a_throttled_or_held_copy_stops_at_once(tmp_path, monkeypatch, rate):
    _, move = _throttled_move(tmp_path, monkeypatch, rate, 300)  # rate 1: the first check sleeps for hours
    outcome = []

    def copy():
        try:
            move.copy(move.plan())
        except MoveStopped:
            outcome.append("stopped")

    worker = threading.Thread(target=copy)
    worker.start()
    time.sleep(0.2)
    assert worker.is_alive() and not outcome
    move.stop()
    worker.join(5)
    assert not worker.is_alive() and outcome == ["stopped"]


def test_while_a_move_runs_the_destination_checkpoints_list_the_partition(tmp_path):
    clock = Clock()
    lm, log_ = _setup(tmp_path, clock)
    move = lm.moves.start(log_, tmp_path / "d2")
    lm.write_checkpoints()
    assert read_checkpoint(tmp_path / "d2" / LOG_STARTS) == {("t", 0): 5}
    assert read_checkpoint(tmp_path / "d1" / LOG_STARTS) == {("t", 0): 5}
    lm.moves.end(move)
    lm.write_checkpoints()
    assert read_checkpoint(tmp_path / "d2" / LOG_STARTS) == {}


def test_a_future_directory_that_is_not_a_partition_is_left_alone(tmp_path):
    clock = Clock()
    lm = _open(tmp_path, clock)
    lm.close()
    odd = tmp_path / "d2" / "nonsense-future"
    odd.mkdir()
    _open(tmp_path, clock)
    assert odd.is_dir()
