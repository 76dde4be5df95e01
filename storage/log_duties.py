"""The timer duties of ``LogManager`` (``log_manager.py``), tended over every online log.

Each duty walks the logs whose dir has not failed (``online_logs``); a log whose duty raises
``OSError`` (its dir goes offline, ``log_dir_failure.py``) is logged and the walk goes on, as
Kafka's scheduled tasks catch per-log failures: the idle roll of KIP-354 with the ``flush.ms``
policy, retention (Kafka's cleanupLogs, for logs the cleaner does not own), removal of
``.deleted`` files and ``-delete`` directories once their delay has passed, and the expiry of
producer state (``producer.id.expiration.ms``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from .config import LONG_MAX
from .log import Log

log = logging.getLogger("storage.log_manager")


class LogDuties:
    """Mixed into ``LogManager``, which gives ``online_logs()``, ``doomed``, ``model`` and ``group_commit``."""

    def _tend(self, what: str, duty: Callable[[Log], Any]) -> None:
        """Run ``duty`` on each online log; one that fails (its dir goes offline) does not stop the others."""
        for log_ in self.online_logs():
            try:
                duty(log_)
            except OSError as exc:
                log.error("%s: %s failed: %s", log_.name, what, exc)

    def roll_idle_segments(self, now_ms: int) -> bool:
        """Timer duty: KIP-354 roll of idle active segments, and the flush.ms policy, whose flushes are only
        noted here for the group commit's next round (``note_flush_due``: the caller runs it on a worker
        thread, as Kafka's ``flushDirtyLogs`` runs on its scheduler's); whether any was noted."""
        noted = False

        def duty(log_: Log) -> None:
            nonlocal noted
            log_.roll_if_idle(now_ms)
            if log_.config.flush_ms != LONG_MAX and log_.flush_due(now_ms):
                self.group_commit.note_flush_due(log_)
                noted = True

        self._tend("the idle roll", duty)
        return noted

    def run_retention(self, now_ms: int) -> None:
        """Kafka's cleanupLogs: retention of the logs whose ``cleanup.policy`` lacks compact. A compacted
        log's (``compact,delete`` or compact only) is the cleaner's, after each of its rounds; with
        ``log.cleaner.enable=false`` such a log gets none, as in Kafka."""
        self._tend("retention", lambda l: "compact" in l.config.cleanup_policy or l.run_retention(now_ms))

    def delete_expired_files(self, now_ms: int) -> None:
        """Timer duty: ``.deleted`` segment files and ``-delete`` directories whose delay has passed."""
        self._tend("removing .deleted files", lambda l: l.delete_expired_files(now_ms))
        if self.doomed:
            self.doomed.remove_due(now_ms, self.model.effective({}).file_delete_delay_ms)

    def remove_expired_producers(self, now_ms: int) -> None:
        """Timer duty (``producer.id.expiration.check.interval.ms``): Kafka's removeExpiredProducers."""
        for log_ in self.online_logs():
            log_.producer_state.expire(now_ms)
