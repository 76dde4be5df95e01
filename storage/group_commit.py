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
``trio.to_thread.run_sync``). Waiters queue on one condition:

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

A failed fsync takes that log's dir offline (``log_dir_failure.py``: the
log leaves the dirty set and is never fsynced again); the round goes on with
its other logs and then records that it failed for the appends it covered,
``(after, target]`` (``after``: the last round that ended with each of its
logs fsynced or offline took the appends up to it; a later round's failure
concerns none of those), without publishing ``target`` as flushed: a waiter
gets a ``StorageError``, the flusher and the others alike, even when a later
round succeeds, unless it checks its own logs (``sync_to(generation,
checks_offline=True)``: the broker's Produce, which answers
KAFKA_STORAGE_ERROR for a partition whose log is offline after its wait, as
Kafka's append answers only for the log it flushed); such a waiter returns
once a round covering it has fsynced every log of it still online. After a failed fsync the
kernel may have dropped the dirty pages, so trying again and answering
success could acknowledge data that is not on disk (Kafka never retries
either: the dir goes offline). A flush that fails without taking its log
offline fails the whole round, and the round's logs not fsynced go back to
the dirty set for the next round.
A log whose dir goes offline for another reason (another log's append
failed) leaves the dirty and due sets unflushed, and a later round does not cover it
(nor the round under way, which skips it if it took it before it went offline:
the round's other logs are not failed for it): its waiters learn it from
``Log.offline`` after their wait (the broker's Produce and internal-topic
appends check it), not from this module.

``close`` is the last round: it waits for the round under way, so no fsync
runs on files being closed, and covers every append with the close's own
flush (a ``sync_to`` that comes later returns at once).
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
        self._taken = 0  # the last round that ended with each log it took fsynced or offline took appends up to it
        self._dirty: set[Any] = set()
        self._due: set[Any] = set()  # logs whose flush policy wants a whole flush (``note_flush_due``)
        self._sync = threading.Condition()
        self._syncing = False
        self._failed: list[tuple[int, int, bool]] = []  # rounds' (after, up to]; whether one failed whole
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

    def sync_to(self, generation: int, checks_offline: bool = False) -> None:
        """Block until every append up to ``generation`` is on disk (one thread flushes for all); a
        ``StorageError`` if a round covering it failed (``checks_offline``: only if it failed whole, the
        caller learns of its own logs whose fsync failed from ``Log.offline``)."""
        with self._sync:
            while self._flushed < generation:
                self._check_failed(generation, checks_offline)
                if not self._syncing:
                    self._syncing = True
                    break
                self._sync.wait()
            else:
                self._check_failed(generation, checks_offline)
                return
        try:
            self.commit()
        finally:
            with self._sync:
                self._syncing = False
                self._sync.notify_all()
        self._check_failed(generation, checks_offline)

    def close(self, flush_all: Callable[[], None]) -> None:
        """The last round, at close: after the round under way (if any), with later ``sync_to`` calls waiting,
        run ``flush_all`` (the close's flush of every log) and publish every append so far as flushed."""
        with self._sync:
            while self._syncing:
                self._sync.wait()
            self._syncing = True
        try:
            with self._lock:
                target, self._dirty, self._due = self._generation, set(), set()
            flush_all()
        finally:
            with self._lock:
                self._flushed = max(self._flushed, target)
            with self._sync:
                self._syncing = False
                self._sync.notify_all()

    def _check_failed(self, generation: int, checks_offline: bool) -> None:
        for after, upto, whole in self._failed:
            if after < generation <= upto and (whole or not checks_offline):
                raise StorageError(errno.EIO, "the fsync of this append failed; its log dir is offline")

    def commit(self) -> None:
        """fsync each log appended since the last round once (a due one whole), then publish the generation;
        a log whose fsync failed (its dir offline) fails the round for the waiters (``_check_failed``)."""
        with self._lock:
            target, after = self._generation, max(self._flushed, self._taken)
            dirty, due, self._dirty, self._due = self._dirty, self._due, set(), set()
        fsynced, failed = 0, set()
        try:
            for log_ in due | dirty:
                if not getattr(log_, "offline", False):  # its dir failed after the round took it: as if forgotten
                    fsynced += self._flush_one(log_, log_ in due, failed)
        except BaseException as exc:
            with self._lock:
                self._dirty |= {l for l in dirty if not getattr(l, "offline", False)}
                self._due |= {l for l in due if not getattr(l, "offline", False)}
                if isinstance(exc, OSError):
                    self._failed.append((after, target, True))
            raise
        with self._lock:
            self.fsync_count += fsynced
            self.rounds += 1
            self._taken = max(self._taken, target)
            if failed:  # each of them offline, where a waiter that checks its logs finds it; not published
                self._failed.append((after, target, False))
            else:
                self._flushed = max(self._flushed, target)

    @staticmethod
    def _flush_one(log_: Any, whole: bool, failed: set) -> int:
        """fsync ``log_`` (1); a failure that took its dir offline is noted in ``failed`` (0), any other raises."""
        try:
            log_.flush(active_indexes=whole)
        except OSError:
            if not getattr(log_, "offline", False):
                raise
            failed.add(log_)
            return 0
        return 1
