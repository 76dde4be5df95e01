"""Flushing a partition log: the recovery point and the fsyncs that move it.

Mixed into ``Log`` (which provides the segments, the lock and the counters
used here). ``recovery_point`` is the offset below which every batch is
known to be on disk; it only moves forward when the fsyncs it stands for
are done. A roll does not fsync the old segment on the spot (Kafka
schedules that asynchronously): the segment is queued in ``_unflushed`` and
synced by the next ``flush`` (the flush policy: ``flush.messages`` counted
by ``Log.append``, ``flush.ms`` through ``flush_if_due``; or a group commit) or
``flush_rolled`` (before the checkpoints are written: the rolled segments
only, so the recovery point reaches the active segment's base). Producer
snapshots written at a roll are fsynced with them.

``flush`` may run on a worker thread (group commit) while the owner thread
appends: it only fsyncs file handles and moves ``recovery_point`` forward,
to the log end offset read before it started, under ``_flush_lock``. A group
commit may leave the active segment's indexes unsynced; the checkpoint then
gets at most that segment's base (``checkpointed_recovery_point``), so a
restart after a crash rescans it and rebuilds them. ``sync_recovered`` fsyncs
what a restart found above the recovery point (durable mode), then moves it
to the log end. A disk failure in a flush takes the log dir offline
(``failing_dir``).
"""

from __future__ import annotations

from .log_dir_failure import failing_dir


class LogFlushing:
    """The flushing part of ``Log`` (which provides the attributes used here)."""

    @property
    def recovery_point(self) -> int:
        """Offset below which every batch is known to be on disk."""
        if self._recovery_point is None:
            self._recovery_point = self.log_end_offset
        return self._recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._recovery_point = offset

    @property
    def checkpointed_recovery_point(self) -> int:
        """The recovery point to write to the checkpoint: at most the base of a segment whose indexes a
        group commit left unsynced, so a restart after a crash rescans that segment and rebuilds them."""
        point, unsynced = self.recovery_point, self._unsynced_index_base
        return point if unsynced is None else min(point, unsynced)

    def flush(self, *, active_indexes: bool = True) -> None:
        """fsync every segment written since the last flush (a group commit: the active one's indexes aside)."""
        self.check_online()
        log_end_offset = self.log_end_offset
        with self._flush_lock, failing_dir(self):
            pending = self._unflushed + [self.active]
            for seg in pending:
                seg.flush(indexes=active_indexes or seg is not pending[-1])
            self.producer_state.flush_snapshots()
            del self._unflushed[: len(pending) - 1]
            self.recovery_point = max(self.recovery_point, log_end_offset)
            self._unsynced_index_base = None if active_indexes else pending[-1].base_offset
        self._unflushed_messages = 0
        self.last_flush_ms = self.clock()

    def sync_recovered(self) -> None:
        """fsync every segment above the recovery point (after a crash, in durable mode) and move it up."""
        point = self.recovery_point
        if point < self.log_end_offset:
            for seg in self.segments:
                if seg.next_offset > point:
                    seg.flush()
            self.recovery_point = self.log_end_offset

    def flush_if_due(self, now_ms: int) -> None:
        if self._unflushed_messages and now_ms - self.last_flush_ms >= self._config.flush_ms:
            self.flush()

    def flush_rolled(self) -> None:
        """fsync the rolled segments only (before checkpoints), advancing the recovery point to the active base."""
        self.check_online()
        with self._flush_lock, failing_dir(self):
            pending, base = list(self._unflushed), self.active.base_offset
            for seg in pending:
                seg.flush()
            self.producer_state.flush_snapshots()
            del self._unflushed[: len(pending)]
            if pending:
                self.recovery_point = max(self.recovery_point, base)
