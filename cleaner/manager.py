"""Kafka's LogCleanerManager: which log to clean next, what is in progress, what is uncleanable.

Shared by all cleaner threads (one lock). ``grab_filthiest(now)`` builds a
``LogToClean`` for every compacted log that is neither being cleaned nor
marked uncleanable, remembers the figures behind the manager's gauges
(``max-dirty-percent``, the time of the attempt), picks one with
``selection.choose`` and marks it in progress. A first dirty offset that had
to be reset to the log start is written back to ``cleaner-offset-checkpoint``
at once, as Kafka does. ``done_cleaning`` records the round's end offset;
``deletable_logs`` hands out the compacted logs whose retention the thread
runs after each round (Kafka's LogManager leaves those to the cleaner);
``mark_uncleanable`` sets a log aside after an unexpected error (until the
partition goes away, as in Kafka) and counts it. A log being moved to
another log dir is ``paused`` (Kafka's abortAndPauseCleaning): not picked,
and a round in progress is abandoned, until the move ends.

``compaction_delays(now)`` recomputes KIP-354's delay for every compacted log
on demand, so the scrape-time gauges are fresh rather than the stale value
Kafka keeps from its last successful selection.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from .selection import LogToClean, choose, compaction_delay, first_dirty_offset, is_compacted, log_to_clean

log = logging.getLogger(__name__)


def _key(log_: Any) -> tuple[str, int]:
    return log_.topic, log_.partition


class CleanerManager:
    def __init__(self, log_manager: Any, clock: Callable[[], int]) -> None:
        self.log_manager = log_manager
        self.clock = clock
        self._lock = threading.Lock()
        self.in_progress: set[tuple[str, int]] = set()
        self.uncleanable: dict[tuple[str, int], Any] = {}
        self.uncleanable_errors = 0
        self.max_dirty_percent = 0
        self.last_selection_delay_ms = 0
        self.last_run_ms = clock()

    def _compacted_logs(self) -> list:
        return [l for l in self.log_manager.online_logs()
                if is_compacted(l) and not l.deleted and not self.paused(l)]  # fmt: skip

    def grab_filthiest(self, now: int) -> LogToClean | None:
        with self._lock:
            self.last_run_ms = now
            checkpoints = self.log_manager.cleaner_offsets()
            candidates = [log_to_clean(l, checkpoints.get(_key(l)), now) for l in self._compacted_logs()
                          if _key(l) not in self.in_progress and _key(l) not in self.uncleanable]  # fmt: skip
            self.max_dirty_percent = int(100 * max((c.dirty_ratio for c in candidates), default=0.0))
            chosen = choose(candidates)
            if chosen is None:
                return None
            self.last_selection_delay_ms = max(c.compaction_delay_ms for c in candidates)
            self.in_progress.add(_key(chosen.log))
        if chosen.checkpoint_reset:
            self.log_manager.update_cleaner_offset(*_key(chosen.log), chosen.first_dirty_offset)
        return chosen

    def done_cleaning(self, log_: Any, end_offset: int) -> None:
        if self.is_current(log_):
            self.log_manager.update_cleaner_offset(*_key(log_), end_offset)

    def release(self, log_: Any) -> None:
        with self._lock:
            self.in_progress.discard(_key(log_))

    def deletable_logs(self) -> list:
        """Kafka's deletableLogs: the compacted logs due for retention after a round (compact-only ones
        too, for segments below the log start offset), those neither in progress nor uncleanable; each is
        marked in progress until ``release``."""
        with self._lock:
            logs = [l for l in self._compacted_logs()
                    if _key(l) not in self.in_progress and _key(l) not in self.uncleanable]  # fmt: skip
            self.in_progress.update(_key(l) for l in logs)
        return logs

    def mark_uncleanable(self, log_: Any) -> None:
        with self._lock:
            self.uncleanable[_key(log_)] = log_
            self.uncleanable_errors += 1

    def is_current(self, log_: Any) -> bool:
        """False once the log was deleted or replaced (a topic deleted and created again)."""
        return not log_.deleted and self.log_manager.get_log(*_key(log_)) is log_

    def paused(self, log_: Any) -> bool:
        """True while the log is being moved to another log dir."""
        return self.log_manager.moves.get(*_key(log_)) is not None

    def compaction_delays(self, now: int) -> list[tuple[Any, int]]:
        """(log, KIP-354 delay in ms) for every compacted log, computed now."""
        checkpoints = self.log_manager.cleaner_offsets()
        out = []
        for l in self._compacted_logs():
            dirty, _ = first_dirty_offset(l, checkpoints.get(_key(l)))
            out.append((l, compaction_delay(l, list(l.segments), dirty, now)))
        return out

    def uncleanable_by_dir(self) -> dict[str, tuple[int, int]]:
        """log directory -> (uncleanable partitions, their cleanable bytes)."""
        with self._lock:
            for key, l in list(self.uncleanable.items()):
                if not self.is_current(l):
                    del self.uncleanable[key]
            logs = list(self.uncleanable.values())
        out: dict[str, tuple[int, int]] = {str(d): (0, 0) for d in self.log_manager.dirs}
        checkpoints = self.log_manager.cleaner_offsets()
        for l in logs:
            todo = log_to_clean(l, checkpoints.get(_key(l)), self.clock())
            count, size = out.get(str(l.dir.parent), (0, 0))
            out[str(l.dir.parent)] = (count + 1, size + todo.cleanable_bytes)
        return out
