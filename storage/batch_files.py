"""Shared file handles and batch-header peeks for segment files.

``FileHandle`` owns one file descriptor and closes it when the last object
holding it (a segment, a ``LogSlice`` being sent, a flush in progress) is
garbage collected, so deleting or closing a segment never pulls a descriptor
from under a reader. ``peek_batch`` reads the first 27 bytes of the entry at a
position (offset, size, magic and, for v2, ``lastOffsetDelta``) to walk a file
batch by batch without reading records; ``first_batch_max_timestamp`` reads
the max timestamp out of the first 43 bytes of an entry. ``iter_entries``
walks a whole file entry by entry in chunked ``pread``s (the cleaner and the
KIP-724 upgrade read inactive segments this way); it holds the ``FileHandle``
for the whole walk, so a rename or close of the segment meanwhile does not
take the descriptor away.
"""

from __future__ import annotations

import os
import struct
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

from protocol.records import iter_batches

from . import fileops

LOG_OVERHEAD = 12
HEADER_PEEK = 27  # up to the v2 lastOffsetDelta
_PREFIX = struct.Struct(">qi")  # offset, size
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class FileHandle:
    """An open file descriptor closed when the last holder (segment or slice) lets go."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        try:
            self.fd = fileops.open_file(path, flags, 0o644)
        except PermissionError:
            if create:
                raise
            self.fd = os.open(path, os.O_RDONLY)  # read-only file: reads work, appends fail
        weakref.finalize(self, os.close, self.fd)


def peek_batch(fd: int, position: int, file_size: int) -> tuple[int, int] | None:
    """(last offset, total size) of the entry at ``position``; None at the end or on nonsense."""
    if position + 17 > file_size:
        return None
    head = os.pread(fd, HEADER_PEEK, position)
    if len(head) < 17:
        return None
    offset, size = _PREFIX.unpack_from(head, 0)
    if size < 14:
        return None
    if head[16] == 2 and len(head) >= HEADER_PEEK:
        offset += _INT32.unpack_from(head, 23)[0]
    return offset, size + LOG_OVERHEAD


def first_batch_max_timestamp(head: bytes) -> int:
    """Max timestamp of the entry whose first bytes are ``head`` (-1 when it has none)."""
    if len(head) < 17:
        return -1
    magic = head[16]
    if magic == 2 and len(head) >= 43:
        return _INT64.unpack_from(head, 35)[0]
    if magic == 1 and len(head) >= 26:
        return _INT64.unpack_from(head, 18)[0]
    return -1


def iter_entries(handle: FileHandle, size: int, chunk_size: int,
                 count_read: Callable[[int], None] | None = None) -> Iterator[Any]:  # fmt: skip
    """Yield a view over every whole entry of a file of ``size`` bytes, ``chunk_size`` bytes a read.

    An entry larger than the chunk is read on its own; ``count_read`` is told every byte read.
    """
    fd, pos = handle.fd, 0
    while pos < size:
        chunk = os.pread(fd, min(chunk_size, size - pos), pos)
        if count_read is not None:
            count_read(len(chunk))
        used = 0
        for view in iter_batches(memoryview(chunk)):
            used += view.size_in_bytes
            yield view
        if used == 0:
            head = peek_batch(fd, pos, size)
            whole = os.pread(fd, head[1], pos) if head is not None else b""
            if count_read is not None:
                count_read(len(whole))
            view = next(iter_batches(memoryview(whole)), None)
            if view is None:
                return
            used = view.size_in_bytes
            yield view
        pos += used
