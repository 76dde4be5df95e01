"""Walking a buffer of concatenated log entries of any magic.

Every entry starts with ``offset int64 | size int32`` and has its magic at byte
16, so ``iter_batches`` reads those 17 bytes, applies Kafka's framing checks
(``ByteBufferLogInputStream``) and yields a ``RecordBatchView`` (magic 2) or
``LegacyBatchView`` (magic 0/1) over exactly that entry's bytes. Checks, in
Kafka's order: ``size < 14`` or ``size > max_batch_size`` -> CorruptRecordError;
fewer than 17 bytes left -> stop; magic outside 0..2 -> CorruptRecordError;
entry incomplete -> stop. A partial trailing entry is therefore never an
error: iteration just ends, and ``valid_bytes`` tells how far complete entries
reach (Kafka trims the rest on produce).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..errors import CorruptRecordError
from .legacy import LegacyBatchView
from .v2 import LOG_OVERHEAD, MAGIC_OFFSET, RECORD_BATCH_OVERHEAD, RecordBatchView, as_byte_view

HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1  # 17
MIN_ENTRY_SIZE = 14  # the smallest v0 message
_PREFIX = struct.Struct(">qi")

Batch = RecordBatchView | LegacyBatchView


def peek_magic(buffer, pos: int = 0) -> int | None:
    """The magic byte of the entry at ``pos``, or None if fewer than 17 bytes remain."""
    if pos < 0 or len(buffer) - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    return buffer[pos + MAGIC_OFFSET]


def is_single_v2_batch(buffer) -> bool:
    """Is ``buffer`` (a flat byte buffer) exactly one complete v2 batch by its prefix alone: magic 2, a
    length field that reaches exactly the buffer's end, and room for the 61-byte header? Then
    ``iter_batches`` yields that one batch and nothing else, without raising (the common Produce shape;
    the CRC and the records are not looked at)."""
    n = len(buffer)
    if n < RECORD_BATCH_OVERHEAD or buffer[MAGIC_OFFSET] != 2:
        return False
    return _PREFIX.unpack_from(buffer, 0)[1] + LOG_OVERHEAD == n


def next_entry_size(buffer, pos: int = 0, *, max_batch_size: int | None = None) -> int | None:
    """Total size (with the 12-byte prefix) of the complete entry at ``pos``, or None if partial."""
    remaining = len(buffer) - pos
    if remaining < LOG_OVERHEAD:
        return None
    size = _PREFIX.unpack_from(buffer, pos)[1]
    if size < MIN_ENTRY_SIZE:
        raise CorruptRecordError(f"Record size {size} is less than the minimum record overhead (14)")
    if max_batch_size is not None and size > max_batch_size:
        raise CorruptRecordError(f"Record size {size} exceeds the largest allowable message size ({max_batch_size})")
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic = buffer[pos + MAGIC_OFFSET]
    if magic > 2:  # bytes are unsigned, so a negative int8 magic is > 127 here
        raise CorruptRecordError(f"Invalid magic found in record: {magic if magic < 128 else magic - 256}")
    total = size + LOG_OVERHEAD
    return total if remaining >= total else None


def iter_batches(buffer, *, max_batch_size: int | None = None) -> Iterator[Batch]:
    """Yield a view for each complete entry in ``buffer`` (a memoryview or bytes-like)."""
    mv = as_byte_view(buffer)
    pos = 0
    while True:
        total = next_entry_size(mv, pos, max_batch_size=max_batch_size)
        if total is None:
            return
        entry = mv[pos : pos + total]
        if mv[pos + MAGIC_OFFSET] == 2:
            yield RecordBatchView(entry)
        else:
            yield LegacyBatchView(entry)
        pos += total


def valid_bytes(buffer, *, max_batch_size: int | None = None) -> int:
    """Length of the prefix of ``buffer`` made of complete entries (framing checks only)."""
    mv = as_byte_view(buffer)
    pos = 0
    while (total := next_entry_size(mv, pos, max_batch_size=max_batch_size)) is not None:
        pos += total
    return pos
