"""One log segment: ``<base>.log`` with its ``.index``, ``.timeindex`` and ``.txnindex`` (Kafka's LogSegment).

The ``.log`` file holds whole batches back to back; every append is written at
the segment's known size with ``pwrite``, so a failed write (disk full,
read-only file system) is cut back off and never leaves a torn batch behind a
later one. Index entries are written as Kafka's ``LogSegment.append`` does:
when more than ``index.interval.bytes`` were appended since the last entry,
one entry maps the *last* offset of the records being appended to the
position where they start (so the first append never makes one), and the
time index gets the largest timestamp so far if it grew.

Lazy by design, so that a clean open of thousands of segments costs one
``stat`` each: the file is opened, and the indexes read (tail walked from the
last index entry to find the next offset), on first use. A missing or corrupt
index, a tail that ends short of the file, or a time index naming an offset
past the last batch (the file was cut between batches) is rebuilt by ``recover``, which walks every batch
(``segment_recovery.py``), checks its size and CRC, rebuilds both indexes
and truncates the file at the first invalid batch. The ``.txnindex``
(``txn_index.py``, aborted transactions whose marker is here) exists only
once an entry is written; it is flushed, cut (entries at or past the end
after a recovery or truncation), renamed and deleted with the other files.

The file descriptor lives in a ``FileHandle`` (``batch_files.py``) shared with ``LogSlice`` objects
and closed when the last holder drops it, so a segment that is deleted or
closed while a slice of it is being sent (``sendfile``) or fsynced from the
group-commit thread stays readable. Not otherwise thread-safe: the owning
``Log`` serialises appends, reads and rolls. ``relocate`` follows the files
to another directory after a log dir move copied them; ``rewrites`` counts
the rebuilds (``recover``) that may have changed them, so a move copies them again.
Batches are found by position, offset or timestamp in ``segment_reads.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from . import fileops
from .errors import StorageError
from .batch_files import FileHandle, first_batch_max_timestamp
from .file_names import DELETED, index_path, log_path, time_index_path, txn_index_path
from .index import OffsetIndex, TimeIndex
from .segment_reads import SegmentReads
from .segment_recovery import scan_valid
from .txn_index import TransactionIndex

log = logging.getLogger(__name__)
_UNKNOWN = object()
_LOAD_LOCK = threading.RLock()


class Segment(SegmentReads):
    """A segment of a partition log; see the module docstring."""

    def __init__(self, directory: Path, base_offset: int, config: Any, created_ms: int, *, size: int) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.config = config
        self.created_ms = created_ms
        self.made_in_this_run = False  # True for a segment ``create`` started, not one found on disk
        self.size = size
        self._path: Path | None = None
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self._txn_index: TransactionIndex | None = None
        self._handle: FileHandle | None = None
        self._loaded = False
        self._next_offset = base_offset
        self._max_ts = -1
        self._offset_of_max_ts = base_offset
        self._first_ts: Any = _UNKNOWN
        self.bytes_since_index = 0
        self.roll_jitter_ms = 0
        self.damaged = False  # bytes were found missing or invalid when it was loaded
        self.rewrites = 0

    @classmethod
    def create(cls, directory: Path, base_offset: int, config: Any, created_ms: int) -> "Segment":
        """A new empty segment (stale files of the same name are replaced)."""
        seg = cls(directory, base_offset, config, created_ms, size=0)
        try:
            for index in (seg.offset_index, seg.time_index):
                index.delete()
                index.preallocate()
            seg.txn_index.delete()  # a stale one of an earlier segment with this base
            seg._handle = FileHandle(seg.path, create=True)
            fileops.ftruncate(seg._handle.fd, 0)
        except OSError as exc:  # a StorageError from the indexes, or the .log itself
            seg.delete_files()  # the index files it opened are closed (their descriptors are plain ints)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(exc.errno, f"creating segment {seg.path} failed: {exc.strerror}") from exc
        seg._loaded = True
        seg._first_ts = None
        seg.made_in_this_run = True
        return seg

    # -- lazy state ------------------------------------------------------------

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = log_path(self.dir, self.base_offset)
        return self._path

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            path = index_path(self.dir, self.base_offset)
            self._offset_index = OffsetIndex(path, self.base_offset, self.config.segment_index_bytes)
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            path = time_index_path(self.dir, self.base_offset)
            self._time_index = TimeIndex(path, self.base_offset, self.config.segment_index_bytes)
        return self._time_index

    @property
    def txn_index(self) -> TransactionIndex:
        if self._txn_index is None:
            with _LOAD_LOCK:  # the cleaner's thread may ask at the same time as the owner's
                if self._txn_index is None:
                    self._txn_index = TransactionIndex(txn_index_path(self.dir, self.base_offset), self.base_offset)
        return self._txn_index

    @property
    def handle(self) -> FileHandle:
        if self._handle is None:
            self._handle = FileHandle(self.path)
        return self._handle

    def fileno(self) -> int:
        return self.handle.fd

    def _ensure_loaded(self) -> None:
        # The checkpoint writer (a worker thread) may be first to touch a segment while the owner
        # thread is too: one loads, the other waits, and ``_loaded`` is only set once the state is whole.
        if self._loaded:
            return
        with _LOAD_LOCK:
            if not self._loaded:
                self._load()
                self._loaded = True

    def _load(self) -> None:
        if not (self.offset_index.load(self.size) and self.time_index.load(self.size)):
            self.damaged = self.offset_index.beyond_end
            log.warning("%s: missing or corrupt index, rebuilding it", self.path)
            self._recover_on_load()
            return
        _, position = self.offset_index.last_entry()
        end = position
        for pos, last, size in self.iter_batch_headers(position):
            self._next_offset, end = last + 1, pos + size
        last_time = self.time_index.last_entry()
        if end != self.size or (last_time is not None and last_time[1] >= self._next_offset):
            # a torn tail, or a file cut between batches (its time index saw later ones)
            log.warning("%s: batches end at %d (offset %d), file at %d", self.path, end, self._next_offset, self.size)
            self.damaged = True
            self._recover_on_load()
            return
        if last_time is not None:
            self._max_ts, self._offset_of_max_ts = last_time

    def _recover_on_load(self) -> None:
        dropped = self.recover()
        if dropped:
            self.damaged = True
            log.warning("%s: dropped %d invalid bytes", self.path, dropped)

    @property
    def next_offset(self) -> int:
        self._ensure_loaded()
        return self._next_offset

    @property
    def index_sizes(self) -> tuple[int, int]:
        """Bytes of entries in the offset index and the time index (Kafka's ``sizeInBytes``)."""
        self._ensure_loaded()
        return len(self.offset_index) * OffsetIndex.ENTRY.size, len(self.time_index) * TimeIndex.ENTRY.size

    @property
    def largest_timestamp(self) -> int:
        self._ensure_loaded()
        return self._max_ts

    def largest_timestamp_or_mtime(self) -> int:
        """Kafka's ``LogSegment.largestTimestamp``: the largest record timestamp, else the ``.log`` mtime (ms)."""
        largest = self.largest_timestamp
        return largest if largest >= 0 else int(os.stat(self.path).st_mtime * 1000)

    @property
    def offset_of_largest_timestamp(self) -> int:
        self._ensure_loaded()
        return self._offset_of_max_ts

    @property
    def first_batch_timestamp(self) -> int | None:
        """Max timestamp of the first batch (drives time-based rolls); None while empty."""
        if self._first_ts is _UNKNOWN:
            self._first_ts = first_batch_max_timestamp(os.pread(self.fileno(), 43, 0)) if self.size else None
        return self._first_ts

    # -- writing ---------------------------------------------------------------

    def append(self, data, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        self._ensure_loaded()
        start, size = self.size, len(data)
        saved = (self._max_ts, self._offset_of_max_ts, self._first_ts)
        try:
            fileops.write_all(self.fileno(), data, start)
        except OSError as exc:
            self._cut_back(start)
            raise StorageError(exc.errno, f"append to {self.path} failed: {exc.strerror}") from exc
        if start == 0:
            self._first_ts = first_batch_max_timestamp(bytes(memoryview(data)[:43]))
        if max_timestamp > self._max_ts:
            self._max_ts, self._offset_of_max_ts = max_timestamp, last_offset
        if self.bytes_since_index > self.config.index_interval_bytes:
            try:
                self._add_index_entries(last_offset, start)
            except StorageError:
                self._cut_back(start)
                self._max_ts, self._offset_of_max_ts, self._first_ts = saved
                raise
            self.bytes_since_index = 0
        self.bytes_since_index += size
        self.size = start + size
        self._next_offset = last_offset + 1

    def _add_index_entries(self, last_offset: int, position: int) -> None:
        added = self.offset_index.append(last_offset, position)
        try:
            self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts)
        except StorageError:
            if added:
                self.offset_index.forget_last()
            raise

    def _cut_back(self, size: int) -> None:
        try:
            fileops.ftruncate(self.fileno(), size)
        except OSError as exc:  # the next append overwrites from ``size`` anyway
            log.error("%s: could not cut back a failed append: %s", self.path, exc)

    def index_full(self) -> bool:
        self._ensure_loaded()
        return self.offset_index.is_full() or self.time_index.is_full()

    def flush(self, *, indexes: bool = True) -> None:
        """fsync ``.log``, ``.txnindex`` and (``indexes``) changed offset/time indexes: Kafka's ``LogSegment.flush``."""
        handle = self._handle  # held until done: the owner may roll, close or delete the segment meanwhile
        try:
            if handle is not None:
                fileops.fsync(handle.fd)
            for index in (self._offset_index, self._time_index) if indexes else ():
                if index is not None:
                    index.flush()
            if self._txn_index is not None:  # always: only a replay from a snapshot rebuilds it
                self._txn_index.flush()
        except OSError as exc:
            raise StorageError(exc.errno, f"fsync of {self.path} failed: {exc.strerror}") from exc

    def on_become_inactive(self) -> None:
        """At a roll: the final time-index entry (the segment's largest timestamp), then trim."""
        self._ensure_loaded()
        try:
            self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts, skip_full_check=True)
            self.offset_index.trim()
            self.time_index.trim()
        except (OSError, StorageError) as exc:  # indexes are rebuilt on the next load
            log.error("%s: could not finish its indexes: %s", self.path, exc)

    # -- recovery --------------------------------------------------------------

    def recover(self, max_batch_size: int | None = None) -> int:
        """Rebuild indexes and offsets by walking every batch; truncate at the first invalid one.

        Returns the number of bytes truncated (0 when the file was whole).
        """
        self.rewrites += 1
        self.offset_index.reset()
        self.time_index.reset()
        self._first_ts, self.bytes_since_index = _UNKNOWN, 0
        self.size = os.fstat(self.fileno()).st_size
        valid, scan = scan_valid(self, max_batch_size)
        self._next_offset, self._max_ts, self._offset_of_max_ts = scan.next_offset, scan.max_ts, scan.offset_of_max_ts
        truncated = self.size - valid
        if truncated:
            fileops.ftruncate(self.fileno(), valid)
            self.size = valid
        self.txn_index.truncate_to(self._next_offset)
        self.time_index.maybe_append(self._max_ts, self._offset_of_max_ts, skip_full_check=True)
        _, last_position = self.offset_index.last_entry()
        self.bytes_since_index = self.size - last_position
        self._first_ts = _UNKNOWN
        self._loaded = True
        return truncated

    # -- file management -------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Cut the segment at the batch holding ``offset``; returns the bytes removed."""
        position = self.find_position(offset)
        if position is None:
            return 0
        removed = self.size - position
        fileops.ftruncate(self.fileno(), position)
        self.recover()
        return removed

    def close(self) -> None:
        if self._loaded:
            self.on_become_inactive()
        if self._offset_index is not None:
            self._offset_index.close()
        if self._time_index is not None:
            self._time_index.close()
        if self._txn_index is not None:
            self._txn_index.close()
        self._handle = None

    def relocate(self, directory: Path) -> None:
        """Follow the files, copied to ``directory``: descriptors reopen there on next use (a slice being
        sent keeps its own), loaded index entries stay in memory."""
        self._handle = None
        self.dir, self._path = directory, None
        for index in (self._offset_index, self._time_index, self._txn_index):
            if index is not None:
                index.relocate(directory / index.path.name)

    def rename_to_deleted(self) -> list[Path]:
        """Give the segment's files the ``.deleted`` suffix; open slices keep reading."""
        self.offset_index.close()
        self.time_index.close()
        self._handle = None
        renamed = []
        for path in (self.path, self.offset_index.path, self.time_index.path):
            target = path.with_name(path.name + DELETED)
            try:
                path.rename(target)
                renamed.append(target)
            except FileNotFoundError:
                pass
        txn = self.txn_index.renamed(self.txn_index.path.with_name(self.txn_index.path.name + DELETED))
        return renamed + ([txn] if txn is not None else [])

    def delete_files(self) -> None:
        self._handle = None
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.path.unlink(missing_ok=True)
