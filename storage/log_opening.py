"""Opening a broker's logs: the part of ``LogManager`` that runs once, at start.

For each of ``log.dirs`` in turn: moves a crash cut short are finished or undone
first (``log_move.finish_interrupted_moves``); then every entry is sorted out by
its name (``_partition_to_open``): a ``-delete`` directory is queued for removal
after the delete delay, a ``-stray`` one left alone, a partition directory of an
unknown topic or of an older topic of that name (its ``partition.metadata`` names
another id) is set aside as a stray, one made by a partition increase that never
finished is removed, and the rest open as logs from the directory's checkpoints
(recovery point, log start offset). With the clean-shutdown marker present the
logs open without scanning, and the marker is removed (durably) so that a crash
from now on is noticed; without it, every log is recovered from its recovery
point. Every dir is sorted out before any log opens, so that the count of
logs each has to load is known from the start (``LoadProgress``: Kafka's
recovery gauges, gone once the last log is loaded). Last, partitions a crash
kept a topic's creation from making are made.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .checkpoint import fsync_dir, read_checkpoint
from .dir_checkpoints import CLEANER_OFFSETS, LOG_STARTS, RECOVERY_POINTS
from .file_names import DELETE_SUFFIX, STRAY_SUFFIX, parse_partition_dir, remove_dir, set_aside_name
from .load_progress import LoadProgress
from .log import Log
from .log_move import finish_interrupted_moves
from .new_logs import NewLogs
from .topic_store import read_partition_topic_id, write_partition_metadata

log = logging.getLogger(__name__)
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"


class LogOpening:
    """``LogManager``'s start: ``_open_logs`` (it relies on the manager's attributes and ``_register``)."""

    def _open_logs(self, progress: LoadProgress) -> None:
        self.interrupted_moves = finish_interrupted_moves(self.dirs)  # the broker begins them again
        found = [(root, self._partitions_to_open(root)) for root in self.dirs]
        for root, entries in found:  # every dir's count first, as Kafka's loadLogs before its gauges show
            progress.found(root, len(entries))
        try:
            for root, entries in found:
                self._open_dir(root, entries, progress)
        finally:
            progress.finish()
        for meta in self._topics.values():
            missing = [p for p in range(meta.num_partitions) if (meta.name, p) not in self._logs]
            if missing:  # a creation cut short by a crash: finish it
                for _partition in NewLogs(self, meta, missing, new_topic=False):
                    pass

    def _partitions_to_open(self, root: Path) -> list[tuple[Path, tuple[str, int]]]:
        """The partition directories of ``root`` to open as logs, each sorted out (``_partition_to_open``)."""
        entries = []
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            parsed = self._partition_to_open(root, entry)
            if parsed is not None:
                entries.append((Path(entry.path), parsed))
        return entries

    def _open_dir(self, root: Path, entries: list[tuple[Path, tuple[str, int]]], progress: LoadProgress) -> None:
        clean = (root / CLEAN_SHUTDOWN).exists()
        points = read_checkpoint(root / RECOVERY_POINTS)
        starts = read_checkpoint(root / LOG_STARTS)
        if entries and not clean:
            log.warning("%s: no clean-shutdown marker, recovering logs from their recovery points", root)
        configs: dict[str, Any] = {}
        for path, parsed in entries:
            if parsed[0] not in configs:
                configs[parsed[0]] = self.effective_config(parsed[0])
            try:
                self._register(Log.open(
                    path, parsed[0], parsed[1], configs[parsed[0]], self.clock,
                    log_start_offset=starts.get(parsed, 0), recovery_point=points.get(parsed, 0), clean=clean,
                    producer_id_expiration_ms=self.producer_id_expiration_ms,
                    segments_left=lambda n: progress.segments_left(root, n),
                ))  # fmt: skip
            finally:
                progress.loaded(root)
        cleaned = read_checkpoint(root / CLEANER_OFFSETS)
        self.checkpoints.cleaner_offsets.update((k, o) for k, o in cleaned.items() if self._log_in(k, root))
        if clean:  # from now on a crash must be noticed: make the removal durable
            (root / CLEAN_SHUTDOWN).unlink(missing_ok=True)
            fsync_dir(root)

    def _partition_to_open(self, root: Path, entry: os.DirEntry) -> tuple[str, int] | None:
        """The (topic, partition) of a directory to open as a log, or None: a file, a deletion or a growth
        cut short (removed), a stray (set aside, as Kafka's KRaft brokers do), anything else (ignored)."""
        path = Path(entry.path)
        if not entry.is_dir() or entry.name.endswith(STRAY_SUFFIX):
            return None
        if entry.name.endswith(DELETE_SUFFIX):
            self.doomed.add(path, self.clock())
            return None
        parsed = parse_partition_dir(entry.name)
        if parsed is None:
            log.warning("%s: ignoring %s, which is not a partition directory", root, entry.name)
            return None
        meta, stored_id = self._topics.get(parsed[0]), read_partition_topic_id(path)
        if meta is None or stored_id not in (None, meta.topic_id):  # a topic no longer known, or an older one
            stray = path.with_name(set_aside_name(*parsed, STRAY_SUFFIX))
            path.rename(stray)
            log.warning("%s: %s belongs to no known topic; set aside as %s", root, entry.name, stray.name)
            return None
        if parsed[1] >= meta.num_partitions:  # a growth cut short: never answered
            log.warning("%s: removing %s, made by an unfinished partition increase", root, entry.name)
            remove_dir(path)
            return None
        if stored_id is None:  # lost in a crash (it is not fsynced)
            write_partition_metadata(path, meta.topic_id)
        return parsed
