"""Partitions moving between log dirs in the background, as Kafka's ReplicaAlterLogDirsThread moves them.

``LogDirMoves.request`` applies AlterReplicaLogDirs' rules to one partition
(see ``handlers/alter_replica_log_dirs.py``) and starts a
``storage.log_move.LogMove`` as a trio system task: the move outlives the
request, as Kafka's fetcher thread does, and the answer does not wait for it.
The task:

1. copies in rounds on a worker thread while the partition keeps taking
   appends and serving fetches on the loop, each round copying what the ones
   before missed; after the first, the destination's checkpoint files are
   written with the partition in them;
2. once a round leaves at most ``FINAL_BYTES`` to copy, or after
   ``MAX_ROUNDS`` rounds (appends outrunning the copy), runs
   ``LogMove.finish`` on the loop: the rest is copied and the swap made in
   one synchronous step, so no append, fetch, roll or retention comes in
   between, and nothing is lost or read twice;
3. removes the source's ``-delete`` directory and rewrites the checkpoints,
   on a worker thread.

A move that is stopped (by a later request naming another directory, its
topic's deletion) or that fails (a disk error in the destination, logged) is
abandoned: its future directory is removed and the log stays where it was.
A failed write to the destination also takes that log dir offline
(``storage.log_dir_failure``), as Kafka's failed future log does.
A task cancelled while its thread copies (the trio run ending) stops the
move and waits for the thread, which returns within a chunk.

``stop`` (at shutdown) stops every move and waits for the tasks, but keeps
their future directories, as Kafka keeps its future logs: at the next start
the storage layer finds them unfinished (so does it after a crash), removes
them and lists the moves (``interrupted_moves``), and ``resume_interrupted``
begins each again, so a restart does not drop a move the admin asked for.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable

import trio

from protocol import ErrorCode
from storage.log_dir_failure import is_disk_failure
from storage.log_move import DestinationFailed, LogMove, MoveStopped

log = logging.getLogger("minibroker")
FINAL_BYTES = 1 << 20  # what the last step may copy on the loop (the active segment's tail, mostly)
MAX_ROUNDS = 20


class LogDirMoves:
    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self._running: dict[LogMove, trio.Event] = {}
        self._stopping = False  # the broker is stopping: stopped moves keep their future directories

    def resume_interrupted(self) -> None:
        """Begin again the moves a crash or a stop cut short (the storage layer found their copies)."""
        for (topic, partition), root in self.manager.interrupted_moves:
            code = self.request(topic, partition, root)
            log.info("moving %s-%d to %s again, as it was before the broker stopped: %s", topic, partition, root,
                     code.name)  # fmt: skip
        self.manager.interrupted_moves = []

    def request(self, topic: str, partition: int, root: Path) -> ErrorCode:
        """Move ``topic``-``partition`` to ``root`` (one of ``log.dirs``, online): Kafka's rules."""
        moves = self.manager.moves
        current = moves.get(topic, partition)
        if current is not None and current.dest_root != root:  # a move elsewhere is given up
            moves.end(current)
            current = None
        log_ = self.manager.get_log(topic, partition)
        if log_ is None:  # made there if it comes to be (Kafka's preferred log dir)
            moves.preferred[(topic, partition)] = root
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if log_.offline:  # its log dir failed (at start, too: an interrupted move's source)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if current is None and log_.dir.parent != root:
            move = moves.start(log_, root)
            self._running[move] = trio.Event()
            trio.lowlevel.spawn_system_task(self._run, move, name=f"move {log_.name} to {root}")
        return ErrorCode.NONE

    async def stop(self) -> None:
        """At shutdown: stop every move and wait for it; its future copy stays for the next start."""
        self._stopping = True
        for move in list(self._running):
            self.manager.moves.end(move)
        for done in list(self._running.values()):
            await done.wait()

    async def _run(self, move: LogMove) -> None:
        try:
            await self._move(move)
        except MoveStopped:
            if not self._stopping:
                await _abandon(move)
        except trio.Cancelled:
            if not self._stopping:
                await _abandon(move)
            raise
        except Exception as exc:  # a system task must not raise: the move is given up, the log stays
            level = logging.INFO if move.stopped.is_set() else logging.ERROR
            log.log(level, "moving %s to %s failed; it stays in %s: %s", move.log.name, move.dest_root,
                    move.log.dir.parent, exc)  # fmt: skip
            if isinstance(exc, DestinationFailed) and is_disk_failure(exc):  # Kafka: the future log's dir failed
                self.manager.failures.fail_dir(move.dest_root, f"moving {move.log.name} there failed: {exc}")
            await _abandon(move)
        finally:
            self.manager.moves.end(move)
            self._running.pop(move).set()

    async def _move(self, move: LogMove) -> None:
        rounds = 0
        while True:
            self._check(move)
            plan = move.plan()
            if rounds and (plan.pending_bytes <= FINAL_BYTES or rounds >= MAX_ROUNDS):
                break
            await _off_loop(move, move.copy, plan)
            if not rounds:  # before the commit, the destination's checkpoints must list the partition
                await _off_loop(move, self.manager.write_dir_checkpoints, move.dest_root)
            rounds += 1
        move.finish()
        self.manager.moves.end(move)
        await trio.to_thread.run_sync(self._tidy, move)

    def _check(self, move: LogMove) -> None:
        if move.stopped.is_set() or self.manager.get_log(*move.key) is not move.log:
            raise MoveStopped()

    def _tidy(self, move: LogMove) -> None:
        move.remove_source()
        self.manager.write_checkpoints()


async def _abandon(move: LogMove) -> None:
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(move.abandon)


async def _off_loop(move: LogMove, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a worker thread. If cancelled meanwhile, stop the move and wait for the thread
    (it returns within a chunk): no copy outlives its move."""
    returned = threading.Event()

    def run() -> Any:
        try:
            return fn(*args)
        finally:
            returned.set()

    try:
        return await trio.to_thread.run_sync(run, abandon_on_cancel=True)
    except trio.Cancelled:
        move.stop()
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(returned.wait)
        raise
