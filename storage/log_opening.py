"""Opening a broker's logs: the part of ``LogManager`` that runs once, at start.

For each of ``log.dirs`` in turn: moves a crash cut short are finished or undone
first (``log_move.finish_interrupted_moves``); then every entry is sorted out by
its name (``_partition_to_open``): a ``-delete`` directory is queued for removal
after the delete delay, a ``-stray`` one left alone, a partition directory of an
unknown topic or of an older topic of that name (its ``partition.metadata`` names
another id) is set aside as a stray, one made by a partition increase that never
finished is removed, and the rest open as logs from the directory's checkpoints
(recovery point, log start offset). With the clean-shutdown marker present the
logs open without scanning, and the marker is removed (durably, before they
load) so that a crash from now on is noticed; without it, every log is
recovered from its recovery point. Every dir is sorted out before any log opens, so that the count of
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
log and reading each dir's cleaner offsets as a single thread would, so the
result does not depend on which thread ran what. A job that fails (but for a
disk failure, below) fails the start with the first failure in that order, as Kafka's
wait on its jobs in turn does; before it is raised, the jobs not started are
cancelled, the running ones are waited for, and every log that did open has
its files closed (no marker is written back).

Before anything else, ``validate_dirs`` refuses a dir given twice (on
canonical paths) and takes each dir's ``.lock`` (``dir_locks.py``): a dir
another broker holds stops the start (``LogDirInUse``), before a file of it
is read or written.

With several log dirs, one that fails does not stop the start, as in Kafka
(``LogManager.createAndValidateLogDirs`` and ``loadLogs``): a dir that cannot
be made, read or locked is left out before anything loads, and a
disk error (``is_disk_failure``) while a dir is sorted out, its marker removed
or one of its logs loaded takes that dir offline (``LogDirFailures.fail_dir``):
its jobs are all waited for, the logs of it that did open have their files
closed and none is registered; the other dirs load on. Each dir's marker is
removed before its logs load, as Kafka's ``loadLogs`` removes it (KAFKA-10471):
a start that fails or crashes part way leaves no dir claiming a clean stop, so
the next start recovers them all, and an offline dir never gets one back. The
partitions of the topics that no online dir holds are then offline stand-ins
(``OfflineLog``), not new logs, since they may be in the failed dir (Kafka's
``getOrCreateLog`` refuses while a dir is offline). Any other error still
fails the start, and so does losing the last dir online or the first one,
which holds the metadata (Kafka halts once its metadata log dir fails):
``LogDirsFailed``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

import attrs

from .checkpoint import fsync_dir, read_checkpoint
from .config import OTHER_BROKER_DEFAULTS
from .dir_checkpoints import CLEANER_OFFSETS, LOG_STARTS, RECOVERY_POINTS
from .errors import ConfigError, LogDirsFailed
from .file_names import DELETE_SUFFIX, STRAY_SUFFIX, parse_partition_dir, remove_dir, set_aside_name
from .load_progress import LoadProgress
from .log import Log
from .log_dir_failure import is_disk_failure
from .log_move import finish_interrupted_moves
from .new_logs import NewLogs
from .offline_log import OfflineLog
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
    jobs: list[Future]


class LogOpening:
    """``LogManager``'s start: ``validate_dirs`` then ``_open_logs`` (they rely on the manager's attributes and
    ``_register``)."""

    def validate_dirs(self) -> None:
        """Kafka's ``createAndValidateLogDirs`` then ``lockLogDirs``: no dir twice (``ConfigError``); each made if
        missing and readable, then its ``.lock`` taken (``dir_locks.py``: ``LogDirInUse`` if another broker holds
        it), or else offline."""
        self._check_duplicates()
        for root in self.dirs:
            try:
                with contextlib.suppress(FileExistsError):  # a file of that name: refused below
                    root.mkdir(parents=True, exist_ok=True)
                if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
                    raise OSError(errno.ENOTDIR, f"{root} is not a readable log directory")
            except OSError as exc:
                why = exc.strerror or exc
                self.failures.fail_dir(root, f"Failed to create or validate data directory {root}: {why}")
        for root in self.failures.online_dirs():
            try:
                self.dir_locks.take(root)
            except OSError as exc:
                self.failures.fail_dir(root, f"Disk error while locking directory {root}: {exc.strerror or exc}")
        self._check_dirs_left("none of the log dirs in {dirs} can be created or validated")

    def _check_duplicates(self) -> None:
        """The same dir twice, however spelt (a trailing slash, a symlink): Kafka's check on canonical paths."""
        seen: set[str] = set()
        for root in self.dirs:
            canonical = os.path.realpath(root)
            if canonical in seen:
                raise ConfigError(f"Duplicate log directory found: {', '.join(str(d) for d in self.dirs)}")
            seen.add(canonical)

    def _check_dirs_left(self, none_left: str) -> None:
        """``LogDirsFailed`` unless some dir is online, the first among them (it holds the metadata)."""
        dirs = ", ".join(str(d) for d in self.dirs)
        if self.failures.all_offline:
            why = none_left.format(dirs=dirs)
        elif not self.failures.is_online(self.dirs[0]):
            why = f"the metadata log dir {self.dirs[0]} has failed"
        else:
            return
        log.critical("Stopping the broker because %s", why)
        raise LogDirsFailed(errno.EIO, why)

    def _dir_failed(self, root: Path, exc: OSError) -> None:
        """``exc`` met while loading ``root``: a disk failure takes the dir offline; anything else is raised."""
        if not is_disk_failure(exc):
            raise exc
        self.failures.fail_dir(root, f"loading its logs failed: {exc}")

    def _open_logs(self, progress: LoadProgress) -> None:
        online = self.failures.online_dirs()
        self.interrupted_moves = finish_interrupted_moves(online, self._dir_failed, unseen=online != self.dirs)
        found = []
        for root in self.failures.online_dirs():
            try:
                found.append((root, self._partitions_to_open(root)))
            except OSError as exc:
                self._dir_failed(root, exc)
        for root, entries in found:  # every dir's count first, as Kafka's loadLogs before its gauges show
            progress.found(root, len(entries))
        try:
            self._load_dirs(found, progress)
        finally:
            progress.finish()
        self._make_missing({key: root for root, entries in found for _path, key in entries})

    def _make_missing(self, seen: dict[tuple[str, int], Path]) -> None:
        """The partitions no log was opened for: made (a creation a crash cut short), or with a dir offline
        offline stand-ins, in the failed dir they were seen in (else the first failed one)."""
        failed = [root for root in self.dirs if not self.failures.is_online(root)]
        for meta in self._topics.values():
            missing = [p for p in range(meta.num_partitions) if (meta.name, p) not in self._logs]
            if missing and failed:  # they may be in the failed dir: Kafka's getOrCreateLog refuses to make them
                config = self.effective_config(meta.name)
                for p in missing:
                    root = seen.get((meta.name, p), failed[0])
                    self._logs[(meta.name, p)] = OfflineLog(root / f"{meta.name}-{p}", meta.name, p, config)
            elif missing:
                for _partition in NewLogs(self, meta, missing, new_topic=False):
                    pass

    def _load_dirs(self, found: list[tuple[Path, list[tuple[Path, tuple[str, int]]]]], progress: LoadProgress) -> None:
        """Every dir's logs on its own pool, all dirs at once; registered here, in ``found``'s order."""
        pools: list[RecoveryPool] = []
        loads: list[_DirLoad] = []
        threads = self.model.other.get(RECOVERY_THREADS, DEFAULT_RECOVERY_THREADS)
        started = time.monotonic()
        try:
            for root, entries in found:
                pools.append(RecoveryPool(root, threads))
                load = self._start_dir(pools[-1], root, entries, progress)
                if load is not None:
                    loads.append(load)
            for load in loads:
                self._finish_dir(load)
            self._check_dirs_left("all log dirs in {dirs} have failed")
            total = sum(len(entries) for _root, entries in found)  # a failed dir's too, as Kafka's numTotalLogs
            log.info("Loaded %d logs in %d ms", total, (time.monotonic() - started) * 1000)
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
                   progress: LoadProgress) -> _DirLoad | None:  # fmt: skip
        """Give ``pool`` a job per partition directory of ``root``, with what each needs read here; None if
        ``root`` failed first (removing its marker)."""
        clean = (root / CLEAN_SHUTDOWN).exists()
        if entries and not clean:
            log.warning("%s: no clean-shutdown marker, recovering logs from their recovery points", root)
        elif entries:
            log.info("%s: clean-shutdown marker found, skipping recovery of %d logs", root, len(entries))
        try:
            points = read_checkpoint(root / RECOVERY_POINTS)
            starts = read_checkpoint(root / LOG_STARTS)
            if clean:  # from now on a crash, or a start that fails, must be noticed: a durable removal
                (root / CLEAN_SHUTDOWN).unlink(missing_ok=True)
                fsync_dir(root)
        except OSError as exc:
            self._dir_failed(root, exc)
            progress.found(root, 0)
            return None
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
        return _DirLoad(root, jobs)

    def _finish_dir(self, load: _DirLoad) -> None:
        """Register ``load``'s logs in order, then its cleaner offsets; all its jobs waited for. A disk failure
        in any takes the dir offline with none registered; any other error is raised (the first in order)."""
        root, opened, failure, cleaned = load.root, [], None, {}
        for job in load.jobs:
            try:
                opened.append(job.result())
            except OSError as exc:
                if not is_disk_failure(exc):
                    raise
                failure = failure or exc
        try:
            cleaned = read_checkpoint(root / CLEANER_OFFSETS) if failure is None else {}
        except OSError as exc:  # a disk failure only (read_checkpoint)
            failure = exc
        if failure is not None:
            load.jobs = []  # closed here: ``_close_loaded`` must not close them again
            for log_ in opened:
                log_.close_files()
            self._dir_failed(root, failure)
            return
        for log_ in opened:
            self._register(log_)
        self.checkpoints.cleaner_offsets.update((k, o) for k, o in cleaned.items() if self._log_in(k, root))

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
