"""Writing magic-0/1 message sets (used by ``RecordBatchBuilder`` for magic < 2).

Uncompressed: one message per record at its absolute offset; v1 messages carry
the record timestamp (or the append time with attributes bit 3 under
LogAppendTime). Compressed: the records become an inner message set (v1:
offsets relative to the first record, so 0..n-1 when contiguous; v0:
absolute), compressed into the value of one wrapper message whose offset is
the last absolute offset and whose v1 timestamp is the max inner timestamp, or
the append time under LogAppendTime.
"""

from __future__ import annotations

import struct

from ._accel import crc32 as _crc32
from ._model import Codec, TimestampType
from .compression import compress
from .legacy import TIMESTAMP_TYPE_FLAG

_INT32 = struct.Struct(">i")
_PREFIX = struct.Struct(">qi")
_BODY_V0 = struct.Struct(">bb")  # magic, attributes
_BODY_V1 = struct.Struct(">bbq")  # magic, attributes, timestamp


def _len_bytes(data: bytes | None) -> bytes:
    return b"\xff\xff\xff\xff" if data is None else _INT32.pack(len(data)) + bytes(data)


def encode_message(
    magic: int, offset: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """One legacy entry: prefix, CRC-32, body."""
    head = _BODY_V1.pack(1, attributes, timestamp) if magic == 1 else _BODY_V0.pack(0, attributes)
    body = head + _len_bytes(key) + _len_bytes(value)
    crc = _crc32(body)
    return _PREFIX.pack(offset, len(body) + 4) + crc.to_bytes(4, "big") + body


def build_legacy(
    magic: int,
    codec: Codec,
    timestamp_type: TimestampType,
    records: list[tuple],
    *,
    log_append_time: int | None,
    level: int | None,
) -> bytes:
    """``records`` are ``(offset, timestamp, key, value)`` with increasing offsets."""
    lat = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    ts_attr = TIMESTAMP_TYPE_FLAG if lat else 0
    if codec is Codec.NONE:
        return b"".join(
            encode_message(magic, off, ts_attr, log_append_time if lat and log_append_time is not None else ts, k, v)
            for off, ts, k, v in records
        )
    first = records[0][0]
    inner = b"".join(
        encode_message(magic, off - first if magic == 1 else off, 0, ts, k, v) for off, ts, k, v in records
    )
    if lat and log_append_time is not None:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max(ts for _, ts, _, _ in records)
    value = compress(codec, inner, magic=magic, level=level)
    return encode_message(magic, records[-1][0], int(codec) | ts_attr, wrapper_ts, None, value)
