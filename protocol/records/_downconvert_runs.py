"""Down-conversion of runs of same-shaped v2 records: ``emit_records`` drives it.

Most batches are runs of records of one shape (``_scan_runs``): the same key
and value lengths, no headers, offset and timestamp deltas of one varint
width. In such a run every field sits at the same place in every record, so
the offset and timestamp deltas are read column-wise at C speed
(``column_values``) and each legacy message is two ``struct`` packs (its body
with the key in one format, then its prefix) and two CRC-32 calls, with the
value passed on as a ``memoryview`` slice. A run qualifies when its records
are plain (as ``_scan_runs`` checks), have attributes 0 (no KIP-87 flag) and a
non-null value, and its deltas are 1 or 2 bytes wide; every other record goes
through the scalar loop of ``_downconvert`` in chunks that double while runs
stay short, as ``scan`` does, so the output is the scalar loop's byte for
byte and a malformed record is met by the scalar loop.

All of this is the reference and the fallback: when the C accelerator is
built (``_accel``; it is optional) ``emit_records`` hands it the whole payload
first, and only when it declines (anything unusual, so the error comes from
here) or is switched off (``set_accelerated(False)``; the broker does that for
``MINIBROKER_PURE_PYTHON=1``) do the loops below run. Both give the same
bytes; the tests run both.
"""

from __future__ import annotations

import struct

from ._accel import BUILT_EMIT
from ._accel import crc32 as _crc32
from ._downconvert import emit_messages
from ._scan_runs import FIRST_CHUNK, LAST_CHUNK, NOT_BYTE, Layout, column_values, good_records, record_layout, shrink
from .varint import java_long, read_varint_slow

_PREFIX_CRC = struct.Struct(">qiI")  # offset, size, crc
_MIN_RUN = 8  # records: a shorter run is left to the scalar loop

C_EMIT = BUILT_EMIT


def accelerated(built):
    """``built`` (a C entry point from ``_accel``, or None) while the accelerator is on, else None."""
    return built if C_EMIT is not None else None


def set_accelerated(enabled: bool) -> bool:
    """Use the C accelerator (if it was built) or not; returns whether it is in use now."""
    global C_EMIT
    C_EMIT = BUILT_EMIT if enabled else None
    return C_EMIT is not None


def emit_records(
    parts: list, data: bytes, count: int, bases: tuple[int, int, int | None], magic: int, attributes: int,
    fetch_offset: int, shift: int,
) -> tuple[int, int, int, bool]:  # fmt: skip
    """``emit_messages`` over the whole records payload, runs taken column-wise.

    Returns ``(messages, last offset written, max timestamp written, every record plain)``;
    raises ``IndexError`` when the records do not fit the data.
    """
    if C_EMIT is not None:
        done = C_EMIT(data, count, *bases, magic, attributes, fetch_offset, shift)
        if done is not None:
            parts.append(done[0])
            return done[1:]
    data = bytes(data)  # the loops below slice and compare; a memoryview of the log would be copied per record
    pos, i, chunk = 0, 0, FIRST_CHUNK
    written, last, max_ts, plain = 0, -1, -(1 << 64), True
    args = (bases, magic, attributes, fetch_offset, shift)
    while i < count:
        run = _run_at(data, pos, count - i)
        if run is not None:
            layout, n, fields = run
            w, lst, mts = _emit_run(parts, data, pos, n, layout, fields, *args)
            pos, i, chunk = pos + n * layout.size, i + n, FIRST_CHUNK
        else:
            n = min(chunk, count - i)
            pos, w, lst, mts, ok = emit_messages(parts, data, pos, n, *args)
            i, chunk, plain = i + n, min(2 * chunk, LAST_CHUNK), plain and ok
        if w:
            written, last, max_ts = written + w, lst, max(max_ts, mts)
    if pos != len(data):
        raise IndexError("data left after the last record")
    return written, last, max_ts, plain


def _run_at(data: bytes, pos: int, left: int) -> tuple[Layout, int, tuple[int, int, int, int]] | None:
    """The layout, length and key/value fields of a qualifying run at ``pos`` of at least ``_MIN_RUN``
    records, or None."""
    if left < _MIN_RUN:
        return None
    layout = record_layout(data, pos)
    if layout is None or layout.ts_width > 2 or layout.delta_width > 2:
        return None
    fields = _key_value(data, pos, layout)
    if fields[2] < 0:  # null values: tombstones, left to the scalar loop
        return None
    m = min(left, (len(data) - pos) // layout.size)
    good = good_records(data, pos, m, layout)
    attributes_at = layout.ts_at - 1
    good = shrink(data[pos + attributes_at : pos + good * layout.size : layout.size], NOT_BYTE[0], good)
    return (layout, good, fields) if good >= _MIN_RUN else None


def _key_value(data: bytes, pos: int, layout: Layout) -> tuple[int, int, int, int]:
    """``(key length, key offset, value length, value offset)`` of the record at ``pos`` (offsets from ``pos``)."""
    key_len, key_at = read_varint_slow(data, pos + layout.delta_at + layout.delta_width)
    value_len, value_at = read_varint_slow(data, key_at + max(key_len, 0))
    return key_len, key_at - pos, value_len, value_at - pos


def _emit_run(
    parts: list, data: bytes, pos: int, n: int, layout: Layout, fields: tuple[int, int, int, int],
    bases: tuple[int, int, int | None], magic: int, attributes: int, fetch_offset: int, shift: int,
) -> tuple[int, int, int]:  # fmt: skip
    """The messages of ``n`` records of ``layout`` from ``pos``: ``(messages, last offset, max timestamp)``."""
    base_offset, base_ts, append_time = bases
    size, lim = layout.size, pos + n * layout.size
    deltas = column_values(data, pos + layout.delta_at, lim, size, layout.delta_width)
    stamps = column_values(data, pos + layout.ts_at, lim, size, layout.ts_width)
    key_len, key_at, value_len, value_at = fields
    body = struct.Struct(f">bbqi{max(key_len, 0)}si" if magic else f">bbi{max(key_len, 0)}si")
    pack_body, pack_prefix, crc32, mv = body.pack, _PREFIX_CRC.pack, _crc32, memoryview(data)
    message_size, key_end = 4 + body.size + value_len, key_at + max(key_len, 0)
    written, last, max_ts = 0, -1, -(1 << 64)
    for k in range(n):
        offset = base_offset + deltas[k]
        if offset < fetch_offset:
            continue
        ts = java_long(base_ts + stamps[k]) if append_time is None else append_time
        at = pos + k * size
        key = data[at + key_at : at + key_end]
        head = pack_body(1, attributes, ts, key_len, key, value_len) if magic else pack_body(
            0, attributes, key_len, key, value_len)  # fmt: skip
        value = mv[at + value_at : at + value_at + value_len]
        parts += (pack_prefix(offset - shift, message_size, crc32(value, crc32(head))), head, value)
        written, last = written + 1, offset
        if ts > max_ts:
            max_ts = ts
    return written, last, max_ts
