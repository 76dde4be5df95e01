"""Down-conversion sized before it is done (KIP-283), as Kafka answers Fetch v0-v3 (sans-IO).

A Fetch response states each partition's records length before the records,
so Kafka fixes that length first and converts while the socket is written
(``LazyDownConversionRecords``). ``start_down_conversion`` does the same
planning for one partition's log slice:

* the first source batches are converted at once, up to and including the
  first one that yields output (markers and empty batches yield none), so
  the client always gets at least one whole converted batch; an error there
  (zstd, a corrupt batch) is raised, and becomes the partition's error code;
* the declared ``size`` is ``max(len(slice), len(first output))``, or 0 when
  nothing yields output. Kafka declares 12 bytes when complete batches exist
  but none survives (an overflow header, which the client reports as a
  message too large, and it stays stuck at that offset); we give the offset
  after them as ``next_offset`` instead, so the broker can read on past them;
* the rest of the slice is cut into ``chunks`` of whole batches, about
  ``CHUNK_SOURCE_BYTES`` each (at least one batch), for ``convert`` to do one
  at a time, from any thread (it only reads the slice).

``SizedOutput`` then fits what is converted to the declared size, as
``LazyDownConversionRecordsSend`` does: output past the size is cut off,
even in the middle of a message (the client drops that partial message and
asks for it again), and when the output runs short, or a later chunk turns
out to be zstd or corrupt, the rest is an *overflow* entry: offset -1 and a
length larger than the bytes left, which clients also drop as partial. A
framing error after the first batches ends the chunks there (the next fetch
starts at it and reports it).
"""

from __future__ import annotations

import struct

import attrs

from ..errors import CorruptRecordError
from .batches import iter_batches, next_entry_size
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from .convert import DownConverted, down_convert
from .v2 import RECORD_BATCH_OVERHEAD

CHUNK_SOURCE_BYTES = 256 * 1024
_OVERFLOW = struct.Struct(">qi")  # offset -1, a length past the end


@attrs.define(eq=False)
class LazyDownConversion:
    """One partition's Fetch v0-v3 records: ``first`` converted, ``chunks`` still to convert."""

    size: int  # the records length the response declares
    first: DownConverted
    next_offset: int | None  # the offset after the batches ``first`` was made from (None: no complete batch)
    chunks: list  # memoryviews of whole source batches, in order
    target_magic: int
    fetch_offset: int
    max_decompressed_size: int

    def convert(self, chunk) -> DownConverted:
        """One of ``chunks`` converted; raises what ``down_convert`` raises."""
        return down_convert(
            chunk, target_magic=self.target_magic, fetch_offset=self.fetch_offset,
            max_decompressed_size=self.max_decompressed_size,
        )  # fmt: skip


def start_down_conversion(
    data, *, target_magic: int, fetch_offset: int, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> LazyDownConversion:
    """Convert the first batches of ``data`` (a log slice) and plan the rest."""
    mv = memoryview(data)
    first, pos, next_offset = DownConverted(b"", 0), 0, None
    while not first.records and (end := _entry_end(mv, pos, strict=True)) is not None:
        entry = mv[pos:end]
        first = down_convert(entry, target_magic=target_magic, fetch_offset=fetch_offset,
                             max_decompressed_size=max_decompressed_size)  # fmt: skip
        pos, next_offset = end, next(iter_batches(entry)).next_offset
    size = max(len(mv), len(first.records)) if first.records else 0
    chunks = _chunks(mv, pos)
    return LazyDownConversion(size, first, next_offset, chunks, target_magic, fetch_offset, max_decompressed_size)


def _entry_end(mv: memoryview, pos: int, *, strict: bool) -> int | None:
    """Where the complete entry at ``pos`` ends; None at a partial one (or, unless ``strict``, a bad one)."""
    try:
        size = next_entry_size(mv, pos)
    except CorruptRecordError:
        if strict:
            raise
        return None
    return None if size is None else pos + size


def _chunks(mv: memoryview, pos: int) -> list:
    chunks, start = [], pos
    while (end := _entry_end(mv, pos, strict=False)) is not None:
        if end - start > CHUNK_SOURCE_BYTES and pos > start:
            chunks.append(mv[start:pos])
            start = pos
        pos = end
    if pos > start:
        chunks.append(mv[start:pos])
    return chunks


@attrs.define
class SizedOutput:
    """Fits converted pieces to a declared length: cut past it, an overflow entry for what is left."""

    remaining: int

    def fit(self, records):
        """``records``, cut to the bytes still declared."""
        piece = records if len(records) <= self.remaining else memoryview(records)[: self.remaining]
        self.remaining -= len(piece)
        return piece

    def pad(self) -> bytes:
        """The rest of the declared length: an overflow entry (offset -1, a length past the end)."""
        if not self.remaining:
            return b""
        head = _OVERFLOW.pack(-1, max(self.remaining + 1, RECORD_BATCH_OVERHEAD))
        out = head[: self.remaining] + bytes(max(self.remaining - len(head), 0))
        self.remaining = 0
        return out
