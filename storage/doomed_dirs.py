"""Partition directories waiting to be removed: Kafka's ``logsToBeDeleted`` queue.

A deleted topic's partition directory is first renamed ``<topic>-<p>.<id>-delete``
(``file_names.set_aside_name``), which frees the name at once for a topic
made again, and queued here with the time of the deletion. The broker's timer
calls ``remove_due``, which removes each directory whose delay has passed: the
broker-level ``log.segment.delete.delay.ms`` (the ``file.delete.delay.ms``
default, 60 s), read at that moment so a dynamic change applies to the queue,
as Kafka's ``kafka-delete-logs`` task reads ``currentDefaultConfig``. A
``-delete`` directory found when the logs open (a stop or a crash came
before its time) is queued again from then, as Kafka's loader does. A
directory that cannot be removed whole is logged and tried again a
delay later.
"""

from __future__ import annotations

import logging
import shutil
from collections import deque
from pathlib import Path
from typing import Any

from .file_names import DELETE_SUFFIX, set_aside_name

log = logging.getLogger(__name__)


class DoomedDirs:
    """Directories renamed ``-delete``, removed once their delay has passed, in the order queued."""

    def __init__(self) -> None:
        self._queue: deque[tuple[int, Path]] = deque()  # (queued at, ms; directory)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def take(self, log_: Any, now_ms: int) -> Path | None:
        """Close a deleted partition's log, rename its directory ``-delete`` and queue it; the new path, or
        None when the rename failed and the directory was removed at once (or could not be: logged, and
        set aside as a stray at the next start, its topic being unknown)."""
        log_.deleted = True  # nobody may write into it again (the cleaner checks), and close writes no snapshot
        try:
            log_.close()
        except OSError as exc:
            log.error("closing the deleted log %s failed: %s", log_.dir.name, exc)
        doomed = log_.dir.with_name(set_aside_name(log_.topic, log_.partition, DELETE_SUFFIX))
        try:
            log_.dir.rename(doomed)
        except OSError as exc:  # the name must not stay: a topic made again would open this data
            log.error("renaming the deleted log %s failed (%s); removing it at once", log_.dir.name, exc)
            shutil.rmtree(log_.dir, ignore_errors=True)
            if log_.dir.exists():
                log.error("could not remove %s either", log_.dir)
            return None
        self.add(doomed, now_ms)
        return doomed

    def add(self, directory: Path, now_ms: int) -> None:
        self._queue.append((now_ms, directory))

    def paths(self) -> list[Path]:
        return [directory for _queued, directory in self._queue]

    def remove_due(self, now_ms: int, delay_ms: int) -> None:
        """Remove the directories queued at least ``delay_ms`` before ``now_ms``; one that fails is queued
        again from ``now_ms``."""
        for _ in range(len(self._queue)):
            queued, directory = self._queue[0]
            if queued + delay_ms > now_ms:
                return
            self._queue.popleft()
            try:
                shutil.rmtree(directory)
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.error("removing the deleted log directory %s failed (tried again later): %s", directory, exc)
                self._queue.append((now_ms, directory))
                continue
            log.info("removed the deleted log directory %s", directory.name)
