"""Down-conversion sized before it is done (KIP-283), as Kafka answers Fetch v0-v3 (sans-IO).

A Fetch response states each partition's records length before the records,
so Kafka fixes that length first and converts while the socket is written
(``LazyDownConversionRecords``). ``start_down_conversion`` does the same
planning for one partition's log slice, a ``Source`` that is read on demand
(the broker's ``LogSlice`` reads its segment file; ``BytesSource`` wraps bytes):

* the first source batches are converted at once, up to and including the
  first one that yields output (markers and empty batches yield none), so
  the client always gets at least one whole converted batch; an error there
  (zstd, a corrupt batch) is raised, and becomes the partition's error code;
* the declared ``size`` is ``max(len(slice), len(first output))``, or 0 when
  nothing yields output. Kafka declares 12 bytes when complete batches exist
  but none survives (an overflow header, which the client reports as a
  message too large, and it stays stuck at that offset); we give the offset
  after them as ``next_offset`` instead, so the broker can read on past them;
* only those first batches are read; ``iter_chunks`` reads the rest when it
  is asked for, as chunks of whole batches of about ``CHUNK_SOURCE_BYTES``
  (a larger batch whole), and ``fitted_pieces`` converts them in turn, the
  next ``CHUNKS_AHEAD`` begun while the one before is sent. So a fetch holds
  a few chunks of source and of output in memory, not the slice.

``SizedOutput`` then fits what is converted to the declared size, as
``LazyDownConversionRecordsSend`` does: output past the size is cut off,
even in the middle of a message (the client drops that partial message and
asks for it again), and when the output runs short, or a later chunk turns
out to be zstd or corrupt, the rest is an *overflow* entry: offset -1 and a
length larger than the bytes left, which clients also drop as partial. A
framing error after the first batches ends the chunks there (the next fetch
starts at it and reports it).

Read-ahead (the broker's ``read_ahead``): once an answer is sent whole,
``resume_offset`` says where the client's next fetch will land (the first
offset of the first entry it did not get whole, from the per-entry output
lengths of ``DownConverted``), so the broker can plan that slice and
``begin_ahead`` its first chunks before the fetch comes; the fetch's own
conversion then ``adopt``s them when it is of the same bytes.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol

import attrs

from ..errors import CorruptRecordError, KafkaProtocolError
from .batches import HEADER_SIZE_UP_TO_MAGIC, iter_batches, next_entry_size
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from .convert import DownConverted, down_convert, start_down_convert
from .v2 import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatchView

CHUNK_SOURCE_BYTES = 1024 * 1024
CHUNKS_AHEAD = 2  # chunks being converted while the one before them is sent
_OVERFLOW = struct.Struct(">qi")  # offset -1, a length past the end
_SIZE = struct.Struct(">i")


class Source(Protocol):
    """A log slice: ``size`` bytes, read on demand (a storage ``LogSlice`` reads its file)."""

    size: int

    def read_at(self, position: int, size: int) -> bytes | memoryview: ...  # fewer bytes at the slice's end


@attrs.frozen
class BytesSource:
    """A slice already in memory."""

    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def read_at(self, position: int, size: int) -> memoryview:
        return memoryview(self.data)[position : position + size]


@attrs.define(eq=False)
class LazyDownConversion:
    """One partition's Fetch v0-v3 records: ``first`` converted, the rest read and converted on demand."""

    size: int  # the records length the response declares
    first: DownConverted
    next_offset: int | None  # the offset after the batches ``first`` was made from (None: no complete batch)
    source: Source
    position: int  # where the batches after ``first`` start in the source
    target_magic: int
    fetch_offset: int
    max_decompressed_size: int
    ahead: _Ahead | None = None  # chunks begun before the answer is sent (``begin_ahead``, ``adopt``)
    resume_offset: int | None = None  # once sent whole: where the client fetches next (``fitted_pieces``)

    def begin_ahead(self) -> None:
        """Begin the first chunks now, before the answer is sent (a read-ahead); ``fitted_pieces``
        goes on with them."""
        if self.ahead is None:
            self.ahead = _Ahead(self)
            self.ahead.begin(self.size - len(self.first.records))

    def adopt(self, other: LazyDownConversion) -> bool:
        """Take over the chunks ``other`` began, when the caller knows it converts the same source
        bytes (the same file region) and its first batches end where ours do. Those chunks hold only
        records past our first batches, which the fetch offset does not change."""
        same = (other.position, other.target_magic, other.max_decompressed_size) == (
            self.position, self.target_magic, self.max_decompressed_size)  # fmt: skip
        if other.ahead is None or self.ahead is not None or not same:
            return False
        self.ahead, other.ahead = other.ahead, None
        self.ahead.conversion = self
        return True

    def iter_chunks(self) -> Iterator[memoryview]:
        """The whole batches after ``first``, read about ``CHUNK_SOURCE_BYTES`` at a time (an entry
        that is larger, whole), ending at a partial or malformed entry."""
        pos = self.position
        while pos < self.source.size:
            window = memoryview(self.source.read_at(pos, CHUNK_SOURCE_BYTES))
            end = _complete_prefix(window)
            if not end:
                entry = _entry_at(self.source, pos, strict=False)
                if entry is None:
                    return
                window, end = entry, len(entry)
            yield window[:end]
            pos += end

    def start(self, chunk) -> Callable[[], DownConverted]:
        """One chunk's conversion begun (``start_down_convert``): the call returned gives it."""
        return start_down_convert(
            chunk, target_magic=self.target_magic, fetch_offset=self.fetch_offset,
            max_decompressed_size=self.max_decompressed_size,
        )  # fmt: skip


def fitted_pieces(conversion: LazyDownConversion) -> Iterator[tuple[bytes | memoryview, int]]:
    """The partition's records value as ``(piece, records converted in it)``, ``conversion.size`` bytes in all.

    ``first``, then each chunk converted and fitted, then the overflow entry, if any. Up to
    ``CHUNKS_AHEAD`` chunks are begun before the piece ahead of them is handed out, so the
    accelerator's helper thread converts their batches while the caller sends that piece and
    reads the next chunk. A chunk is begun only while what is left of the size exceeds the source
    bytes already begun (converted output is rarely smaller than its source), and none after one
    that fails.
    """
    out, ahead = SizedOutput(conversion.size), conversion.ahead or _Ahead(conversion)
    conversion.ahead = None
    item: tuple | None = (conversion.first, None)  # (converted, its source chunk; None: the first batches)
    while item is not None:
        converted, source = item
        sent = min(len(converted.records), out.remaining)
        piece = out.fit(converted.records)
        ahead.begin(out.remaining)
        yield piece, converted.converted_count
        item = ahead.end() if out.remaining else None
    conversion.resume_offset = _resume_offset(conversion, converted, source, sent)
    if out.remaining:
        yield out.pad(), 0


def _resume_offset(conversion: LazyDownConversion, converted: DownConverted, source, sent: int) -> int | None:
    """Where a client that got ``sent`` bytes of the last piece fetches next, as far as the slice it
    will get goes: in the first entry it did not get whole, or after the last one it did (a run of
    entries without output, markers, just before counts as not got, unless the client got a message
    of the entry after them whole). None when that is in this
    fetch's first batches (it asks for them again) or in a legacy entry (whose first offset is
    inside its compressed messages)."""
    if source is None:
        return conversion.next_offset if sent == len(converted.records) else None
    done, after, empty_from = 0, None, None
    for view, length in zip(iter_batches(source), converted.entry_lengths):
        v2 = isinstance(view, RecordBatchView)
        if done + length > sent:
            if empty_from is not None and not _got_a_message(converted.records, done, sent):
                return empty_from
            return view.base_offset if v2 else None
        done, after = done + length, view.next_offset
        if length:
            empty_from = None
        elif empty_from is None:
            empty_from = view.base_offset if v2 else after
    return empty_from if empty_from is not None else after


def _got_a_message(records, start: int, sent: int) -> bool:
    """Whether the client got the first message written from ``start`` whole (its 12-byte offset and
    size prefix, then the message), i.e. resumes inside that entry rather than before it."""
    if sent - start < 12:
        return False
    return sent - start >= 12 + int.from_bytes(records[start + 8 : start + 12], "big", signed=True)


@attrs.define
class _Ahead:
    """The chunks begun and not yet ended, oldest first: ``(the call that ends it, the chunk)``."""

    conversion: LazyDownConversion
    chunks: Iterator[memoryview] | None = None  # None once they ended, or one failed to begin
    begun: deque = attrs.Factory(deque)

    def __attrs_post_init__(self) -> None:
        self.chunks = self.conversion.iter_chunks()

    def begin(self, remaining: int) -> None:
        while self.chunks is not None and len(self.begun) < CHUNKS_AHEAD:
            if remaining <= sum(len(chunk) for _, chunk in self.begun):
                return
            chunk = next(self.chunks, None)
            if chunk is None:
                self.chunks = None
                return
            try:
                self.begun.append((self.conversion.start(chunk), chunk))
            except KafkaProtocolError:  # the chunks end here: the next fetch starts at it and reports it
                self.chunks = None

    def end(self) -> tuple[DownConverted, memoryview] | None:
        """The oldest begun chunk converted, and its source; None when none is begun, or it failed (then
        no later one counts)."""
        if not self.begun:
            return None
        end, chunk = self.begun.popleft()
        try:
            return end(), chunk
        except KafkaProtocolError:
            self.begun.clear()
            self.chunks = None
            return None


def start_down_conversion(
    source: Source, *, target_magic: int, fetch_offset: int,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> LazyDownConversion:  # fmt: skip
    """Convert the first batches of ``source`` (a log slice) and plan the rest; reads only those batches."""
    first, pos, next_offset = DownConverted(b"", 0), 0, None
    while not first.records and (entry := _entry_at(source, pos, strict=True)) is not None:
        first = down_convert(entry, target_magic=target_magic, fetch_offset=fetch_offset,
                             max_decompressed_size=max_decompressed_size)  # fmt: skip
        pos, next_offset = pos + len(entry), next(iter_batches(entry)).next_offset
    size = max(source.size, len(first.records)) if first.records else 0
    return LazyDownConversion(size, first, next_offset, source, pos, target_magic, fetch_offset,
                              max_decompressed_size)  # fmt: skip


def _entry_at(source: Source, pos: int, *, strict: bool) -> memoryview | None:
    """The complete entry at ``pos``, read whole; None at a partial one (or, unless ``strict``, a bad one)."""
    head = memoryview(source.read_at(pos, HEADER_SIZE_UP_TO_MAGIC))
    try:
        next_entry_size(head)  # the framing checks; the entry itself is not in ``head``
    except CorruptRecordError:
        if strict:
            raise
        return None
    if len(head) < HEADER_SIZE_UP_TO_MAGIC:
        return None
    total = LOG_OVERHEAD + _SIZE.unpack_from(head, 8)[0]
    return memoryview(source.read_at(pos, total)) if pos + total <= source.size else None


def _complete_prefix(window: memoryview) -> int:
    """How far the complete, well-framed entries at the start of ``window`` reach."""
    pos = 0
    try:
        while (size := next_entry_size(window, pos)) is not None:
            pos += size
    except CorruptRecordError:
        pass
    return pos


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
