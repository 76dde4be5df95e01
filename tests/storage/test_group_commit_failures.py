"""The group commit's record of rounds that failed whole, and the close's round.

A round fails whole when a flush raises an ``OSError`` that did not take its
log offline (out of descriptors): its waiters get a ``StorageError``. Here the
logs are stand-ins whose flush fails on demand, so the rounds' outcomes are
chosen by the test; the close's round runs on a real ``LogManager`` too.
"""

from __future__ import annotations

import errno

import pytest

from storage import LogManager
from storage.errors import StorageError
from storage.group_commit import GroupCommit
from storage.log_opening import CLEAN_SHUTDOWN

from .test_storage_api import Clock, _fsync_failing_in, append


class Stub:
    """A log whose flush raises EMFILE (its dir stays online) while ``failing``."""

    offline = False

    def __init__(self) -> None:
        self.failing, self.flushes = False, 0

    def flush(self, active_indexes: bool = False) -> None:
        if self.failing:
            raise OSError(errno.EMFILE, "Too many open files")
        self.flushes += 1


def _round(gc: GroupCommit, log_: Stub, fails: bool) -> int:
    """Append to ``log_`` and wait for a round that fails whole or not; the append's generation."""
    gc.note_append(log_)
    generation, log_.failing = gc.generation, fails
    if fails:
        with pytest.raises(OSError):
            gc.sync_to(generation)
    else:
        gc.sync_to(generation)
    log_.failing = False
    return generation


def test_failed_rounds_no_waiter_can_ask_about_are_forgotten():
    """Fifty rounds that fail whole, each followed by one that succeeds, with no waiter holding a place: only
    the last failure is kept (a waiter not begun yet asks about the generation now or later). Before, every
    failed round stayed in the list for ever."""
    gc, log_ = GroupCommit(), Stub()
    for _ in range(50):
        failed = _round(gc, log_, fails=True)
        with pytest.raises(StorageError):
            gc.sync_to(failed)  # its waiters are refused, however late
        _round(gc, log_, fails=False)
    assert len(gc._failed) <= 1


def test_a_failure_stays_for_a_waiter_that_holds_its_place_until_it_lets_go():
    """A waiter holds its place before its append; its round fails whole, then a hundred rounds come and go,
    failed and not: it is still refused when it asks at last. Once it lets go, its failure is forgotten;
    those of the rounds after it are kept only for as long as a waiter may ask."""
    gc, log_ = GroupCommit(), Stub()
    held = gc.hold()
    mine = _round(gc, log_, fails=True)
    for i in range(100):
        _round(gc, log_, fails=i % 2 == 0)
    assert len(gc._failed) == 50  # every failure since the held generation (the first two as one: no round between)
    with pytest.raises(StorageError):
        gc.sync_to(mine)
    with pytest.raises(StorageError):
        gc.settled(mine)
    gc.release(held)
    assert len(gc._failed) == 0  # the last round succeeded after the last failure's appends: none left to ask
    gc.sync_to(mine)


def test_a_failure_covering_another_replaces_it():
    """Three rounds in a row fail whole for the same appends (no round completes between them): one record."""
    gc, log_ = GroupCommit(), Stub()
    held = gc.hold()
    mine = _round(gc, log_, fails=True)
    for _ in range(3):
        log_.failing = True
        with pytest.raises(OSError):
            gc.commit()
    assert gc._failed == ((0, mine),)
    gc.release(held)


def test_a_waiter_after_a_close_whose_flush_raised_is_refused():
    """The close's flush raises: a waiter that asks afterwards must not be told its append is on disk. Before,
    the close published every generation as flushed however its flush went."""
    gc, log_ = GroupCommit(), Stub()
    gc.note_append(log_)

    def flush_all() -> bool:
        raise OSError(errno.EMFILE, "Too many open files")

    with pytest.raises(OSError):
        gc.close(flush_all)
    assert gc.flushed < gc.generation
    with pytest.raises(StorageError):
        gc.sync_to(gc.generation)


def test_a_log_manager_whose_close_flush_fails_refuses_later_waiters_and_leaves_no_marker(tmp_path, monkeypatch):
    """Durable mode: the flush at close fails for a log without taking its dir offline (out of descriptors).
    A waiter afterwards gets a ``StorageError`` and the dir no clean-shutdown marker, so the next start
    recovers its logs. Before, the close published its generation as flushed (the waiter was told its data
    was on disk) and left the marker."""
    lm = LogManager.open([tmp_path / "d0"], {"log.flush.durable.enable": "true"}, Clock())
    lm.create_topic("t", 1, {})
    log_ = lm.get_log("t", 0)
    append(log_)
    target = lm.flush_generation()

    _fsync_failing_in(monkeypatch, log_.dir, errno.EMFILE)
    lm.close()
    assert not log_.offline
    with pytest.raises(StorageError):
        lm.sync_to(target)
    assert not (tmp_path / "d0" / CLEAN_SHUTDOWN).exists()
