"""Moving a partition's log to another directory of ``log.dirs`` (AlterReplicaLogDirs), crash-safe.

Kafka copies the partition into a *future* log, ``<topic>-<partition>.<id>-future`` in the destination
directory, lets its ReplicaAlterLogDirsThread catch that up like a follower, then swaps it in. A
``LogMove`` does the same with the log's files, while the partition keeps taking appends and serving
reads:

* **rounds**: ``plan`` (on the log's owner thread) notes what the future directory still lacks, and
  ``copy`` (on any thread) copies it and fsyncs it. A segment's ``.log``, ``.index`` and ``.timeindex``
  only grow while the ``Segment`` object lives (an append writes past the end, a roll trims an index
  to its entries), so of a segment seen before only the bytes written since are copied; one rebuilt
  meanwhile (``Segment.rewrites``) or new (a roll, DeleteRecords' reset) is copied from the start. An
  inactive segment's files no longer change: its indexes and ``.txnindex`` are copied once, whole.
  Indexes are copied up to their entries, never their preallocated tail. The caller repeats rounds
  until little is left.
* **finish** (owner thread, in one step, so no append, read, roll or retention comes in between):
  copies the rest (the active segment's tail and ``.txnindex``, the producer snapshots,
  ``partition.metadata``), removes the files of segments that went meanwhile (retention,
  DeleteRecords), fsyncs, and swaps:

  1. the source directory is renamed ``<topic>-<partition>.<id>-delete``: the commit point;
  2. the future directory is renamed ``<topic>-<partition>``;
  3. the ``Log`` follows its files there (``Log.relocate``): the same object, so whoever holds it
     (the produce path, fetch sessions, the group coordinator) carries on; a slice being sent keeps
     the descriptor it has. The ``-delete`` directory is removed afterwards (``remove_source``).

Crash safety: every rename is fsynced in its parent and made only once what it relies on is on disk
(the future directory's files and entry before step 1). ``finish_interrupted_moves`` runs before the
logs open: a ``-future`` directory whose partition still has a live directory is an unfinished move
and is removed (the log stays where it was, and the broker begins the move again, from the start:
Kafka's future log resumes where it was, this one is copied anew); one whose partition has none was
committed and is renamed into place; ``-delete`` leftovers are removed as for topic deletions. So a crash at any
point leaves exactly one whole copy. While a move runs, the destination's checkpoint files list the
partition too (``LogMoves.moving_into``) and are written before the commit, so its log start offset,
recovery point and cleaner offset are found there at the next start.

``LogMoves`` holds the moves in progress, one per partition (the cleaner leaves their logs alone,
as Kafka pauses cleaning), Kafka's preferred log dirs (where a partition not on the broker yet is to
be made), and the throttle the copies share: ``replica.alter.log.dirs.io.max.bytes.per.second``
(``set_rate``), the bytes moved per second, checked after every chunk; a copy sleeping off the rate
wakes at once when its move stops, and a rate of 0 holds the copies until it changes. The final step
is not throttled (it is at most what the last round left, and it holds the log).
A copy round that cannot write to the destination raises ``DestinationFailed``: the broker takes
that log dir offline, as Kafka does when its future log fails.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import attrs

from . import fileops
from .checkpoint import fsync_dir
from .config import LONG_MAX
from .errors import StorageError
from .file_names import (DELETE_SUFFIX, FUTURE_SUFFIX, INDEX, LOG, TIME_INDEX, TXN_INDEX, file_stem,
                         parse_future_dir, parse_partition_dir, partition_dir, remove_dir, set_aside_name)  # fmt: skip
from .producer_state import SNAPSHOT
from .throttle import UNLIMITED, Throttler
from .topic_store import PARTITION_METADATA

log = logging.getLogger(__name__)
CHUNK = 1 << 20  # bytes a copy reads and writes at a time; the stop flag is checked between chunks
_GROWING = (LOG, INDEX, TIME_INDEX)  # the files of a segment copied by byte ranges


class MoveStopped(Exception):
    """The move was stopped (``LogMove.stop``) while it copied."""


class DestinationFailed(StorageError):
    """Writing to the move's destination dir failed: for Kafka, that log dir has failed."""


@contextlib.contextmanager
def _destination(path: Path) -> Iterator[None]:
    try:
        yield
    except DestinationFailed:
        raise
    except OSError as exc:
        raise DestinationFailed(exc.errno, f"writing {path} failed: {exc.strerror}") from exc


@attrs.frozen
class _Job:
    """Copy ``src`` to ``dst``: bytes [start, end) (from 0: ``dst`` is made anew), or with ``end`` None
    the whole file (none if ``src`` is missing). ``segment``: whose file it is, if a segment's."""

    src: Path
    dst: Path
    start: int = 0
    end: int | None = None
    segment: Any = None


@attrs.define
class _Copied:
    """What the future directory holds of one segment."""

    segment: Any
    rewrites: int
    sizes: tuple[int, int, int]  # bytes of its .log, .index and .timeindex
    sealed: bool = False  # copied whole once it was inactive


@attrs.define
class Plan:
    jobs: list[_Job]
    copied: list[_Copied]  # what the future directory holds once the jobs are done
    end_offset: int  # the log end offset then
    size: int  # the log's bytes then

    @property
    def pending_bytes(self) -> int:
        """Bytes of the byte-range jobs (whole-file jobs are a finished segment's small files)."""
        return sum(j.end - j.start for j in self.jobs if j.end is not None)


class LogMove:
    """One partition's move to ``dest_root``; see the module docstring."""

    def __init__(self, log_: Any, dest_root: Path, throttle: Throttler | None = None) -> None:
        self.log = log_
        self.dest_root = dest_root
        self.throttle = throttle or Throttler(UNLIMITED)  # shared by the moves (LogMoves.throttle)
        self.future_dir = dest_root / f"{log_.dir.name}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"
        self._copied: dict[int, _Copied] = {}
        self.future_end_offset = 0  # what the future log holds: DescribeLogDirs' size and lag
        self.future_size = 0
        self.stopped = threading.Event()
        self.committed = False  # the source was renamed -delete: the future copy is the log
        self.doomed: Path | None = None  # the renamed source, removed by ``remove_source``

    @property
    def key(self) -> tuple[str, int]:
        return self.log.topic, self.log.partition

    def stop(self) -> None:
        """Abandon the move: a copy in progress raises ``MoveStopped`` within a chunk."""
        self.stopped.set()

    # -- rounds -----------------------------------------------------------------------

    def plan(self) -> Plan:
        """On the log's owner thread: what of the log the future directory lacks (module docstring)."""
        log_, jobs, copied = self.log, [], []
        for seg in log_.segments:
            done = self._copied.get(id(seg))
            if done is None or done.segment is not seg or done.rewrites != seg.rewrites:
                done = _Copied(seg, seg.rewrites, (0, 0, 0))
            copied.append(self._plan_segment(seg, done, jobs, seg is log_.active))
        return Plan(jobs, copied, log_.log_end_offset, log_.size_in_bytes)

    def _plan_segment(self, seg: Any, done: _Copied, jobs: list[_Job], active: bool) -> _Copied:
        if done.sealed:
            return done
        stem = file_stem(seg.base_offset)
        targets = (seg.size, *seg.index_sizes) if active else (seg.size, None, None)
        for ext, start, end in zip(_GROWING, done.sizes, targets):
            if start == 0 or end is None or end > start:
                jobs.append(_Job(seg.dir / (stem + ext), self.future_dir / (stem + ext), start, end, seg))
        if active:
            return _Copied(seg, seg.rewrites, targets)
        jobs.append(_Job(seg.dir / (stem + TXN_INDEX), self.future_dir / (stem + TXN_INDEX), segment=seg))
        return _Copied(seg, seg.rewrites, (seg.size, 0, 0), sealed=True)

    def copy(self, plan: Plan) -> None:
        """Any thread: run ``plan``'s jobs, fsynced; ``MoveStopped`` once ``stop`` was called, ``OSError``
        when the source fails, ``DestinationFailed`` when the destination does. A segment whose file went
        meanwhile is copied again if still there."""
        with _destination(self.future_dir):
            if not self.future_dir.exists():
                self.future_dir.mkdir()
                fsync_dir(self.dest_root)
        gone = set()
        for job in plan.jobs:
            if not _run(job, self.stopped, self.throttle):
                gone.add(id(job.segment))
        with _destination(self.future_dir):
            fsync_dir(self.future_dir)
        self._copied = {id(c.segment): c for c in plan.copied if id(c.segment) not in gone}
        self.future_end_offset, self.future_size = plan.end_offset, plan.size

    # -- the swap ---------------------------------------------------------------------

    def finish(self) -> None:
        """On the owner thread: copy the rest, commit and move the log over (module docstring). An
        ``OSError`` before the commit leaves the log where it was; ``committed`` tells."""
        plan = self.plan()
        active = self.log.active
        stem = file_stem(active.base_offset)
        extra = [stem + TXN_INDEX, PARTITION_METADATA]
        extra += [e.name for e in os.scandir(self.log.dir) if e.name.endswith(SNAPSHOT)]
        plan.jobs += [_Job(self.log.dir / name, self.future_dir / name) for name in extra]
        self.copy(plan)
        if len(self._copied) != len(plan.copied):
            raise StorageError(errno.EIO, f"{self.log.name}: a segment file went missing while it was moved")
        self._remove_strays({n for seg in self.log.segments for n in _names(seg)} | set(extra))
        fsync_dir(self.future_dir)
        self._commit()

    def _remove_strays(self, keep: set[str]) -> None:
        """Files of segments that went while the move ran (retention, DeleteRecords), and old snapshots."""
        for entry in os.scandir(self.future_dir):
            if entry.name not in keep:
                os.unlink(entry.path)

    def _commit(self) -> None:
        src = self.log.dir
        target = partition_dir(self.dest_root, self.log.topic, self.log.partition)
        doomed = src.with_name(set_aside_name(self.log.topic, self.log.partition, DELETE_SUFFIX))
        src.rename(doomed)  # the commit point: from here a restart keeps the future copy
        try:
            fsync_dir(src.parent)
            self.future_dir.rename(target)
        except OSError:
            self._undo_commit(src, doomed)
            raise
        self.committed, self.doomed = True, doomed
        self.log.relocate(target)
        try:
            fsync_dir(self.dest_root)
        except OSError as exc:  # renamed all the same; a restart renames a future copy it finds again
            log.error("%s: fsync of %s after the move failed: %s", self.log.name, self.dest_root, exc)
        log.info("%s: moved from %s to %s", self.log.name, src.parent, self.dest_root)

    def _undo_commit(self, src: Path, doomed: Path) -> None:
        try:
            doomed.rename(src)
            fsync_dir(src.parent)
        except OSError as exc:  # the future copy is whole and is the one a restart keeps: use it now
            log.error("%s: could not undo the move's first rename (%s); carrying on in %s", self.log.name, exc,
                      self.future_dir)  # fmt: skip
            self.committed, self.doomed = True, doomed
            self.log.relocate(self.future_dir)

    def abandon(self) -> None:
        """Any thread: remove the future copy of a move that did not commit; the log stays where it is."""
        if not self.committed:
            remove_dir(self.future_dir)

    def remove_source(self) -> None:
        """Any thread: remove the source directory of a committed move (renamed ``-delete``)."""
        if self.doomed is not None:
            remove_dir(self.doomed)


def _names(seg: Any) -> list[str]:
    stem = file_stem(seg.base_offset)
    return [stem + ext for ext in (*_GROWING, TXN_INDEX)]


def _run(job: _Job, stopped: threading.Event, throttle: Throttler) -> bool:
    """Run one job (keeping the source's modification time); False when a source with bytes to copy is gone."""
    try:
        src = os.open(job.src, os.O_RDONLY)
    except FileNotFoundError:  # as the source has it: no file (an index never written, no aborted transaction)
        job.dst.unlink(missing_ok=True)
        return not job.end
    try:
        stat = os.fstat(src)
        end = stat.st_size if job.end is None else job.end
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if job.start == 0 else 0)
        with _destination(job.dst):
            dst = fileops.open_file(job.dst, flags)
        try:
            _copy_range(src, dst, job.dst, job.start, end, stopped, throttle)
            with _destination(job.dst):
                fileops.fsync(dst)
        finally:
            os.close(dst)
    finally:
        os.close(src)
    os.utime(job.dst, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return True


def _copy_range(src: int, dst: int, dst_path: Path, start: int, end: int, stopped: threading.Event,
                throttle: Throttler) -> None:  # fmt: skip
    position = start
    while position < end:
        while throttle.rate == 0 and not stopped.wait(0.1):  # a rate of 0 holds the copy until it changes
            pass
        if stopped.is_set():
            raise MoveStopped()
        data = os.pread(src, min(CHUNK, end - position), position)
        if not data:
            raise StorageError(errno.EIO, f"the source ended at {position}, before {end}")
        with _destination(dst_path):
            fileops.write_all(dst, data, position)
        position += len(data)
        throttle.maybe_throttle(len(data), sleep=stopped.wait)  # bytes moved, as Kafka's quota counts them


class LogMoves:
    """The moves in progress (one per partition) and the preferred log dirs of partitions yet to be made."""

    def __init__(self) -> None:
        self._moves: dict[tuple[str, int], LogMove] = {}
        self.preferred: dict[tuple[str, int], Path] = {}
        # replica.alter.log.dirs.io.max.bytes.per.second, set by the broker; checked at every chunk (a move
        # may take less than the cleaner's 300 ms between checks)
        self.throttle = Throttler(UNLIMITED, check_interval_ms=0)

    def set_rate(self, bytes_per_second: int) -> None:
        """``replica.alter.log.dirs.io.max.bytes.per.second`` (Kafka's Long.MAX_VALUE: no limit)."""
        self.throttle.rate = UNLIMITED if bytes_per_second >= LONG_MAX else bytes_per_second

    def start(self, log_: Any, dest_root: Path) -> LogMove:
        move = self._moves[(log_.topic, log_.partition)] = LogMove(log_, dest_root, self.throttle)
        return move

    def get(self, topic: str, partition: int) -> LogMove | None:
        return self._moves.get((topic, partition))

    def all(self) -> list[LogMove]:
        return list(self._moves.values())

    def end(self, move: LogMove) -> None:
        """Forget ``move`` (stopping it if it is still copying), unless another took its place."""
        move.stop()
        if self._moves.get(move.key) is move:
            del self._moves[move.key]

    def stop_topic(self, topic: str) -> None:
        for move in [m for m in self._moves.values() if m.log.topic == topic]:
            self.end(move)

    def moving_into(self, key: tuple[str, int], root: Path) -> bool:
        move = self._moves.get(key)
        return move is not None and move.dest_root == root


def finish_interrupted_moves(dirs: list[Path], failed: Callable[[Path, OSError], None] | None = None,
                             unseen: bool = False) -> list[tuple[tuple[str, int], Path]]:  # fmt: skip
    """Before the logs open: of each partition a crash or a stop caught in a move, keep exactly one copy (see
    the module docstring). Returns the moves that had not committed, ``((topic, partition), destination)``
    each: their copies are removed, and the broker begins them again.

    ``failed(root, exc)``, if given, is told of a dir that fails to be read or changed (it goes offline),
    and the rest carry on; while a dir is offline or was never read (``unseen``), a copy whose partition
    is in no dir read is left as it is: the partition may be in the dir that could not be read."""
    live: set[tuple[str, int]] = set()
    futures: list[tuple[Path, os.DirEntry]] = []
    for root in dirs:
        try:
            entries = list(os.scandir(root))
        except OSError as exc:
            if failed is None:
                raise
            failed(root, exc)
            unseen = True
            continue
        for entry in entries:
            if entry.is_dir() and entry.name.endswith(FUTURE_SUFFIX):
                futures.append((root, entry))
            elif entry.is_dir() and (key := parse_partition_dir(entry.name)) is not None:
                live.add(key)
    unfinished: list[tuple[tuple[str, int], Path]] = []
    down: set[Path] = set()
    for root, entry in sorted(futures, key=lambda f: f[1].path):
        try:
            if root not in down:
                _finish_one(root, entry, live, unfinished, unseen)
        except OSError as exc:
            if failed is None:
                raise
            failed(root, exc)
            down.add(root)
    return unfinished


def _finish_one(root: Path, entry: os.DirEntry, live: set[tuple[str, int]],
                unfinished: list[tuple[tuple[str, int], Path]], unseen: bool) -> None:  # fmt: skip
    key = parse_future_dir(entry.name)
    if key is None:
        log.warning("%s: ignoring %s, which is not a future log directory", root, entry.name)
    elif key in live:
        log.warning("%s: removing %s, the copy of a move that did not finish; it begins again", root,
                    entry.name)  # fmt: skip
        remove_dir(Path(entry.path))
        unfinished.append((key, root))
    elif unseen:
        log.warning("%s: leaving %s as it is while a log dir is offline: its partition may be there", root,
                    entry.name)  # fmt: skip
    else:
        Path(entry.path).rename(partition_dir(root, *key))
        fsync_dir(root)
        live.add(key)
        log.warning("%s: finished the interrupted move of %s-%d here", root, *key)
