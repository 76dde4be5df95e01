"""The checkpoint files of each log dir: recovery points, log start offsets, cleaner offsets.

``DirCheckpoints`` writes Kafka's ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` of a log dir from the logs it holds
(``write_offsets``: periodically, at close, and for a move's destination
before the move commits), and keeps the cleaner's first dirty offsets,
rewriting the ``cleaner-offset-checkpoint`` of every online dir at each
change (Kafka's doneCleaning; an offline dir is left alone, as Kafka's
cleaner drops it from its checkpoints in ``handleLogDirFailure``). A log counts in a dir when ``holds(key, root)``: it
is there, or being moved there. Writers run on several threads (the periodic
writer, the cleaner's, a move's), so each kind of file is written under its
own lock.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from .checkpoint import write_checkpoint

RECOVERY_POINTS = "recovery-point-offset-checkpoint"
LOG_STARTS = "log-start-offset-checkpoint"
CLEANER_OFFSETS = "cleaner-offset-checkpoint"


class DirCheckpoints:
    def __init__(self, online_dirs: Callable[[], list[Path]], logs: Callable[[], Iterable[Any]],
                 holds: Callable[[tuple[str, int], Path], bool]) -> None:  # fmt: skip
        self._online_dirs, self._logs, self._holds = online_dirs, logs, holds
        self.cleaner_offsets: dict[tuple[str, int], int] = {}
        self._offsets_lock = threading.Lock()
        self._cleaner_lock = threading.Lock()

    def write_offsets(self, root: Path) -> None:
        """``root``'s recovery points and log start offsets (only those above the first segment's base)."""
        with self._offsets_lock:
            mine = [l for l in self._logs() if self._holds((l.topic, l.partition), root)]
            write_checkpoint(root / RECOVERY_POINTS, {(l.topic, l.partition): l.checkpointed_recovery_point for l in mine})
            write_checkpoint(root / LOG_STARTS, {(l.topic, l.partition): l.log_start_offset for l in mine
                                                 if l.log_start_offset > _first_base(l)})  # fmt: skip

    def update_cleaner_offset(self, key: tuple[str, int], offset: int) -> None:
        with self._cleaner_lock:
            self.cleaner_offsets[key] = offset
            self._write_cleaner_offsets()

    def forget_cleaner_offsets(self, topic: str) -> None:
        with self._cleaner_lock:
            gone = [k for k in self.cleaner_offsets if k[0] == topic]
            for key in gone:
                del self.cleaner_offsets[key]
            if gone:
                self._write_cleaner_offsets()

    def write_cleaner_offsets(self) -> None:
        with self._cleaner_lock:
            self._write_cleaner_offsets()

    def _write_cleaner_offsets(self) -> None:
        for root in self._online_dirs():
            mine = {k: o for k, o in self.cleaner_offsets.items() if self._holds(k, root)}
            write_checkpoint(root / CLEANER_OFFSETS, mine)


def _first_base(log_) -> float:
    """The first segment's base offset; infinity for a log a deletion on the owner thread emptied meanwhile
    (this runs on a worker thread: the list is copied in one step before it is read)."""
    first = log_.segments[:1]
    return first[0].base_offset if first else float("inf")
