"""Flushing a partition log: the recovery point and the fsyncs that move it.

Mixed into ``Log`` (which provides the segments, the lock and the counters
used here). ``recovery_point`` is the offset below which every batch is
known to be on disk; it only moves forward when the fsyncs it stands for
are done. A roll does not fsync the old segment on the spot (Kafka
schedules that asynchronously): the segment is queued in ``_unflushed`` and
synced by the next ``flush`` or ``flush_rolled`` (before the checkpoints are
written: the rolled segments only, so the recovery point reaches the active
segment's base). Producer snapshots written at a roll are fsynced with them.

The flush policy is Kafka's: ``flush_messages_due`` says when
``flush.messages`` messages are unflushed (``unflushed_messages``: the log end
offset less the recovery point, as Kafka counts them), which the append's
caller checks; ``flush_due`` adds a last flush ``flush.ms`` old, which the
timer checks (Kafka's ``flushDirtyLogs``). ``Log.append`` never flushes
itself, its caller runs ``flush`` (the broker: a group-commit round on a
worker thread, ``group_commit.py``).

``flush`` may run on a worker thread while the owner thread appends, rolls,
runs retention or deletes the topic: under ``_flush_lock``, held only for a
moment, it takes the segments to fsync and the log end offset, then fsyncs
without the lock (descriptors are held by the fsync, so a roll's trim or a
close meanwhile never makes it fsync a closed descriptor: ``FileHandle``), then
moves ``recovery_point`` forward, to the log end offset read before it
started, under the lock again. ``_flushing`` lets one flush run at a time;
``truncate_to`` and ``relocate`` wait for it. A group commit may leave the
active segment's indexes unsynced; the checkpoint then gets at most that
segment's base (``checkpointed_recovery_point``), so a restart after a crash
rescans it and rebuilds them. ``sync_recovered`` fsyncs what a restart found
above the recovery point (durable mode), then moves it to the log end. A disk
failure in a flush takes the log dir offline (``failing_dir``).
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

    @property
    def unflushed_messages(self) -> int:
        """Messages appended since the recovery point (Kafka's ``LocalLog.unflushedMessages``)."""
        return max(self.log_end_offset - self.recovery_point, 0)

    @property
    def flush_messages_due(self) -> bool:
        """``flush.messages`` messages are unflushed: Kafka's ``UnifiedLog.append`` flushes before it returns."""
        unflushed = self.unflushed_messages
        return unflushed > 0 and unflushed >= self._config.flush_messages

    def flush_due(self, now_ms: int) -> bool:
        """The flush policy wants a flush: ``flush.messages`` unflushed messages, or some older than ``flush.ms``
        (the timer's check, as Kafka's ``flushDirtyLogs``)."""
        return self.flush_messages_due or (self.unflushed_messages > 0
                                           and now_ms - self.last_flush_ms >= self._config.flush_ms)  # fmt: skip

    def flush(self, *, active_indexes: bool = True) -> None:
        """fsync every segment written since the last flush (a group commit: the active one's indexes aside)."""
        self.check_online()
        with self._flushing:
            log_end_offset = self.log_end_offset
            with self._flush_lock:
                pending = self._unflushed + [self.active]
            self._sync(pending, active_indexes)
            with self._flush_lock:  # the unsynced base first: a checkpoint may read the point on another thread
                self._forget_flushed(pending[:-1])
                self._unsynced_index_base = None if active_indexes else pending[-1].base_offset
                self.recovery_point = max(self.recovery_point, log_end_offset)
            self.last_flush_ms = self.clock()

    def _sync(self, segments: list, active_indexes: bool = True) -> None:
        """fsync ``segments`` (the last one's indexes only with ``active_indexes``) and the producer snapshots
        written without an fsync, outside ``_flush_lock``: the owner may append, roll or delete meanwhile."""
        if self.deleted:
            return  # the topic was deleted: its files are closed and on their way out
        with failing_dir(self):
            for seg in segments:
                seg.flush(indexes=active_indexes or seg is not segments[-1])
            self.producer_state.flush_snapshots()

    def _forget_flushed(self, segments: list) -> None:
        """Drop ``segments`` from the rolled segments waiting for their fsync (retention may have taken some)."""
        self._unflushed = [seg for seg in self._unflushed if seg not in segments]

    def sync_recovered(self) -> None:
        """fsync every segment above the recovery point (after a crash, in durable mode) and move it up."""
        point = self.recovery_point
        if point < self.log_end_offset:
            for seg in self.segments:
                if seg.next_offset > point:
                    seg.flush()
            self.recovery_point = self.log_end_offset

    def flush_rolled(self) -> None:
        """fsync the rolled segments only (before checkpoints), advancing the recovery point to the active base."""
        self.check_online()
        with self._flushing:
            with self._flush_lock:
                pending, base = list(self._unflushed), self.active.base_offset
            self._sync(pending)
            with self._flush_lock:
                self._forget_flushed(pending)
                if pending:
                    self.recovery_point = max(self.recovery_point, base)
