"""Kafka's ``.txnindex``: the aborted transactions whose ABORT marker is in a segment.

One file per segment, ``<20-digit base offset>.txnindex``, created on the
first entry (most segments never get one). Each entry is 34 bytes,
big-endian, as Kafka's ``AbortedTxn``::

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

``last_offset`` is the ABORT marker's offset and entries are appended in
marker order, so last offsets only grow. ``last_stable_offset`` is the LSO
at the time of the abort (the first offset of the oldest *other* open
transaction, or the marker offset + 1), which lets a search stop early:
``collect(start, upper)`` takes the entries with ``last_offset >= start`` and
``first_offset < upper`` and reports the search complete at the first entry
whose ``last_stable_offset >= upper`` (Kafka's ``collectAbortedTxns``).

Entries are read from the file once, on first use (under a lock: the
cleaner's thread reads indexes the owner thread appends to), and kept in
memory; appends go to both. A trailing partial entry (a torn write) or an entry of
an unknown version ends what is read, and is cut off before the next append.
``truncate_to(offset)`` drops entries with ``last_offset >= offset``.
``write_txn_index`` writes a whole new file (the cleaner's
``<base>.txnindex.cleaned``).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from pathlib import Path
from typing import Iterable

import attrs

from . import fileops
from .batch_files import FileHandle
from .errors import StorageError

log = logging.getLogger(__name__)
_LOAD_LOCK = threading.Lock()  # a cleaner thread may read an index while the owner appends to it
ENTRY = struct.Struct(">hqqqq")  # version, producer id, first offset, last offset, last stable offset
VERSION = 0


@attrs.frozen
class AbortedTxn:
    """One aborted transaction: Kafka's ``AbortedTxn``."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return ENTRY.pack(VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def parse_entries(data: bytes) -> list[AbortedTxn]:
    """The whole entries of a ``.txnindex`` file's bytes, up to a torn tail or an unknown version."""
    out = []
    for pos in range(0, len(data) - ENTRY.size + 1, ENTRY.size):
        version, pid, first, last, lso = ENTRY.unpack_from(data, pos)
        if version != VERSION:
            break
        out.append(AbortedTxn(pid, first, last, lso))
    return out


class TransactionIndex:
    """The ``.txnindex`` of one segment; see the module docstring."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None
        self._handle: FileHandle | None = None  # shared with a flush on another thread

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every entry, in file order (read from the file on first use)."""
        if self._entries is None:
            with _LOAD_LOCK:
                if self._entries is None:
                    self._entries = self._read()
        return self._entries

    def _read(self) -> list[AbortedTxn]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        entries = parse_entries(data)
        if len(entries) * ENTRY.size != len(data):
            log.warning("%s: ignoring %d bytes after its %d whole entries", self.path,
                        len(data) - len(entries) * ENTRY.size, len(entries))  # fmt: skip
        return entries

    @property
    def last_offset(self) -> int | None:
        entries = self.entries
        return entries[-1].last_offset if entries else None

    def append(self, txn: AbortedTxn) -> None:
        """Add ``txn``; its last offset must be above every entry's (Kafka refuses otherwise)."""
        last = self.last_offset
        if last is not None and txn.last_offset <= last:
            raise ValueError(f"{self.path}: aborted transaction ending at {txn.last_offset} is not after {last}")
        position = len(self.entries) * ENTRY.size
        try:
            fd = self._open()
            if os.fstat(fd).st_size != position:  # a torn or unread tail: cut it first
                fileops.ftruncate(fd, position)
            fileops.write_all(fd, txn.to_bytes(), position)
        except OSError as exc:
            raise StorageError(exc.errno, f"writing {self.path} failed: {exc.strerror}") from exc
        self.entries.append(txn)

    def append_if_new(self, txn: AbortedTxn) -> bool:
        """``append`` unless an entry at or beyond ``txn.last_offset`` is there already (replay after a crash)."""
        last = self.last_offset
        if last is not None and txn.last_offset <= last:
            return False
        self.append(txn)
        return True

    def collect(self, start: int, upper: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [start, upper), and whether the search is complete (Kafka's ``collectAbortedTxns``)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= start and txn.first_offset < upper:
                found.append(txn)
            if txn.last_stable_offset >= upper:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose last offset is at or above ``offset``."""
        entries = self.entries
        keep = next((i for i, txn in enumerate(entries) if txn.last_offset >= offset), len(entries))
        if keep < len(entries):
            self._cut(keep)

    def reset(self) -> None:
        self._cut(0)

    def _cut(self, count: int) -> None:
        if self._handle is None and not self.path.exists():
            self._entries = []
            return
        try:
            fileops.ftruncate(self._open(), count * ENTRY.size)
        except OSError as exc:
            raise StorageError(exc.errno, f"truncating {self.path} failed: {exc.strerror}") from exc
        del self.entries[count:]

    def _open(self) -> int:
        if self._handle is None:
            self._handle = FileHandle(self.path, create=True)
        return self._handle.fd

    def flush(self) -> None:
        """fsync the file if open; the descriptor is held until done, so the owner may close it meanwhile."""
        handle = self._handle
        if handle is not None:
            fileops.fsync(handle.fd)

    def close(self) -> None:
        self._handle = None  # closed once a flush on another thread lets go of it too

    def relocate(self, path: Path) -> None:
        """Follow the file, copied to ``path`` (a log dir move)."""
        self.close()
        self.path = path

    def renamed(self, path: Path) -> Path | None:
        """Close, move the file (if there is one) to ``path`` and follow it; returns ``path`` if a file moved."""
        self.close()
        try:
            self.path.rename(path)
        except FileNotFoundError:
            self.path = path
            return None
        self.path = path
        return path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._entries = []


def write_txn_index(path: Path, entries: Iterable[AbortedTxn]) -> bool:
    """Write ``entries`` (last offsets increasing) as a new ``.txnindex`` file at ``path``, fsynced.

    Writes nothing and returns False when there are none, as Kafka creates the file lazily.
    """
    index = TransactionIndex(path, 0)
    index.delete()
    written = False
    try:
        for txn in entries:
            index.append(txn)
            written = True
        index.flush()
    finally:
        index.close()
    return written
