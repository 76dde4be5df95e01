"""The stand-in for a log whose log dir failed before the log could be opened.

When a log dir fails while the logs load at start (``log_opening.py``), its
logs are never opened, but their partitions still exist: Kafka keeps them as
offline replicas, and its ``getOrCreateLog`` refuses to make them anew while a
dir is offline (they may be in it). ``OfflineLog`` takes such a partition's
place in the manager, ``offline`` from the start, so the broker answers for it
exactly as for a log whose dir failed while it ran: KAFKA_STORAGE_ERROR, no
leader in Metadata, left out of every duty, checkpoint and clean stop.

It holds no file. What the broker may read of an offline log before it checks
``offline`` is there, empty (offsets 0, no segment, no producer); anything else
it is asked for raises ``StorageError``, the error an offline ``Log`` raises
for appends, reads and flushes.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from .errors import StorageError
from .producer_state import ProducerStateManager


class OfflineLog:
    offline = True
    log_start_offset = log_end_offset = high_watermark = last_stable_offset = size_in_bytes = 0

    def __init__(self, directory: Path, topic: str, partition: int, config: Any) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.deleted = False
        self.segments: list[Any] = []
        self.producer_state = ProducerStateManager(directory)  # empty, never written

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def close(self) -> None:
        """Nothing to close: no file was opened."""

    def close_files(self) -> None:
        """Nothing to close: no file was opened."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise StorageError(errno.EIO, f"{self.name} is in the offline log dir {self.dir.parent} ({attribute})")
