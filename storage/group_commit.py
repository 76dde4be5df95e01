"""Durable mode's group commit: one fsync per dirty log answers every append waiting at that moment.

Every append calls ``note_append(log)``, which bumps ``generation`` and adds
the log to the dirty set. A producer that must not be answered before its
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
flushes, rolls and shutdown fsync them. A failed
fsync puts the logs back in the dirty set and raises ``StorageError`` to the
flusher; the others find their generation still unflushed and try again.
"""

from __future__ import annotations

import threading
from typing import Any


class GroupCommit:
    """Generations of appends and the fsync rounds that make them durable; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._flushed = 0
        self._dirty: set[Any] = set()
        self._sync = threading.Condition()
        self._syncing = False
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

    def forget(self, predicate) -> None:
        """Drop dirty logs matching ``predicate`` (their topic was deleted)."""
        with self._lock:
            self._dirty = {l for l in self._dirty if not predicate(l)}

    def sync_to(self, generation: int) -> None:
        """Block until every append up to ``generation`` is on disk (one thread flushes for all)."""
        with self._sync:
            while self._flushed < generation:
                if not self._syncing:
                    self._syncing = True
                    break
                self._sync.wait()
            else:
                return
        try:
            self.commit()
        finally:
            with self._sync:
                self._syncing = False
                self._sync.notify_all()

    def commit(self) -> None:
        """fsync each log appended since the last round once, then publish the generation covered."""
        with self._lock:
            target = self._generation
            dirty, self._dirty = self._dirty, set()
        try:
            for log_ in dirty:
                log_.flush(active_indexes=False)
        except BaseException:
            with self._lock:
                self._dirty |= dirty
            raise
        with self._lock:
            self.fsync_count += len(dirty)
            self.rounds += 1
            self._flushed = max(self._flushed, target)
