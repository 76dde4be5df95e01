"""The hot loop of down-conversion: v2 records straight to legacy messages, without row objects.

``emit_messages`` reads the records of one v2 batch (its records payload,
decompressed if need be) and appends legacy messages to a list of parts
(joined once by the caller): per record one packed header, the key, and the
value as a ``memoryview`` slice of the payload, so values are copied once, by
the final join. The CRC-32 is chained over header and value. Headers are
skipped (the record's length says where it ends) and a tombstone (null value
or attributes bit 0, KIP-87) gets a null value.

The loop checks what the decoder checks for a record without headers (its
length fits, its fields end one byte before its end and that byte is a zero
header count) and reports whether every record was such a plain one; the
caller (``_downconvert_runs.emit_records``, which hands it the records no run
covers) checks that nothing is left after the last record. Anything else
(headers, or ``IndexError`` from running off the data) makes the caller run
``scan_v2_records``, which raises the decoder's exact error or confirms the
structure.
"""

from __future__ import annotations

import struct

from ._accel import crc32 as _crc32
from ._model import TOMBSTONE_FLAG
from .varint import ZIGZAG14, java_long, read_varint_fast, read_varint_slow, read_varlong_slow

_PREFIX_CRC = struct.Struct(">qiI")  # offset, size, crc
_HEADS = (struct.Struct(">bbi"), struct.Struct(">bbqi"))  # magic, attributes, [timestamp], key length
_INT32 = struct.Struct(">i")
_NULL = b"\xff\xff\xff\xff"
def first_offset_delta(data: bytes) -> int:
    """The offset delta of the first record of a (checked, non-empty) records payload."""
    _, pos = read_varint_fast(data, 0)
    _, pos = read_varlong_slow(data, pos + 1)
    return read_varint_fast(data, pos)[0]


def emit_messages(
    parts: list, data: bytes, pos: int, count: int, bases: tuple[int, int, int | None], magic: int,
    attributes: int, fetch_offset: int, shift: int,
) -> tuple[int, int, int, int, bool]:  # fmt: skip  # noqa: C901 - one hot loop
    """Append messages at ``offset - shift`` for the ``count`` records from ``pos`` at or past ``fetch_offset``.

    ``bases`` is ``(base_offset, base_timestamp, append_time or None)``. Returns ``(position after
    them, messages, last offset written, max timestamp written, every record plain)``; raises
    ``IndexError`` when the records do not fit the data.
    """
    base_offset, base_ts, append_time = bases
    mv, pack_prefix, pack_i32, crc32 = memoryview(data), _PREFIX_CRC.pack, _INT32.pack, _crc32
    head_struct = _HEADS[magic].pack
    written, last, max_ts, zz, plain, end = 0, -1, -(1 << 64), ZIGZAG14, True, len(data)
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length, pos = zz[b], pos + 1
        elif (c := data[pos + 1]) < 0x80:
            length, pos = zz[(b & 0x7F) | (c << 7)], pos + 2
        else:
            length, pos = read_varint_slow(data, pos)
        stop = pos + length
        if length < 1 or stop > end:
            raise IndexError("record length out of bounds")
        flags = data[pos]
        b = data[pos + 1]
        if b < 0x80:
            ts, pos = zz[b], pos + 2
        elif (c := data[pos + 2]) < 0x80:
            ts, pos = zz[(b & 0x7F) | (c << 7)], pos + 3
        else:
            ts, pos = read_varlong_slow(data, pos + 1)
        b = data[pos]
        delta, pos = (zz[b], pos + 1) if b < 0x80 else read_varint_fast(data, pos)
        b = data[pos]
        klen, pos = (zz[b], pos + 1) if b < 0x80 else read_varint_fast(data, pos)
        key_at = pos
        if klen > 0:
            pos += klen
        b = data[pos]
        if b < 0x80:
            vlen, pos = zz[b], pos + 1
        elif (c := data[pos + 1]) < 0x80:
            vlen, pos = zz[(b & 0x7F) | (c << 7)], pos + 2
        else:
            vlen, pos = read_varint_slow(data, pos)
        offset, value_at = base_offset + delta, pos
        pos += vlen if vlen > 0 else 0
        if pos + 1 != stop or data[pos]:
            plain = False
        pos = stop
        if offset < fetch_offset:
            continue
        ts = java_long(base_ts + ts) if append_time is None else append_time
        if ts > max_ts:
            max_ts = ts
        last, written = offset, written + 1
        head = head_struct(1, attributes, ts, klen if klen >= 0 else -1) if magic else head_struct(
            0, attributes, klen if klen >= 0 else -1)  # fmt: skip
        if klen > 0:
            head += data[key_at : key_at + klen]
        if vlen < 0 or flags & TOMBSTONE_FLAG:
            head += _NULL
            parts += (pack_prefix(offset - shift, len(head) + 4, crc32(head)), head)
        else:
            value = mv[value_at : value_at + vlen]
            head += pack_i32(vlen)
            parts += (pack_prefix(offset - shift, len(head) + vlen + 4, crc32(value, crc32(head))), head, value)
    return pos, written, last, max_ts, plain
