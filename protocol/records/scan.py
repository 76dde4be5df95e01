"""Checking v2 records for Produce without decoding them: ``scan_v2_records``.

Kafka's LogValidator iterates every record of a client batch, so every
parsing failure of the full decoder (``_v2_records._decode_loop``) must be
found here too, with the same ``InvalidRecordError`` and message. What the
broker then needs per record is small: the timestamp (for ``maxTimestamp``
and the timestamp bounds), whether offset deltas run 0, 1, 2 ..., whether the
key is null (compacted topics) and whether a record carries the KIP-87
tombstone header. ``scan_v2_records`` walks the records with the decoder's
exact varint and bounds logic but builds no key, value or header objects: key
and value lengths are only skipped over, and a header key is compared with
the tombstone header name only when their lengths match.

Runs of same-shaped records (the common case: one producer, fixed sizes, no
headers) are checked column-wise by ``_scan_runs`` at C speed; the scalar loop
here takes every record no run covers, so the first bad record is always met
by the scalar loop, which raises exactly what the decoder raises. The scalar
chunk between two run attempts doubles while runs stay short, so records of
varying shapes cost little more than the scalar loop alone.

It returns a ``V2Scan`` with the smallest and largest timestamp delta, the
number of null keys, whether the offset deltas run 0..n-1 and the indexes of
records to flag as tombstones.

When the C accelerator is built and on (``_accel``, ``_downconvert_runs``)
its ``scan`` (``_cscan.c``) does all of this first, reading the records in
place (a memoryview of the request is not copied); it answers None for
anything unusual, and then the Python scan below runs and raises the error.

``summarize_rows`` is the same summary for decoded rows (a legacy set being
up-converted): the accelerator's ``scan_rows`` (``_cencode.c``) for rows
without headers, None otherwise, so the caller looks at each row itself.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InvalidRecordError
from . import _downconvert_runs
from ._accel import BUILT_SCAN, BUILT_SCAN_ROWS
from ._scan_runs import FIRST_CHUNK, LAST_CHUNK, check_run, record_layout
from .varint import ZIGZAG14, read_varint_slow, read_varlong_slow

_LONG_RUN = 16  # a run at least this long is worth trying again right after it


class V2Scan(NamedTuple):
    """What ``scan_v2_records`` found in one batch's records."""

    min_ts_delta: int
    max_ts_delta: int
    null_keys: int
    in_order: bool  # every offset delta equals the record's index
    flag: list[int]  # records carrying the tombstone header without attributes bit 0


class RowsSummary(NamedTuple):
    """What ``summarize_rows`` found in a list of rows without headers."""

    min_timestamp: int  # the smallest timestamp (-1 without rows)
    max_timestamp: int  # the largest timestamp, or -1 if all are below it
    in_order: bool  # every row's offset equals its index
    null_keys: int


def summarize_rows(rows: list) -> RowsSummary | None:
    """The summary of ``(offset, timestamp, key, value, headers, attributes)`` rows from the accelerator,
    or None when it is off or a row has headers or fields it does not take (the caller then reads each)."""
    c_scan = _downconvert_runs.accelerated(BUILT_SCAN_ROWS)
    if c_scan is None or not isinstance(rows, list):
        return None
    found = c_scan(rows)
    return None if found is None else RowsSummary(*found)


def tombstone_key(name: str) -> bytes | None:
    """The header key bytes the decoder would turn into ``name`` (None: no header can match)."""
    if not name:
        return None
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None


def scan_v2_records(data: bytes, count: int, header_key: bytes | None = None) -> V2Scan:
    """Validate ``count`` records in ``data`` as the full decoder does, without building them."""
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count}")
    if (c_scan := _downconvert_runs.accelerated(BUILT_SCAN)) is not None:
        found = c_scan(data, count, header_key)
        if found is not None:
            return V2Scan(*found)
    data = bytes(data)  # the loops below index and slice it
    try:
        return _scan(data, count, header_key)
    except IndexError:
        raise InvalidRecordError("buffer underflow while reading a record") from None


def _scan(data: bytes, count: int, header_key: bytes | None) -> V2Scan:
    pos, i, chunk = 0, 0, FIRST_CHUNK
    low, high, null_keys, in_order = 1 << 64, -(1 << 64), 0, True
    flag: list[int] = []
    while i < count:
        layout = record_layout(data, pos)
        if layout is not None:
            n, lo, hi, nulls, ordered = check_run(data, pos, i, count - i, layout)
            pos, i = pos + n * layout.size, i + n
            low, high, null_keys, in_order = min(low, lo), max(high, hi), null_keys + nulls, in_order and ordered
            if n >= _LONG_RUN:
                chunk = FIRST_CHUNK
                continue
        stop = min(i + chunk, count)
        pos, lo, hi, nulls, ordered = _scan_loop(data, pos, i, stop, header_key, flag)
        low, high, null_keys, in_order = min(low, lo), max(high, hi), null_keys + nulls, in_order and ordered
        i, chunk = stop, min(2 * chunk, LAST_CHUNK)
    if pos != len(data):
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return V2Scan(low, high, null_keys, in_order, flag)


def _scan_loop(data: bytes, pos: int, first: int, last: int, header_key: bytes | None, flag: list[int]):  # noqa: C901
    """Records ``first``..``last - 1`` from ``pos``: ``(next pos, min ts delta, max ts delta, null keys, in order)``."""
    # Mirrors _decode_loop field by field (same inline varint cases, same checks, same messages).
    end = len(data)
    zz, slow_int = ZIGZAG14, read_varint_slow
    lo, hi = 1 << 64, -(1 << 64)
    null_keys, unordered = 0, -1
    for i in range(first, last):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            length = zz[(b & 0x7F) | (c << 7)]
            pos += 2
        else:
            length, pos = slow_int(data, pos)
        stop = pos + length
        if length < 1 or stop > end:
            raise InvalidRecordError(f"Invalid record size {length}: only {end - pos} bytes remaining")
        attr_pos = pos
        b = data[pos + 1]
        if b < 0x80:
            ts = zz[b]
            pos += 2
        elif (c := data[pos + 2]) < 0x80:
            ts = zz[(b & 0x7F) | (c << 7)]
            pos += 3
        elif (d := data[pos + 3]) < 0x80:
            u = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
            ts = (u >> 1) ^ -(u & 1)
            pos += 4
        else:
            ts, pos = read_varlong_slow(data, pos + 1)
        if ts > hi:
            hi = ts
        if ts < lo:
            lo = ts
        b = data[pos]
        if b < 0x80:
            delta = zz[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            delta = zz[(b & 0x7F) | (c << 7)]
            pos += 2
        else:
            delta, pos = _offset_delta(data, pos, b, c)
        if delta != i and unordered < 0:
            unordered = i
        b = data[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            n = zz[(b & 0x7F) | (c << 7)]
            pos += 2
        else:
            n, pos = slow_int(data, pos)
        if n >= 0:
            pos += n
        else:
            null_keys += 1
        b = data[pos]
        if b < 0x80:
            n = zz[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            n = zz[(b & 0x7F) | (c << 7)]
            pos += 2
        else:
            n, pos = slow_int(data, pos)
        if n >= 0:
            pos += n
        if data[pos] == 0:
            pos += 1
        else:
            n, pos = slow_int(data, pos)
            if n < 0 or n > stop - pos:
                raise InvalidRecordError(f"Found invalid number of record headers {n}")
            pos, found = _skip_headers(data, pos, n, header_key)
            if found and not data[attr_pos] & 1:
                flag.append(i)
        if pos != stop:
            raise InvalidRecordError(f"Invalid record size: expected {length} bytes, read {length + pos - stop}")
    return pos, lo, hi, null_keys, unordered < 0


def _offset_delta(data: bytes, pos: int, b: int, c: int) -> tuple[int, int]:
    """A 3+ byte offset delta varint (first bytes ``b``, ``c``), decoded as ``_decode_loop`` does."""
    if (d := data[pos + 2]) < 0x80:
        u = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
        return (u >> 1) ^ -(u & 1), pos + 3
    return read_varint_slow(data, pos)


def _skip_headers(data: bytes, pos: int, count: int, wanted: bytes | None) -> tuple[int, bool]:
    """Walk ``count`` headers as ``_decode_headers`` does; ``(next_pos, whether a key equals wanted)``."""
    found = False
    size = -1 if wanted is None else len(wanted)
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            klen, pos = read_varint_slow(data, pos)
        if klen < 0:
            raise InvalidRecordError("Invalid negative header key size")
        if klen == size and not found:
            found = data[pos : pos + klen] == wanted
        pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            vlen, pos = read_varint_slow(data, pos)
        if vlen >= 0:
            pos += vlen
    return pos, found
