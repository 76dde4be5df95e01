"""Checking runs of same-shaped v2 records column-wise, with C-speed ``bytes`` operations.

Producers mostly send records of one shape: the same key and value sizes,
no headers, and timestamp and offset deltas of the same varint width. Such a
run of ``m`` records of ``L`` bytes each is a table with ``L`` columns, and
``data[pos + j : pos + m * L : L]`` is column ``j`` as one ``bytes``. If every
record repeats the first one's length varint, key and value length varints
and its header count 0, and its timestamp and offset delta varints have the
same continuation bits, then every record parses exactly like the first, so
the full decoder would accept it. ``record_layout`` describes the first
record (``None`` when it is not of a shape handled here), ``check_run``
finds how many records from there keep that shape (``translate`` + ``find``
per column) and returns their timestamp range, null keys and whether their
offset deltas are their indexes. Records after a run are left to the scalar
loop in ``scan``, which finds any error at exactly the record the decoder
would.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

from ..errors import InvalidRecordError
from .varint import ZIGZAG14, read_varint_slow

WINDOW = 1024  # records per check: bounds the work wasted when a run ends early
# Callers alternate run attempts with scalar chunks of records that double while runs stay short:
FIRST_CHUNK, LAST_CHUNK = 16, 4096
# A 2-byte varint (b0 >= 0x80, b1 < 0x80) read as the native 16-bit int b0 | b1 << 8, decoded.
_ZZ2 = tuple(ZIGZAG14[(u & 0x7F) | ((u >> 8) << 7)] for u in range(1 << 15))
_ORDER1 = bytes(ZIGZAG14[b] + 64 for b in range(128)) + bytes(128)  # 1-byte zigzag -> order-keeping byte
_HIGH = bytes(b >> 7 for b in range(256))  # 1 where the continuation bit is set
_LOW = bytes(1 - (b >> 7) for b in range(256))  # 1 where it is clear
_ABOVE = tuple(bytes(int(b > t) for b in range(256)) for t in range(128))  # 1 where a byte exceeds t
_BELOW = tuple(bytes(int(b < t) for b in range(256)) for t in range(128))
NOT_BYTE = tuple(bytes(int(b != t) for b in range(256)) for t in range(256))  # 1 where a byte is not t
_SEQ1 = bytes(2 * k for k in range(64))  # offset delta k as a 1-byte varint
_SEQ2 = (bytes((2 * k & 0x7F) | 0x80 for k in range(8192)), bytes(2 * k >> 7 for k in range(8192)))
_LITTLE = sys.byteorder == "little"


class Layout(NamedTuple):
    """Where the fields of a record of one shape sit (offsets from the record's first byte)."""

    size: int  # bytes per record, length varint included
    fixed: tuple[tuple[int, int], ...]  # (offset, byte) that every record of the run repeats
    ts_at: int
    ts_width: int  # 1 or 2
    delta_at: int
    delta_width: int  # 1, 2 or 3
    null_key: bool


def _width(data: bytes, pos: int, most: int) -> int:
    """Bytes of the varint at ``pos`` if at most ``most``, else 0."""
    for w in range(1, most + 1):
        if data[pos + w - 1] < 0x80:
            return w
    return 0


def record_layout(data: bytes, pos: int) -> Layout | None:
    """The shape of the (valid, header-less) record at ``pos``, or None."""
    try:
        return _layout(data, pos)
    except (IndexError, InvalidRecordError):
        return None


def _layout(data: bytes, pos: int) -> Layout | None:
    length, p = read_varint_slow(data, pos)
    stop = p + length
    if length < 1 or stop > len(data):
        return None
    fixed = [(j, data[pos + j]) for j in range(p - pos)]
    ts_width = _width(data, p + 1, 2)
    delta_at = p + 1 + ts_width
    delta_width = _width(data, delta_at, 3)
    if not ts_width or not delta_width:
        return None
    q = delta_at + delta_width
    key_len, q2 = read_varint_slow(data, q)
    fixed += [(j - pos, data[j]) for j in range(q, q2)]
    q = q2 + max(key_len, 0)
    value_len, q2 = read_varint_slow(data, q)
    fixed += [(j - pos, data[j]) for j in range(q, q2)]
    q = q2 + max(value_len, 0)
    if q != stop - 1 or data[q] != 0:
        return None
    fixed.append((q - pos, 0))
    return Layout(stop - pos, tuple(fixed), p + 1 - pos, ts_width, delta_at - pos, delta_width, key_len < 0)


def shrink(column: bytes, table: bytes, good: int) -> int:
    """``good`` or the index of the first byte of ``column`` that ``table`` maps to 1, if smaller."""
    bad = column[:good].translate(table).find(1)
    return good if bad < 0 else bad


def good_records(data: bytes, pos: int, m: int, layout: Layout) -> int:
    """How many of the ``m`` records from ``pos`` keep ``layout`` (at least 1: the first has it)."""
    size, lim = layout.size, pos + m * layout.size
    good = m
    for j, byte in layout.fixed:
        column = data[pos + j : lim : size]
        if column.count(byte) != m:
            good = shrink(column, NOT_BYTE[byte], good)
    for at, width in ((layout.ts_at, layout.ts_width), (layout.delta_at, layout.delta_width)):
        for k in range(width):
            good = shrink(data[pos + at + k : lim : size], _LOW if k < width - 1 else _HIGH, good)
    return good


def _ts_range(data: bytes, pos: int, lim: int, layout: Layout) -> tuple[int, int]:
    at, size = pos + layout.ts_at, layout.size
    if layout.ts_width == 1:  # timestamps mostly grow: try the last (first) record as the max (min)
        keys = data[at:lim:size].translate(_ORDER1)
        low, high = keys[0], keys[-1]
        if keys.translate(_ABOVE[high]).find(1) >= 0:
            high = max(keys)
        if keys.translate(_BELOW[low]).find(1) >= 0:
            low = min(keys)
        return low - 64, high - 64
    values = column_values(data, at, lim, size, 2)
    return min(values), max(values)


def column_values(data: bytes, at: int, lim: int, size: int, width: int) -> list[int]:
    """The zigzag varints of ``width`` 1 or 2 at ``at``, ``at + size``, ... below ``lim``, decoded."""
    first = data[at:lim:size]
    if width == 1:
        return list(map(ZIGZAG14.__getitem__, first))
    second = data[at + 1 : lim : size]
    pairs = bytearray(2 * len(first))
    pairs[0::2], pairs[1::2] = (first, second) if _LITTLE else (second, first)
    return list(map(_ZZ2.__getitem__, memoryview(pairs).cast("H")))


def _in_order(data: bytes, pos: int, lim: int, index: int, layout: Layout) -> bool:
    """Whether the offset deltas of the run are ``index, index + 1, ...``."""
    at, size, n = pos + layout.delta_at, layout.size, (lim - pos) // layout.size
    if layout.delta_width == 1:
        return data[at:lim:size] == _SEQ1[index : index + n]
    if layout.delta_width == 2:
        return data[at:lim:size] == _SEQ2[0][index : index + n] and data[at + 1 : lim : size] == _SEQ2[1][
            index : index + n]  # fmt: skip
    if index + n > 1 << 20:  # a 3-byte varint holds deltas below 2**20 only
        return False
    wanted = range(index, index + n)
    return (data[at:lim:size] == bytes((2 * k & 0x7F) | 0x80 for k in wanted)
            and data[at + 1 : lim : size] == bytes((2 * k >> 7 & 0x7F) | 0x80 for k in wanted)
            and data[at + 2 : lim : size] == bytes(2 * k >> 14 for k in wanted))  # fmt: skip


def check_run(data: bytes, pos: int, index: int, left: int, layout: Layout) -> tuple[int, int, int, int, bool]:
    """``(records, min ts delta, max ts delta, null keys, in order)`` of the run at ``pos`` (record ``index``)."""
    m = min(left, (len(data) - pos) // layout.size, WINDOW)
    good = good_records(data, pos, m, layout)
    lim = pos + good * layout.size
    low, high = _ts_range(data, pos, lim, layout)
    return good, low, high, good if layout.null_key else 0, _in_order(data, pos, lim, index, layout)
