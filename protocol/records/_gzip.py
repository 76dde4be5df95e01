"""gzip record data read the way Kafka reads it: the JDK's ``GZIPInputStream``.

Kafka's ``GzipCompression.wrapForInput`` reads a batch's records through a
``GZIPInputStream`` with an 8 KiB input buffer over the record bytes, and its
record iterators read until the stream ends. That stream:

* parses each member's header itself (magic ``1f 8b``, method 8, the FEXTRA,
  FNAME, FCOMMENT and FHCRC parts; the reserved flag bits are not looked at),
  inflates raw deflate data and checks the trailer (CRC-32 and length);
* after a member, tries to read a next member's header only when bytes are
  left in the underlying stream (beyond what its buffer already holds) or more
  than 26 bytes (8 of trailer + 18) are left in its buffer; a header that then
  fails to read (bad magic or method, a wrong header CRC, too few bytes) ends
  the stream quietly, so whatever follows is never looked at. A member whose
  header did read must be whole and sound, like the first.

So the buffer's fill positions are part of the behaviour: ``_Fills`` follows
them (the inflater asks for a refill of up to 8 KiB only once it has used all
it was given; the trailer and headers are read past the buffer byte by byte).
That is the ``readTrailer`` of JDK 17 and 21, which Kafka's images run; JDK
23 (JDK-7036144) tries whatever bytes are left, which differs only for at
most 18 bytes after a member that begin with a gzip header (no client sends
those).
Output stays bounded by ``max_size`` (``CorruptRecordError``, our limit);
unreadable data is ``CompressedStreamError``.
"""

from __future__ import annotations

import zlib

from ..errors import CompressedStreamError, CorruptRecordError

_JDK_BUFFER = 8 * 1024  # the input buffer size GzipCompression gives GZIPInputStream
_FIRST_WINDOW = _JDK_BUFFER  # input handed to the inflater at first (``_inflate``)
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16


def _header_end(data: bytes, pos: int) -> int:
    """Where the member header at ``pos`` ends; ``ValueError`` where the JDK's readHeader throws."""
    if data[pos : pos + 2] != b"\x1f\x8b" or data[pos + 2 : pos + 3] != b"\x08" or len(data) < pos + 10:
        raise ValueError("not a gzip header")
    flg, end = data[pos + 3], pos + 10
    if flg & _FEXTRA:
        if len(data) < end + 2:
            raise ValueError("cut short")
        end += 2 + int.from_bytes(data[end : end + 2], "little")
    for bit in (_FNAME, _FCOMMENT):
        if flg & bit:
            zero = data.find(b"\x00", end)
            if zero < 0:
                raise ValueError("cut short")
            end = zero + 1
    if flg & _FHCRC:
        if len(data) < end + 2 or int.from_bytes(data[end : end + 2], "little") != zlib.crc32(data[pos:end]) & 0xFFFF:
            raise ValueError("bad header CRC")
        end += 2
    if end > len(data):
        raise ValueError("cut short")
    return end


class _Fills:
    """How far the JDK stream has pulled bytes from the record data (``pulled``)."""

    def __init__(self, pulled: int, size: int) -> None:
        self.pulled, self.size = pulled, size

    def inflated_to(self, end: int) -> int:
        """The deflate data ended at ``end``: refill in 8 KiB steps up to it; the bytes left in the buffer."""
        if end > self.pulled:
            self.pulled = min(self.size, self.pulled + -(-(end - self.pulled) // _JDK_BUFFER) * _JDK_BUFFER)
        return self.pulled - end

    def read_to(self, end: int) -> None:
        """Bytes up to ``end`` were read (the trailer, a header), past the buffer if need be."""
        self.pulled = max(self.pulled, end)


def _inflate(data: bytes, pos: int, budget: int) -> tuple[bytes, int]:
    """The raw deflate data at ``pos`` inflated (at most ``budget`` bytes), and where it ended.

    The input goes in windows that double from ``_FIRST_WINDOW``: zlib copies what follows the end of the
    deflate data into ``unused_data``, and handing it all the rest of the batch each time made a batch of
    many tiny members cost time quadratic in its size (2.6 s for 2 MB of empty members)."""
    d, view = zlib.decompressobj(-zlib.MAX_WBITS), memoryview(data)
    parts, total, at, window = [], 0, pos, _FIRST_WINDOW
    try:
        while not d.eof and at < len(data):
            piece = view[at : at + window]
            parts.append(d.decompress(piece, budget + 1 - total))  # all of piece taken unless past the budget
            total += len(parts[-1])
            if total > budget:
                raise CorruptRecordError("gzip data decompresses to more than the allowed size")
            at, window = at + len(piece), 2 * window
    except zlib.error as exc:
        raise CompressedStreamError(f"invalid gzip data: {exc}") from None
    if not d.eof:
        raise CompressedStreamError("gzip stream truncated")
    return b"".join(parts), at - len(d.unused_data)


def _member(data: bytes, pos: int, budget: int) -> tuple[bytes, int]:
    """Inflate the deflate data at ``pos`` and check the trailer; the output and where the deflate data ended."""
    out, end = _inflate(data, pos, budget)
    trailer = data[end : end + 8]
    if len(trailer) < 8:
        raise CompressedStreamError("gzip trailer truncated")
    if trailer != (zlib.crc32(out).to_bytes(4, "little") + (len(out) & 0xFFFFFFFF).to_bytes(4, "little")):
        raise CompressedStreamError("corrupt gzip trailer")
    return out, end


def gunzip(data, max_size: int) -> bytes:
    """All the members Kafka's gzip stream reads from ``data``, at most ``max_size`` bytes of output."""
    data = bytes(data)
    try:
        pos = _header_end(data, 0)
    except ValueError as exc:
        raise CompressedStreamError(f"invalid gzip header: {exc}") from None
    fills, out, total = _Fills(pos, len(data)), [], 0
    while True:
        chunk, end = _member(data, pos, max_size - total)
        out.append(chunk)
        total += len(chunk)
        in_buffer = fills.inflated_to(end)
        fills.read_to(end + 8)
        if not (len(data) > fills.pulled or in_buffer > 26):
            break
        try:
            pos = _header_end(data, end + 8)
        except ValueError:
            break
        fills.read_to(pos)
    return out[0] if len(out) == 1 else b"".join(out)
