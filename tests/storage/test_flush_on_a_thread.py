"""A flush on a worker thread while the owner thread appends, rolls, deletes the topic (``log_flush.py``).

The broker runs the flush policy's flushes in group-commit rounds on worker
threads. ``_flush_lock`` is held only to take the segments to fsync and to
move the recovery point, not for the fsyncs, so a roll or retention on the
owner thread never waits for a disk; the descriptors a flush fsyncs are held
by it (``FileHandle``), so a roll's trim or a topic deletion meanwhile never
makes it fsync a closed descriptor (EBADF would take the dir offline). Here
the flush's first fsync is held back until the owner has done its part.
"""

from __future__ import annotations

import os
import threading

from storage import Log, LogManager, fileops

from .lead_helpers import Clock, append, manager

HELD_AT_MOST = 3.0  # seconds the held fsync waits before it goes on by itself


class HeldFirstFsync:
    """The first fsync waits until ``release`` (at most ``HELD_AT_MOST``); ``timed_out`` if nobody released it."""

    def __init__(self) -> None:
        self.held, self._go, self.timed_out = threading.Event(), threading.Event(), False
        self.real = fileops.fsync

    def fsync(self, fd: int) -> None:
        if not self.held.is_set():
            self.held.set()
            self.timed_out = not self._go.wait(HELD_AT_MOST)
        self.real(fd)

    def release(self) -> None:
        self._go.set()


def _flush_in_thread(log, errors: list) -> threading.Thread:
    def run() -> None:
        try:
            log.flush()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _log_with_index_entries(tmp_path, clock):
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"index.interval.bytes": "100", "flush.messages": "1"})
    log = lm.get_log("t", 0)
    for _ in range(10):
        append(log)  # index entries: the active segment's indexes are open and changed
    return lm, log


def _flush_held_in_thread(tmp_path, monkeypatch):
    """A log with index entries whose flush runs on a thread, its first fsync held (once it is)."""
    lm, log = _log_with_index_entries(tmp_path, Clock())
    held, errors = HeldFirstFsync(), []
    monkeypatch.setattr(fileops, "fsync", held.fsync)
    thread = _flush_in_thread(log, errors)
    assert held.held.wait(HELD_AT_MOST)
    return lm, log, held, errors, thread


def test_a_roll_and_appends_go_on_while_a_flush_fsyncs(tmp_path, monkeypatch):
    """The owner appends and rolls while the flush's fsync is held (before, the roll waited for ``_flush_lock``
    until the fsync ended); the flush then ends without error and the recovery point is the log end offset it
    read before it started."""
    lm, log, held, errors, thread = _flush_held_in_thread(tmp_path, monkeypatch)
    log.roll()  # trims (and closes) the indexes the flush is about to fsync
    append(log)
    held.release()
    thread.join(10)
    assert not held.timed_out and not errors and not log.offline
    assert log.recovery_point == 10 and log.log_end_offset == 11 and len(log.segments) == 2
    log.flush()
    assert log.recovery_point == 11


def test_a_topic_deleted_while_its_flush_fsyncs_takes_no_dir_offline(tmp_path, monkeypatch):
    """The topic is deleted (its log closed, its directory renamed) while the flush's first fsync is held: the
    flush ends quietly. Before, it fsynced the closed descriptors of the indexes: EBADF, the dir offline."""
    lm, log, held, errors, thread = _flush_held_in_thread(tmp_path, monkeypatch)
    lm.delete_topic("t")
    held.release()
    thread.join(10)
    assert not errors and not log.offline and lm.failures.online_dirs() == lm.dirs
    lm.create_topic("u", 1, {})
    append(lm.get_log("u", 0))  # the dir still serves


def test_a_checkpoint_read_as_a_round_moves_the_point_stays_below_the_unsynced_indexes(tmp_path, monkeypatch):
    """A group-commit round leaves the active segment's indexes unsynced and moves the recovery point; a
    checkpoint written on another thread (``write_checkpoints``) may read ``checkpointed_recovery_point`` right
    after the point moved: it must already be held at the active segment's base, or a crash then would
    skip the rescan that rebuilds those indexes. Before, the point moved first: the read got the log end."""
    lm, log = _log_with_index_entries(tmp_path, Clock())
    real, seen = Log.recovery_point, []

    def moved(self, offset: int) -> None:
        real.fset(self, offset)
        seen.append(self.checkpointed_recovery_point)  # what a checkpoint written at this moment gets

    monkeypatch.setattr(Log, "recovery_point", property(real.fget, moved))
    log.flush(active_indexes=False)
    assert log.recovery_point == 10 and seen == [0] and log.checkpointed_recovery_point == 0


class RunsAtRelease:
    """A lock that, the first time it is let go of, runs ``action`` on another thread to its end (as if the
    thread switch came right there) before the owner goes on; what ``action`` raises is kept in ``errors``."""

    def __init__(self, action) -> None:
        self.action, self.real, self.armed, self.errors = action, threading.Lock(), True, []

    def __enter__(self) -> None:
        self.real.acquire()

    def __exit__(self, *_exc) -> None:
        self.real.release()
        if self.armed:
            self.armed = False
            thread = threading.Thread(target=self._run)
            thread.start()
            thread.join(10)

    def _run(self) -> None:
        try:
            self.action()
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            self.errors.append(exc)


def test_a_round_that_starts_within_a_roll_syncs_the_rolled_segment_s_indexes(tmp_path, monkeypatch):
    """A round takes its segments as soon as a roll lets go of ``_flush_lock``: it must see the rolled segment
    and the new active one, so the rolled one's indexes are fsynced before it leaves the segments waiting for
    a flush. Before, the new segment joined the list after the lock: the round saw the rolled one twice, as
    the active one, skipped its indexes and dropped it from the waiting segments, so no flush fsynced them."""
    lm, log = _log_with_index_entries(tmp_path, Clock())
    old, real, synced = log.active, fileops.fsync, []

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(fileops, "fsync", spy)
    log._flush_lock = racing = RunsAtRelease(lambda: log.flush(active_indexes=False))  # a durable round
    log.roll()
    assert not racing.armed and not racing.errors
    assert str(old.offset_index.path.resolve()) in synced and str(old.time_index.path.resolve()) in synced


def test_a_log_whose_dir_fails_during_a_round_fails_none_of_the_round_s_other_waiters(tmp_path):
    """Two dirs; a round has taken logs ``a`` (dir 0) and ``b`` (dir 1) when dir 1 fails for another reason
    (another append there failed). ``b`` is then left out, as a log that left the round before it started: its
    waiter learns it from ``Log.offline`` (Produce answers KAFKA_STORAGE_ERROR); ``a``'s data is fsynced and
    its waiter answered. Before, ``b``'s flush raised at its ``check_online`` and failed the whole round:
    ``a``'s producer, on a healthy disk, got KAFKA_STORAGE_ERROR too, where Kafka (each append flushing its
    own log) answers it."""
    d0, d1 = tmp_path / "d0", tmp_path / "d1"
    lm = LogManager.open([d0, d1], {"log.flush.interval.messages": "1"}, Clock())
    lm.create_topic("t", 2, {})
    a, b = sorted((lm.get_log("t", p) for p in (0, 1)), key=lambda l: l.dir.parent.name)
    assert (a.dir.parent, b.dir.parent) == (d0, d1)
    for log in (a, b):
        append(log)
    generation = max(lm.note_flush_due(log) for log in (a, b))
    lm.group_commit._lock = racing = RunsAtRelease(lambda: lm.failures.fail_dir(d1, "an append failed"))
    lm.sync_to(generation)  # before: StorageError (b is in the offline log dir)
    assert not racing.armed and b.offline and not a.offline
    assert lm.flushed_generation() >= generation and a.recovery_point == a.log_end_offset == 1
    lm.close()
