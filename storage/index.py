"""Kafka's sparse segment indexes: ``.index`` (offset -> position) and ``.timeindex``.

Offset index entries are 8 bytes, ``relative offset int32, position int32``;
time index entries are 12 bytes, ``timestamp int64, relative offset int32``
(relative = offset - segment base offset, big-endian, as Kafka writes them).

Files are preallocated (a sparse ``ftruncate``) to ``segment.index.bytes``
rounded down to whole entries when the first entry is written, written entry
by entry with ``pwrite``, and trimmed to their real size when the segment
rolls or closes. ``flush`` (the segment's, at ``flush.ms``/``flush.messages``,
rolls and shutdown, as Kafka's ``LogSegment.flush``) fsyncs a file only if it
changed since the last one. A full offset index holds ``max_entries``; the time index
reserves its last slot for the final entry written when the segment becomes
inactive, so it is full one entry earlier.

Entries also live in memory as two sorted lists, loaded from the file on first
use (``load``), so lookups are a ``bisect``. ``load`` reports a missing or
corrupt file (a length that is not whole entries, entries that do not grow,
positions past the end of the ``.log``) so the segment rebuilds it; all-zero
entries at the end are the unused preallocated part of a file that was never
trimmed (an unclean stop) and are ignored.
"""

from __future__ import annotations

import bisect
import struct
from pathlib import Path

from . import fileops
from .batch_files import FileHandle
from .errors import StorageError


class _Index:
    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(max_index_bytes // self.ENTRY.size, 1)
        self.keys: list[int] = []
        self.values: list[int] = []
        self._handle: FileHandle | None = None  # shared with a flush on another thread (``flush``)
        self._preallocated = False
        self._dirty = False  # written or cut since the last fsync
        self.beyond_end = False  # the file pointed past the end of the .log (it was cut)

    def __len__(self) -> int:
        return len(self.keys)

    # -- loading -----------------------------------------------------------------

    def load(self, log_size: int) -> bool:
        """Read the entries from the file; False when it is missing or corrupt (then empty)."""
        self.keys, self.values, self.beyond_end = [], [], False
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return log_size == 0
        size = self.ENTRY.size
        if len(data) % size:
            return False
        end = len(data)
        while end >= size and not any(data[end - size : end]):
            end -= size  # never-trimmed preallocated tail
        for a, b in self.ENTRY.iter_unpack(data[:end]):
            if not self._acceptable(a, b, log_size):
                self.keys, self.values = [], []
                return False
            self._remember(a, b)
        return True

    def _acceptable(self, a: int, b: int, log_size: int) -> bool:
        raise NotImplementedError

    def _remember(self, a: int, b: int) -> None:
        raise NotImplementedError

    # -- writing -----------------------------------------------------------------

    def _write(self, a: int, b: int) -> None:
        position = len(self.keys) * self.ENTRY.size
        try:
            fd = self._open()
            if not self._preallocated:
                fileops.ftruncate(fd, self.max_entries * self.ENTRY.size)
                self._preallocated = True
            self._dirty = True
            fileops.write_all(fd, self.ENTRY.pack(a, b), position)
        except OSError as exc:
            raise StorageError(exc.errno, f"writing {self.path} failed: {exc.strerror}") from exc
        self._remember(a, b)

    def preallocate(self) -> None:
        """Create the file at its full size (sparse), as Kafka does for a new segment."""
        try:
            self._dirty = True
            fileops.ftruncate(self._open(), self.max_entries * self.ENTRY.size)
        except OSError as exc:
            raise StorageError(exc.errno, f"creating {self.path} failed: {exc.strerror}") from exc
        self._preallocated = True

    def _open(self) -> int:
        if self._handle is None:
            self._handle = FileHandle(self.path, create=True)
        return self._handle.fd

    def forget_last(self) -> None:
        """Drop the newest in-memory entry (its append failed); the file slot is overwritten later."""
        self.keys.pop()
        self.values.pop()

    def trim(self) -> None:
        """Cut a preallocated file to its entries and close it (at roll and close)."""
        if self._handle is not None:
            try:
                fileops.ftruncate(self._handle.fd, len(self.keys) * self.ENTRY.size)
            finally:
                self._handle, self._preallocated = None, False

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and on disk."""
        del self.keys[count:], self.values[count:]
        fd = self._open()
        self._dirty = True
        fileops.ftruncate(fd, count * self.ENTRY.size)
        self._preallocated = False

    def reset(self) -> None:
        self.truncate_entries(0)

    def flush(self) -> None:
        """fsync the file if it changed since the last flush (reopened if a roll's trim closed it).

        Safe on a worker thread while the owner writes, trims or closes the index: the descriptor is held
        here until the fsync is done, and an entry written meanwhile marks the index changed again."""
        if not self._dirty:
            return
        self._dirty = False
        handle = self._handle
        try:
            if handle is not None:
                fileops.fsync(handle.fd)
            else:
                fileops.fsync_if_exists(self.path)
        except BaseException:
            self._dirty = True
            raise

    def close(self) -> None:
        self.trim()

    def relocate(self, path: Path) -> None:
        """Follow the file, copied to ``path`` up to its entries (a log dir move); the old one is left as it is."""
        self._handle, self._preallocated, self.path = None, False, path

    def delete(self) -> None:
        self._handle = None
        self.path.unlink(missing_ok=True)


class OffsetIndex(_Index):
    """Sparse map from offsets to ``.log`` positions; see the module docstring."""

    ENTRY = struct.Struct(">ii")

    def _acceptable(self, rel: int, position: int, log_size: int) -> bool:
        last_rel = self.keys[-1] if self.keys else 0
        last_pos = self.values[-1] if self.values else 0
        if rel > last_rel and position >= log_size:
            self.beyond_end = True
        return rel > last_rel and last_pos < position < log_size

    def _remember(self, rel: int, position: int) -> None:
        self.keys.append(rel)
        self.values.append(position)

    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries

    def append(self, offset: int, position: int) -> bool:
        rel = offset - self.base_offset
        if self.keys and rel <= self.keys[-1] or self.is_full():
            return False
        self._write(rel, position)
        return True

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry at or below ``offset``; (base, 0) if none."""
        i = bisect.bisect_right(self.keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self.keys[i], self.values[i]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset``."""
        self.truncate_entries(bisect.bisect_left(self.keys, offset - self.base_offset))

    def last_entry(self) -> tuple[int, int]:
        if not self.keys:
            return self.base_offset, 0
        return self.base_offset + self.keys[-1], self.values[-1]


class TimeIndex(_Index):
    """Sparse map from the largest timestamp so far to the offset of its batch."""

    ENTRY = struct.Struct(">qi")

    def _acceptable(self, timestamp: int, rel: int, log_size: int) -> bool:
        last_ts = self.keys[-1] if self.keys else -1
        last_rel = self.values[-1] if self.values else 0
        return timestamp > last_ts and rel >= last_rel

    def _remember(self, timestamp: int, rel: int) -> None:
        self.keys.append(timestamp)
        self.values.append(rel)

    def is_full(self) -> bool:
        return len(self.keys) >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Append if ``timestamp`` is greater than the last entry's (the last slot is reserved)."""
        if timestamp <= (self.keys[-1] if self.keys else -1):
            return False
        if len(self.keys) >= self.max_entries or (self.is_full() and not skip_full_check):
            return False
        self._write(timestamp, offset - self.base_offset)
        return True

    def lookup(self, timestamp: int) -> int:
        """Offset of the greatest entry whose timestamp is <= ``timestamp``; the base if none."""
        i = bisect.bisect_right(self.keys, timestamp) - 1
        return self.base_offset + (self.values[i] if i >= 0 else 0)

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None for an empty index."""
        if not self.keys:
            return None
        return self.keys[-1], self.base_offset + self.values[-1]

    def truncate_to_offset(self, offset: int) -> None:
        rel = offset - self.base_offset
        count = len(self.values)
        while count and self.values[count - 1] >= rel:
            count -= 1
        self.truncate_entries(count)
