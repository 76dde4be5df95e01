"""Zigzag varints and varlongs as used inside v2 records (protobuf encoding).

A signed value ``n`` is first zigzag-mapped to an unsigned one
(``(n << 1) ^ (n >> 31)``, ``>> 63`` for a varlong) so small negative numbers
stay short, then written as base-128 little-endian groups with 0x80 as the
continuation bit. Kafka limits a varint to 5 bytes and a varlong to 10: if the
continuation bit is still set in the last allowed byte the value is "too long"
(``InvalidRecordError``). Like Java's ``int``/``long`` arithmetic, decoded bits
beyond 32 (64) are dropped before un-zigzagging.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; writers append to
a ``bytearray``. The one-byte case is the common one, so every reader tries it
first. These are *not* the unsigned varints of flexible protocol versions.

``java_long`` wraps a Python int to 64 bits as Java's ``long`` arithmetic
does: a v2 record's timestamp is ``baseTimestamp + timestampDelta`` in that
arithmetic, so every sum (and every delta written back) goes through it.
"""

from __future__ import annotations

from ..errors import InvalidRecordError
from ..primitives import INT64_MAX, INT64_MIN

VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def java_long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (wrapping past Long.MIN/Long.MAX)."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    return (value - INT64_MIN) % (1 << 64) + INT64_MIN


def _read_unsigned(buf, pos: int, max_bytes: int, mask: int) -> tuple[int, int]:
    """Read the raw unsigned group value starting at ``pos``; bounds-checked."""
    result = 0
    shift = 0
    end = len(buf)
    for i in range(max_bytes):
        if pos >= end:
            raise InvalidRecordError("buffer underflow while reading a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & mask, pos
        shift += 7
    kind = "Varint" if max_bytes == VARINT_MAX_BYTES else "Varlong"
    raise InvalidRecordError(f"{kind} is too long, the most significant bit in byte {max_bytes} is set")


def read_varint_slow(buf, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint (any length up to 5 bytes)."""
    u, pos = _read_unsigned(buf, pos, VARINT_MAX_BYTES, _MASK32)
    return (u >> 1) ^ -(u & 1), pos


def read_varlong_slow(buf, pos: int) -> tuple[int, int]:
    """Decode a zigzag varlong (any length up to 10 bytes)."""
    u, pos = _read_unsigned(buf, pos, VARLONG_MAX_BYTES, _MASK64)
    return (u >> 1) ^ -(u & 1), pos


# Zigzag decode of every 1- and 2-byte varint payload (14 bits), shared by the hot record loops
# (``_v2_records``, ``skim``, ``scan``, ``_downconvert``): a tuple index is cheaper in CPython than
# the shift/xor/negate arithmetic.
ZIGZAG14 = tuple((u >> 1) ^ -(u & 1) for u in range(1 << 14))


def read_varint_fast(buf, pos: int) -> tuple[int, int]:
    """``read_varint_slow`` with the 1- and 2-byte cases table-driven (callers bound-check by IndexError)."""
    b = buf[pos]
    if b < 0x80:
        return ZIGZAG14[b], pos + 1
    if (c := buf[pos + 1]) < 0x80:
        return ZIGZAG14[(b & 0x7F) | (c << 7)], pos + 2
    return read_varint_slow(buf, pos)


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varint at ``pos``; returns ``(value, next_pos)``."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    return read_varint_slow(buf, pos)


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varlong at ``pos``; returns ``(value, next_pos)``."""
    if 0 <= pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    return read_varlong_slow(buf, pos)


def _write_unsigned(out: bytearray, u: int) -> None:
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def write_varint(out: bytearray, n: int) -> None:
    """Append ``n`` (int32 range) as a zigzag varint."""
    if -64 <= n < 64:
        out.append(((n << 1) ^ (n >> 31)) & 0xFF)
        return
    if not _INT32_MIN <= n <= _INT32_MAX:
        raise InvalidRecordError(f"varint value out of int32 range: {n}")
    _write_unsigned(out, ((n << 1) ^ (n >> 31)) & _MASK32)


def write_varlong(out: bytearray, n: int) -> None:
    """Append ``n`` (int64 range) as a zigzag varlong."""
    if -64 <= n < 64:
        out.append(((n << 1) ^ (n >> 63)) & 0xFF)
        return
    if not INT64_MIN <= n <= INT64_MAX:
        raise InvalidRecordError(f"varlong value out of int64 range: {n}")
    _write_unsigned(out, ((n << 1) ^ (n >> 63)) & _MASK64)


def encode_varint(n: int) -> bytes:
    """``n`` as zigzag varint bytes."""
    out = bytearray()
    write_varint(out, n)
    return bytes(out)


def encode_varlong(n: int) -> bytes:
    """``n`` as zigzag varlong bytes."""
    out = bytearray()
    write_varlong(out, n)
    return bytes(out)


def size_of_varint(n: int) -> int:
    """Encoded length of ``n`` as a zigzag varint."""
    u = ((n << 1) ^ (n >> 31)) & _MASK32
    return max(1, (u.bit_length() + 6) // 7)


def size_of_varlong(n: int) -> int:
    """Encoded length of ``n`` as a zigzag varlong."""
    u = ((n << 1) ^ (n >> 63)) & _MASK64
    return max(1, (u.bit_length() + 6) // 7)
