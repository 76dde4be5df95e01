"""Skimming v2 records: offsets, keys and the tombstone test without decoding values or headers.

The cleaner needs, per record, only its offset delta, its key, whether it is
a tombstone (``is_tombstone``'s rule: a null value, or attributes bit 0) and
where its bytes are, so that a kept record can be copied into a rebuilt batch
as it is. ``skim_v2_records(payload, count)`` returns ``(offset_delta, key,
is_tombstone, start, end)`` per record, ``start``/``end`` spanning the whole
encoded record (length prefix included). The timestamp is skipped and the
headers are never parsed: the record's length says where it ends. Malformed
input raises ``InvalidRecordError``, as the full decoder does.
``skim_v2_columns`` gives the same as three lists (deltas, keys, starts with
the tombstone in the top bit), which is what the loop builds. It works
``SLICE`` records at a time and calls ``between()`` after each slice: the
cleaner passes a callable that gives the broker's thread its turn (a batch can
hold thousands of records, milliseconds of pure Python).
"""

from __future__ import annotations

from typing import Callable

from ..errors import InvalidRecordError
from .varint import ZIGZAG14, read_varint_slow

SkimmedRecord = tuple[int, "bytes | None", bool, int, int]
TOMBSTONE_BIT = 1 << 31  # set on a start position (payloads are < 2 GiB) when the record is a tombstone
SLICE = 256


def skim_v2_records(payload: bytes, count: int, between: Callable[[], None] | None = None,
                    ) -> list[SkimmedRecord]:  # fmt: skip
    """``(offset_delta, key, is_tombstone, start, end)`` for each of the ``count`` records of ``payload``."""
    deltas, keys, starts = skim_v2_columns(payload, count, between)
    ends = [s & ~TOMBSTONE_BIT for s in starts[1:]] + [len(payload)]
    return [(d, k, s >= TOMBSTONE_BIT, s & ~TOMBSTONE_BIT, e) for d, k, s, e in zip(deltas, keys, starts, ends)]


def skim_v2_columns(payload: bytes, count: int, between: Callable[[], None] | None = None,
                    ) -> tuple[list[int], list, list[int]]:  # fmt: skip
    """The same as three lists: offset deltas, keys, and start positions with ``TOMBSTONE_BIT`` set
    for tombstones. Cheaper when the caller wants columns (the cleaner's offset map)."""
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count}")
    data = payload if isinstance(payload, bytes) else bytes(payload)
    columns: tuple[list[int], list, list[int]] = ([], [], [])
    pos = 0
    try:
        for done in range(0, count, SLICE):
            pos = _skim(data, pos, min(SLICE, count - done), columns)
            if between is not None:
                between()
    except IndexError:
        raise InvalidRecordError("buffer underflow while reading a record") from None
    if pos != len(data):
        raise InvalidRecordError(f"{len(data) - pos} bytes left after the last of {count} records")
    return columns


def _skim(data: bytes, pos: int, count: int, columns: tuple) -> int:  # noqa: C901 - one hot loop
    """Skim ``count`` records from ``pos`` onto ``columns``; returns where the next record starts."""
    add_delta, add_key, add_start = (column.append for column in columns)
    end = len(data)
    zz, slow = ZIGZAG14, read_varint_slow
    for _ in range(count):
        start = pos
        b = data[pos]
        if b < 0x80:
            length, pos = zz[b], pos + 1
        elif (c := data[pos + 1]) < 0x80:
            length, pos = zz[(b & 0x7F) | (c << 7)], pos + 2
        else:
            length, pos = slow(data, pos)
        stop = pos + length
        if length < 1 or stop > end:
            raise InvalidRecordError(f"Invalid record size {length}: only {end - pos} bytes remaining")
        attributes = data[pos]
        pos += 1
        while data[pos] >= 0x80:  # the timestamp delta, skipped (bounded by the record's length)
            pos += 1
            if pos >= stop:
                raise InvalidRecordError("timestamp delta runs past the record's length")
        b = data[pos + 1]
        if b < 0x80:
            delta, pos = zz[b], pos + 2
        elif (c := data[pos + 2]) < 0x80:
            delta, pos = zz[(b & 0x7F) | (c << 7)], pos + 3
        else:
            delta, pos = slow(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            n, pos = zz[b], pos + 1
        elif (c := data[pos + 1]) < 0x80:
            n, pos = zz[(b & 0x7F) | (c << 7)], pos + 2
        else:
            n, pos = slow(data, pos)
        key = None
        if n >= 0:
            key = data[pos : pos + n]
            pos += n
        b = data[pos]
        if b < 0x80:
            n, pos = zz[b], pos + 1
        elif (c := data[pos + 1]) < 0x80:
            n, pos = zz[(b & 0x7F) | (c << 7)], pos + 2
        else:
            n, pos = slow(data, pos)
        if pos + (n if n > 0 else 0) > stop:
            raise InvalidRecordError("record fields run past the record's length")
        add_delta(delta)
        add_key(key)
        add_start(start | TOMBSTONE_BIT if n < 0 or attributes & 1 else start)
        pos = stop
    return pos
