"""The group commit: one fsync per dirty log answers every append waiting at that moment.

In durable mode every append calls ``note_append(log)``, which bumps
``generation`` and adds the log to the dirty set. In any mode, an append
after which ``flush.messages`` are unflushed (``Log.flush_messages_due``),
and the ``flush.ms`` timer (``Log.flush_due``), call
``note_flush_due(log)``, which bumps ``generation`` and adds the log to the
due set: the round fsyncs it whole, the active segment's indexes too, as
Kafka's ``UnifiedLog.flush``, so its recovery point moves as a flush on the
append path would move it (without durable mode only due logs are fsynced). A producer that must not be answered before its
data is on disk reads the generation right after its append and calls
``sync_to(generation)`` (from a worker thread: the broker uses
``trio.to_thread.run_sync``, after ``settled`` told it no round covered it
yet). Waiters queue on one condition:

* if ``flushed >= generation`` it returns at once (someone else's fsync
  covered this append);
* otherwise, if no flush is running, this thread becomes the flusher: it
  calls ``commit()``, which takes the generation and the dirty set together
  under the lock, fsyncs each dirty log once, and publishes the generation
  as flushed; then every waiter is woken;
* otherwise it waits for the running flush and checks again (appends made
  during a flush are covered by the next one).

So N producers appending while an fsync is in flight are answered by the
next round: about one fsync per log per round, not one per request. A round
leaves out the active segment's offset and time indexes (``Log.flush``):
the loader rebuilds what they lack from the ``.log``; ``flush.ms``/``flush.messages``
flushes, rolls and shutdown fsync them.

Every waiter checks its own logs after its wait, as Kafka answers an append
for the log it flushed alone (``UnifiedLog.append`` flushes inline): a failed
fsync takes that log's dir offline (``log_dir_failure.py``: the log leaves the
dirty set and is never fsynced again), the round goes on with its other logs
and publishes its generation, and the waiter finds its log ``offline``
(KAFKA_STORAGE_ERROR) whatever round it asks after. After a failed fsync the
kernel may have dropped the dirty pages, so trying again and answering
success could acknowledge data that is not on disk (Kafka never retries
either: the dir goes offline). A log whose dir goes offline for another
reason (another log's append failed) leaves the dirty and due sets unflushed,
and a later round does not cover it (nor the round under way, which skips it
if it took it before it went offline): its waiters learn it the same way.

A flush that fails without taking its log offline (out of descriptors or
memory) fails the round whole: its logs go back to the dirty set for the
next round, nothing is published, and every waiter whose generation it took,
``(after, target]``, gets a ``StorageError``, before or after a later round
succeeds, the flusher and the others alike (``settled`` and ``sync_to``
both check). The record of it stays while a waiter may still ask: a waiter
asks about a generation at or after the one it ``hold``s from its start
(before its appends, or as it reads the generation it waits for) until it
``release``s it, and a waiter not begun yet about one at or after the
generation now; a failure below all of those, or inside a later one, goes.

``close`` is the last round: it waits for the round under way, so no fsync
runs on files being closed, and covers every append with the close's own
flush (a ``sync_to`` that comes later returns at once), unless that flush
failed for a log without taking it offline: then it failed whole, as a round.
"""

from __future__ import annotations

import errno
import threading
from typing import Any, Callable

from .errors import StorageError


class GroupCommit:
    """Generations of appends and the fsync rounds that make them durable; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._flushed = 0
        self._dirty: set[Any] = set()
        self._due: set[Any] = set()  # logs whose flush policy wants a whole flush (``note_flush_due``)
        self._sync = threading.Condition()
        self._syncing = False
        self._failed: tuple[tuple[int, int], ...] = ()  # rounds that failed whole: (after, up to]; rebound whole
        self._holds: dict[int, int] = {}  # generation when a waiter began: how many such waiters (``hold``)
        self.fsync_count = 0  # logs fsynced by commit rounds (tests and metrics)
        self.rounds = 0

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def flushed(self) -> int:
        return self._flushed

    def note_append(self, log_: Any) -> None:
        with self._lock:
            self._generation += 1
            self._dirty.add(log_)

    def note_flush_due(self, log_: Any) -> int:
        """``log_``'s flush policy wants a flush: the next round fsyncs it whole; the generation to wait for."""
        with self._lock:
            self._generation += 1
            self._due.add(log_)
            return self._generation

    def forget(self, predicate) -> None:
        """Drop dirty or due logs matching ``predicate`` (their topic was deleted, their dir went offline)."""
        with self._lock:
            self._dirty = {l for l in self._dirty if not predicate(l)}
            self._due = {l for l in self._due if not predicate(l)}

    def hold(self) -> int:
        """A waiter begins (before its appends, or as it reads the generation it waits for): the generation now.
        Until ``release``, the failure of every round covering it or a later one is kept for it."""
        with self._lock:
            self._holds[self._generation] = self._holds.get(self._generation, 0) + 1
            return self._generation

    def release(self, held: int) -> None:
        """The waiter that ``hold`` answered ``held`` is done: failures only it could ask about go."""
        with self._lock:
            if self._holds[held] == 1:
                del self._holds[held]
            else:
                self._holds[held] -= 1
            self._failed = self._still_asked(self._failed)

    def settled(self, generation: int) -> bool:
        """Without waiting: whether a round covered ``generation``; a ``StorageError`` if one failed whole."""
        done = self._flushed >= generation  # read first: a failure covering it was recorded before that
        self._check_failed(generation)
        return done

    def sync_to(self, generation: int) -> None:
        """Block until a round covered ``generation`` (one thread flushes for all): every log it took fsynced
        or offline, which the caller checks for its own logs; a ``StorageError`` if that round failed whole."""
        with self._sync:
            while self._flushed < generation:
                self._check_failed(generation)
                if not self._syncing:
                    self._syncing = True
                    break
                self._sync.wait()
            else:
                self._check_failed(generation)
                return
        try:
            self.commit()
        finally:
            with self._sync:
                self._syncing = False
                self._sync.notify_all()
        self._check_failed(generation)

    def close(self, flush_all: Callable[[], bool]) -> None:
        """The last round, at close: after the round under way (if any), with later ``sync_to`` calls waiting,
        run ``flush_all`` (the close's flush of every log; False or an ``OSError`` when one failed without
        taking its log offline) and publish every append so far as flushed, or else record it failed whole."""
        with self._sync:
            while self._syncing:
                self._sync.wait()
            self._syncing = True
        flushed = False
        try:
            with self._lock:
                target, after, self._dirty, self._due = self._generation, self._flushed, set(), set()
            flushed = flush_all()
        finally:
            with self._lock:
                if flushed:
                    self._flushed = max(self._flushed, target)
                else:
                    self._failed_whole(after, target)
            with self._sync:
                self._syncing = False
                self._sync.notify_all()

    def _check_failed(self, generation: int) -> None:
        for after, upto in self._failed:  # a snapshot: the tuple is rebound whole, under the lock
            if after < generation <= upto:
                raise StorageError(errno.EIO, "the fsync round of this append failed")

    def _failed_whole(self, after: int, target: int) -> None:
        """Record (under the lock) that the round that took ``(after, target]`` failed whole."""
        self._failed = self._still_asked(self._failed + ((after, target),))

    def _still_asked(self, failed: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
        """The failures a waiter may still ask about (under the lock). A waiter asks about a generation at or
        after the one it held (``hold``), a waiter not begun yet about one at or after the generation now: a
        failure up to a generation below all of those can go, and so can one inside another."""
        floor = min(self._holds, default=self._generation)
        kept: list[tuple[int, int]] = []
        for after, upto in failed:
            if upto >= floor and not any(a <= after and upto <= u for a, u in kept):
                kept = [(a, u) for a, u in kept if not (after <= a and u <= upto)] + [(after, upto)]
        return tuple(kept)

    def commit(self) -> None:
        """fsync each log appended since the last round once (a due one whole), then publish the generation:
        a log whose fsync failed took its dir offline, which its waiters check; any other ``OSError`` fails the
        round whole (``_check_failed``) and puts its logs back for the next round."""
        with self._lock:
            target, after = self._generation, self._flushed
            dirty, due, self._dirty, self._due = self._dirty, self._due, set(), set()
        fsynced = 0
        try:
            for log_ in due | dirty:
                if not getattr(log_, "offline", False):  # its dir failed after the round took it: as if forgotten
                    fsynced += self._flush_one(log_, log_ in due)
        except BaseException as exc:
            with self._lock:
                self._dirty |= {l for l in dirty if not getattr(l, "offline", False)}
                self._due |= {l for l in due if not getattr(l, "offline", False)}
                if isinstance(exc, OSError):
                    self._failed_whole(after, target)
            raise
        with self._lock:
            self.fsync_count += fsynced
            self.rounds += 1
            self._flushed = max(self._flushed, target)

    @staticmethod
    def _flush_one(log_: Any, whole: bool) -> int:
        """fsync ``log_`` (1); a failure that took its dir offline counts 0 (its waiters find it offline), any
        other raises."""
        try:
            log_.flush(active_indexes=whole)
        except OSError:
            if not getattr(log_, "offline", False):
                raise
            return 0
        return 1
