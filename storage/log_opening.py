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

The logs load as Kafka's ``LogManager.loadLogs`` loads them: each dir has a
pool of ``num.recovery.threads.per.data.dir`` threads (``recovery_pool.py``),
all dirs at once, and each partition directory is one job that runs
``Log.open`` and nothing else. What the manager shares stays on the calling
thread, which has read each dir's marker and checkpoints and resolved the
topic configs before the jobs start, then takes the results in a fixed order
(dir by dir, partitions by name, as the jobs were given), registering each
log and finishing each dir (cleaner offsets, marker) as today's single
thread did, so the result does not depend on which thread ran what. A job
that fails fails the start with the first failure in that order, as Kafka's
wait on its jobs in turn does; before it is raised, the jobs not started are
cancelled, the running ones are waited for, and every log that did open has
its files closed (no marker is written back).
"""

from __future__ import annotations

import functools
import logging
import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

import attrs

from .checkpoint import fsync_dir, read_checkpoint
from .config import OTHER_BROKER_DEFAULTS
from .dir_checkpoints import CLEANER_OFFSETS, LOG_STARTS, RECOVERY_POINTS
from .file_names import DELETE_SUFFIX, STRAY_SUFFIX, parse_partition_dir, remove_dir, set_aside_name
from .load_progress import LoadProgress
from .log import Log
from .log_move import finish_interrupted_moves
from .new_logs import NewLogs
from .recovery_pool import RecoveryPool, thread_number
from .topic_store import read_partition_topic_id, write_partition_metadata

log = logging.getLogger(__name__)
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_THREADS = "num.recovery.threads.per.data.dir"
DEFAULT_RECOVERY_THREADS = int(OTHER_BROKER_DEFAULTS[RECOVERY_THREADS][1])  # Kafka 4's 2 (KIP-1030; 1 before)


@attrs.define
class _DirLoad:
    """One dir's load as the calling thread follows it: its jobs, in the order they were given."""

    root: Path
    clean: bool
    jobs: list[Future]


class LogOpening:
    """``LogManager``'s start: ``_open_logs`` (it relies on the manager's attributes and ``_register``)."""

    def _open_logs(self, progress: LoadProgress) -> None:
        self.interrupted_moves = finish_interrupted_moves(self.dirs)  # the broker begins them again
        found = [(root, self._partitions_to_open(root)) for root in self.dirs]
        for root, entries in found:  # every dir's count first, as Kafka's loadLogs before its gauges show
            progress.found(root, len(entries))
        try:
            self._load_dirs(found, progress)
        finally:
            progress.finish()
        for meta in self._topics.values():
            missing = [p for p in range(meta.num_partitions) if (meta.name, p) not in self._logs]
            if missing:  # a creation cut short by a crash: finish it
                for _partition in NewLogs(self, meta, missing, new_topic=False):
                    pass

    def _load_dirs(self, found: list[tuple[Path, list[tuple[Path, tuple[str, int]]]]], progress: LoadProgress) -> None:
        """Every dir's logs on its own pool, all dirs at once; registered here, in ``found``'s order."""
        pools: list[RecoveryPool] = []
        loads: list[_DirLoad] = []
        threads = self.model.other.get(RECOVERY_THREADS, DEFAULT_RECOVERY_THREADS)
        try:
            for root, entries in found:
                pools.append(RecoveryPool(root, threads))
                loads.append(self._start_dir(pools[-1], root, entries, progress))
            for load in loads:
                self._finish_dir(load)
        except BaseException:
            for pool in pools:  # nothing left running on a log once the error is raised
                pool.shutdown(wait=True, cancel_futures=True)
            self._close_loaded(loads)
            raise
        finally:
            for pool in pools:
                pool.shutdown(wait=True)

    def _partitions_to_open(self, root: Path) -> list[tuple[Path, tuple[str, int]]]:
        """The partition directories of ``root`` to open as logs, each sorted out (``_partition_to_open``)."""
        entries = []
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            parsed = self._partition_to_open(root, entry)
            if parsed is not None:
                entries.append((Path(entry.path), parsed))
        return entries

    def _start_dir(self, pool: RecoveryPool, root: Path, entries: list[tuple[Path, tuple[str, int]]],
                   progress: LoadProgress) -> _DirLoad:  # fmt: skip
        """Give ``pool`` a job per partition directory of ``root``, with what each needs read here."""
        clean = (root / CLEAN_SHUTDOWN).exists()
        points = read_checkpoint(root / RECOVERY_POINTS)
        starts = read_checkpoint(root / LOG_STARTS)
        if entries and not clean:
            log.warning("%s: no clean-shutdown marker, recovering logs from their recovery points", root)
        configs: dict[str, Any] = {}
        for _path, (topic, _p) in entries:
            if topic not in configs:
                configs[topic] = self.effective_config(topic)
        expiration, jobs = self.producer_id_expiration_ms, []
        for path, parsed in entries:
            opener = functools.partial(
                Log.open, path, parsed[0], parsed[1], configs[parsed[0]], self.clock, clean=clean,
                log_start_offset=starts.get(parsed, 0), recovery_point=points.get(parsed, 0),
                producer_id_expiration_ms=expiration,
            )  # fmt: skip
            jobs.append(pool.submit(_load_log, progress, root, opener))
        return _DirLoad(root, clean, jobs)

    def _finish_dir(self, load: _DirLoad) -> None:
        """Register ``load``'s logs in order (the first failure raises), then its cleaner offsets and marker."""
        root = load.root
        for job in load.jobs:
            self._register(job.result())
        cleaned = read_checkpoint(root / CLEANER_OFFSETS)
        self.checkpoints.cleaner_offsets.update((k, o) for k, o in cleaned.items() if self._log_in(k, root))
        if load.clean:  # from now on a crash must be noticed: make the removal durable
            (root / CLEAN_SHUTDOWN).unlink(missing_ok=True)
            fsync_dir(root)

    def _close_loaded(self, loads: list[_DirLoad]) -> None:
        """After a failed load (every pool shut down): close the files of every log that opened."""
        for load in loads:
            for job in load.jobs:
                if job.done() and not job.cancelled() and job.exception() is None:
                    job.result().close_files()
        self._logs.clear()

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


def _load_log(progress: LoadProgress, root: Path, opener: Callable[..., Log]) -> Log:
    """A pool job: ``opener`` (``Log.open`` with its arguments) reporting to ``progress`` as this thread."""
    number = thread_number()
    try:
        return opener(segments_left=lambda n: progress.segments_left(root, number, n))
    finally:
        progress.loaded(root)
