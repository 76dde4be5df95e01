"""One log segment: ``<base>.log`` with its ``.index`` and ``.timeindex`` (Kafka's LogSegment).

The ``.log`` file holds whole batches back to back. The offset index holds
8-byte entries ``relative offset int32, position int32``; the time index
12-byte entries ``timestamp int64, relative offset int32``. Both are sparse: an
entry is written when more than ``index.interval.bytes`` were appended since
the last one, mapping the *last* offset of the records being appended to the
position where they start (so the first append never makes one), and a time
entry only when the max timestamp so far grew. Both are also kept in memory
as sorted lists, so lookups never touch the index files.

A read finds the greatest index entry at or below the wanted offset and then
walks batch headers forward (offset, size and, for v2, lastOffsetDelta) to
the first batch whose last offset reaches the wanted one.

Not thread-safe; the owning ``Log`` serialises access (group-commit fsyncs
from another thread only call ``flush``).
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from protocol.errors import KafkaProtocolError
from protocol.records import RecordBatchView, iter_batches

from .errors import StorageError
from .file_names import index_path, log_path, time_index_path

_PREFIX = struct.Struct(">qi")  # offset, size
_V2_LAST_DELTA = struct.Struct(">i")
_V2_MAX_TS = struct.Struct(">q")
_INDEX = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
LOG_OVERHEAD = 12
SCAN_CHUNK = 1 << 20


class Segment:
    """A segment of a partition log; see the module docstring."""

    def __init__(self, directory: Path, base_offset: int, index_interval: int, created_ms: int) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval = index_interval
        self.created_ms = created_ms
        self.path = log_path(directory, base_offset)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.offsets: list[int] = []  # relative offsets of index entries
        self.positions: list[int] = []
        self.times: list[tuple[int, int]] = []  # (timestamp, relative offset)
        self.bytes_since_index = 0
        self.next_offset = base_offset
        self.largest_timestamp = -1
        self.offset_of_largest = base_offset
        self.first_batch_timestamp: int | None = None
        self.unflushed_messages = 0
        self.roll_jitter_ms = 0

    # -- writing ---------------------------------------------------------------

    def append(self, data, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        if self.bytes_since_index > self.index_interval:
            self._add_index_entry(last_offset, self.size)
        start = self.size
        try:
            view = memoryview(data)
            written = 0
            while written < len(view):
                written += os.pwrite(self._fd, view[written:], start + written)
        except OSError as exc:
            self._undo(start)
            raise StorageError(exc.errno, f"append to {self.path} failed: {exc.strerror}") from exc
        self.size = start + len(view)
        self.bytes_since_index += len(view)
        self._note_batch(first_offset, last_offset, max_timestamp)
        self.unflushed_messages += last_offset - first_offset + 1

    def _undo(self, size: int) -> None:
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            pass

    def _note_batch(self, first_offset: int, last_offset: int, max_timestamp: int) -> None:
        if self.first_batch_timestamp is None:
            self.first_batch_timestamp = max_timestamp
        if max_timestamp > self.largest_timestamp:
            self.largest_timestamp = max_timestamp
            self.offset_of_largest = last_offset
        self.next_offset = last_offset + 1

    def _add_index_entry(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if not self.offsets or rel > self.offsets[-1]:
            self.offsets.append(rel)
            self.positions.append(position)
            with open(index_path(self.dir, self.base_offset), "ab") as f:
                f.write(_INDEX.pack(rel, position))
        if self.largest_timestamp >= 0 and (not self.times or self.largest_timestamp > self.times[-1][0]):
            entry = (self.largest_timestamp, self.offset_of_largest - self.base_offset)
            self.times.append(entry)
            with open(time_index_path(self.dir, self.base_offset), "ab") as f:
                f.write(_TIME.pack(*entry))
        self.bytes_since_index = 0

    def index_full(self, index_bytes: int) -> bool:
        return (len(self.offsets) + 1) * _INDEX.size >= index_bytes or (len(self.times) + 2) * _TIME.size >= index_bytes

    def flush(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise StorageError(exc.errno, f"fsync of {self.path} failed: {exc.strerror}") from exc
        self.unflushed_messages = 0

    def on_become_inactive(self) -> None:
        """Write the final time-index entry (the segment's largest timestamp), as Kafka does at a roll."""
        if self.largest_timestamp >= 0 and (not self.times or self.largest_timestamp > self.times[-1][0]):
            entry = (self.largest_timestamp, self.offset_of_largest - self.base_offset)
            self.times.append(entry)
            with open(time_index_path(self.dir, self.base_offset), "ab") as f:
                f.write(_TIME.pack(*entry))

    # -- reading ---------------------------------------------------------------

    def fileno(self) -> int:
        return self._fd

    def pread(self, n: int, position: int) -> bytes:
        return os.pread(self._fd, n, position)

    def batch_at(self, position: int) -> tuple[int, int] | None:
        """(last offset, total size) of the batch at ``position``, or None past the end."""
        if position + 17 > self.size:
            return None
        head = os.pread(self._fd, 27, position)
        offset, size = _PREFIX.unpack_from(head, 0)
        if size < 14 or len(head) < 17:
            return None
        if head[16] == 2 and len(head) >= 27:
            offset += _V2_LAST_DELTA.unpack_from(head, 23)[0]
        return offset, size + LOG_OVERHEAD

    def find_position(self, offset: int) -> int | None:
        """Position of the first batch whose last offset >= ``offset``; None if none here."""
        i = bisect.bisect_right(self.offsets, offset - self.base_offset) - 1
        pos = self.positions[i] if i >= 0 else 0
        while pos < self.size:
            batch = self.batch_at(pos)
            if batch is None:
                return None
            if batch[0] >= offset:
                return pos
            pos += batch[1]
        return None

    def batch_end(self, position: int) -> int:
        batch = self.batch_at(position)
        return self.size if batch is None else min(position + batch[1], self.size)

    def iter_batch_headers(self, start: int = 0):
        """Yield (position, last offset, size) for each batch from ``start``."""
        pos = start
        while pos < self.size:
            batch = self.batch_at(pos)
            if batch is None:
                return
            yield pos, batch[0], batch[1]
            pos += batch[1]

    def read_views(self, start: int, end: int):
        """Batch views over [start, end) read into memory (for timestamp lookups and the cleaner)."""
        return iter_batches(memoryview(os.pread(self._fd, end - start, start)))

    # -- loading and recovery -------------------------------------------------

    def load(self, max_batch_size: int | None = None) -> int:
        """Rebuild indexes and offsets by scanning; truncate at the first invalid batch.

        Returns the number of bytes truncated (0 when the file was whole).
        """
        self.offsets, self.positions, self.times = [], [], []
        for p in (index_path(self.dir, self.base_offset), time_index_path(self.dir, self.base_offset)):
            p.unlink(missing_ok=True)
        self.bytes_since_index, self.next_offset, self.largest_timestamp = 0, self.base_offset, -1
        self.first_batch_timestamp = None
        valid = self._scan_valid(max_batch_size)
        truncated = self.size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
            self.size = valid
        return truncated

    def _scan_valid(self, max_batch_size: int | None) -> int:
        pos = 0
        while pos < self.size:
            chunk = os.pread(self._fd, min(max(SCAN_CHUNK, 0), self.size - pos), pos)
            used = 0
            try:
                for batch in iter_batches(memoryview(chunk), max_batch_size=max_batch_size):
                    if not batch.is_valid() or batch.last_offset < self.next_offset:
                        return pos + used
                    self._recover_batch(batch, pos + used)
                    used += batch.size_in_bytes
            except KafkaProtocolError:  # corrupt framing: everything from here is dropped
                return pos + used
            if used == 0:
                big = self._read_whole_batch(pos)
                if big is None:
                    return pos
                self._recover_batch(big, pos)
                used = big.size_in_bytes
            pos += used
        return pos

    def _read_whole_batch(self, pos: int):
        head = os.pread(self._fd, LOG_OVERHEAD, pos)
        if len(head) < LOG_OVERHEAD:
            return None
        size = _PREFIX.unpack(head)[1] + LOG_OVERHEAD
        if size < 26 or pos + size > self.size:
            return None
        try:
            batch = next(iter_batches(memoryview(os.pread(self._fd, size, pos))), None)
        except KafkaProtocolError:
            return None
        return batch if batch is not None and batch.is_valid() else None

    def _recover_batch(self, batch, position: int) -> None:
        if self.bytes_since_index > self.index_interval:
            self._add_index_entry(batch.last_offset, position)
        self.bytes_since_index += batch.size_in_bytes
        first = batch.base_offset if isinstance(batch, RecordBatchView) else batch.last_offset
        self._note_batch(first, batch.last_offset, batch.max_timestamp)

    def load_clean(self) -> None:
        """Open after a clean shutdown: read the index files and the tail, no full scan."""
        self.offsets, self.positions = _read_index(index_path(self.dir, self.base_offset), self.base_offset)
        self.times = _read_time_index(time_index_path(self.dir, self.base_offset))
        start = self.positions[-1] if self.positions else 0
        first = self.batch_at(0)
        if first is not None:
            head = os.pread(self._fd, 43, 0)
            self.first_batch_timestamp = _V2_MAX_TS.unpack_from(head, 35)[0] if head[16] == 2 else -1
        for pos, last, size in self.iter_batch_headers(start):
            self.next_offset = last + 1
        if self.times:
            self.largest_timestamp, rel = self.times[-1]
            self.offset_of_largest = self.base_offset + rel
        self.bytes_since_index = self.size - start

    # -- file management -------------------------------------------------------

    def truncate_to_position(self, position: int) -> None:
        os.ftruncate(self._fd, position)
        self.size = position
        self.load()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete_files(self) -> None:
        self.close()
        for p in (self.path, index_path(self.dir, self.base_offset), time_index_path(self.dir, self.base_offset)):
            p.unlink(missing_ok=True)


def _read_index(path: Path, base: int) -> tuple[list[int], list[int]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], []
    offsets, positions = [], []
    for rel, pos in _INDEX.iter_unpack(data[: len(data) - len(data) % _INDEX.size]):
        if (offsets and rel <= offsets[-1]) or rel < 0 or pos < 0:
            break
        offsets.append(rel)
        positions.append(pos)
    return offsets, positions


def _read_time_index(path: Path) -> list[tuple[int, int]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries: list[tuple[int, int]] = []
    for ts, rel in _TIME.iter_unpack(data[: len(data) - len(data) % _TIME.size]):
        if entries and ts <= entries[-1][0]:
            break
        entries.append((ts, rel))
    return entries
