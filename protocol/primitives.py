"""Wire primitives of the Kafka protocol: a bounds-checked reader and writers.

``Reader`` walks a memoryview with a cursor. Every read checks the bytes left
first, so a short buffer or a lying length raises ``InvalidRequestError``
instead of ``struct.error``/``IndexError``, and no length is trusted before it
is compared with what is really there (a 2 GiB "string" in a 20-byte frame is
refused, not allocated).

Writers append ``bytes`` pieces to a list; the codec joins them once. Flexible
versions use *unsigned* varints (compact lengths are ``len + 1``, 0 = null);
they are a different encoding from the zigzag varints inside record batches.

Reads follow Kafka's generated readers where bad bytes are concerned: a
5-byte unsigned varint keeps only 32 bits (a Java int, so it may come out
negative), any negative length of a nullable field (not only -1) is null, a
compact string over 0x7fff bytes is refused, and a string
that is not UTF-8 decodes with U+FFFD in place of the bad bytes, as Java's
``new String(bytes, UTF_8)`` does, rather than failing the request. Writes
refuse a string over 0x7fff bytes, classic or compact (``StringTooLongError``),
as Kafka's generated writers do.
"""

from __future__ import annotations

import struct
import uuid

from .errors import InvalidRequestError, StringTooLongError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # Java's Long range: offsets, timestamps, config "LONG"s
MAX_STRING_BYTES = 0x7FFF  # the longest string field Kafka reads, compact ones included


def java_int(n: int) -> int:
    """``n`` wrapped to 32 bits and read as a signed Java int."""
    return ((n + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


class Reader:
    """A cursor over a buffer; all reads are bounds-checked."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = data if isinstance(data, memoryview) else memoryview(data)
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise InvalidRequestError(f"need {n} bytes at {p}, {self.end - p} left")
        self.pos = p + n
        return p

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._take(1))[0]

    def int16(self) -> int:
        return _I16.unpack_from(self.buf, self._take(2))[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack_from(self.buf, self._take(4))[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._take(8))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._take(8))[0]

    def boolean(self) -> bool:
        return self.buf[self._take(1)] != 0

    def uuid(self) -> uuid.UUID:
        p = self._take(16)
        return uuid.UUID(bytes=bytes(self.buf[p : p + 16]))

    def uvarint(self) -> int:
        """Unsigned varint (flexible versions), at most 5 bytes, read into a Java int as Kafka's
        ``readUnsignedVarint`` does: bits past the 32nd are dropped and the top bit is the sign."""
        result = 0
        for shift in range(0, 35, 7):
            b = self.buf[self._take(1)]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result if shift < 28 else java_int(result)  # only a 5th byte can pass 31 bits
        raise InvalidRequestError("unsigned varint longer than 5 bytes")

    def compact_length(self) -> int:
        """A compact length or count (the uvarint less one, in Java's int arithmetic); -1 means null."""
        n = self.uvarint() - 1
        return n if n >= -(1 << 31) else n + (1 << 32)  # only Integer.MIN_VALUE - 1 wraps

    def view(self, n: int) -> memoryview:
        p = self._take(n)
        return self.buf[p : p + n]

    def length(self, compact: bool, nullable: bool, wide: bool = False) -> int | None:
        """A length prefix: int16/int32 (``wide``) or compact uvarint; a negative one means null."""
        if compact:
            n = self.compact_length()
        else:
            n = self.int32() if wide else self.int16()
        if n < 0:  # Kafka's readers take any negative length of a nullable field as null
            if nullable:
                return None
            raise InvalidRequestError(f"negative length {n} for a non-nullable field")
        if n > self.remaining:
            raise InvalidRequestError(f"length {n} exceeds the {self.remaining} bytes left")
        return n

    def string(self, compact: bool, nullable: bool) -> str | None:
        """A string field. As Kafka's generated readers: a compact one over 0x7fff bytes is refused, and
        bytes that are not UTF-8 decode to U+FFFD (Java's ``new String(bytes, UTF_8)``), not an error."""
        n = self.length(compact, nullable)
        if n is None:
            return None
        if n > MAX_STRING_BYTES:
            raise InvalidRequestError(f"string field had invalid length {n}")
        return str(self.view(n), "utf-8", "replace")

    def bytes_(self, compact: bool, nullable: bool) -> bytes | None:
        n = self.length(compact, nullable, wide=True)
        return None if n is None else bytes(self.view(n))

    def records(self, compact: bool, nullable: bool) -> memoryview | None:
        n = self.length(compact, nullable, wide=True)
        return None if n is None else self.view(n)


def w_int8(out: list, v: int) -> None:
    out.append(_I8.pack(v))


def w_int16(out: list, v: int) -> None:
    out.append(_I16.pack(v))


def w_uint16(out: list, v: int) -> None:
    out.append(_U16.pack(v))


def w_int32(out: list, v: int) -> None:
    out.append(_I32.pack(v))


def w_uint32(out: list, v: int) -> None:
    out.append(_U32.pack(v))


def w_int64(out: list, v: int) -> None:
    out.append(_I64.pack(v))


def w_float64(out: list, v: float) -> None:
    out.append(_F64.pack(v))


def w_bool(out: list, v: bool) -> None:
    out.append(b"\x01" if v else b"\x00")


def w_uuid(out: list, v: uuid.UUID) -> None:
    out.append(v.bytes)


def uvarint_bytes(n: int) -> bytes:
    if n < 0:
        raise ValueError("unsigned varint cannot be negative")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def w_uvarint(out: list, n: int) -> None:
    out.append(uvarint_bytes(n))


def w_length(out: list, n: int | None, compact: bool, wide: bool = False) -> None:
    """Write a length prefix; ``None`` writes the null marker."""
    if compact:
        out.append(uvarint_bytes(0 if n is None else n + 1))
    elif wide:
        out.append(_I32.pack(-1 if n is None else n))
    else:
        out.append(_I16.pack(-1 if n is None else n))


def w_string(out: list, v: str | None, compact: bool) -> None:
    if v is None:
        w_length(out, None, compact)
        return
    data = v.encode("utf-8")
    if len(data) > MAX_STRING_BYTES:
        raise StringTooLongError(f"a string of {len(data)} bytes is too long to be serialized")
    w_length(out, len(data), compact)
    out.append(data)


def w_bytes(out: list, v: bytes | None, compact: bool) -> None:
    """Bytes and records: int32 length (or compact). Records may be any sized buffer-like object."""
    if v is None:
        w_length(out, None, compact, wide=True)
        return
    w_length(out, len(v), compact, wide=True)
    out.append(v)
