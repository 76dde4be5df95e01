"""Records inside a v2 batch: the tight decode loop and the encoder.

Decoding works on ``bytes`` (one copy of the records region, or the
decompressed stream) because indexing and slicing ``bytes`` is the fastest
thing pure Python has, and slices are already the ``bytes`` keys/values we hand
out. The loop inlines the one-byte varint case and only calls the general
reader for longer varints. Bounds are checked cheaply: each record's body must
end exactly at ``start + length`` (so an over-read into the next record is
caught by one comparison), and ``IndexError`` from running off the end is
turned into ``InvalidRecordError`` like Kafka's ``InvalidRecordException``.

``decode_record_tuples`` yields ``(offset, timestamp, key, value, headers,
attributes)`` tuples, the cheap fast path; ``Record`` objects are built from
those by the batch view. ``encode_rows`` is the bulk encoder for such rows:
records without headers are written inline with varints looked up in a table
of the small values, the rest go through ``encode_record``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..errors import InvalidRecordError
from ..primitives import INT64_MAX, INT64_MIN
from .varint import (
    ZIGZAG14,
    encode_varint,
    encode_varlong,
    java_long,
    read_varint_slow,
    read_varlong_slow,
    write_varint,
    write_varlong,
)

RecordTuple = tuple[int, int, "bytes | None", "bytes | None", tuple, int]


def _decode_headers(data: bytes, pos: int, count: int) -> tuple[tuple, int]:
    headers = []
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            klen, pos = read_varint_slow(data, pos)
        if klen < 0:
            raise InvalidRecordError("Invalid negative header key size")
        key = str(data[pos : pos + klen], "utf-8", "surrogateescape")
        pos += klen
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            vlen, pos = read_varint_slow(data, pos)
        if vlen >= 0:
            headers.append((key, data[pos : pos + vlen]))
            pos += vlen
        else:
            headers.append((key, None))
    return tuple(headers), pos


def decode_record_tuples(
    data: bytes, count: int, base_offset: int, base_timestamp: int, append_time: int | None
) -> Iterator[RecordTuple]:
    """Yield ``count`` records from ``data``; ``append_time`` overrides timestamps (LogAppendTime)."""
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count}")
    try:
        if append_time is None and not _NEAR_EDGE < base_timestamp < -_NEAR_EDGE:
            yield from _wrapped(_decode_loop(data, count, base_offset, base_timestamp, append_time))
        else:
            yield from _decode_loop(data, count, base_offset, base_timestamp, append_time)
    except IndexError:
        raise InvalidRecordError("buffer underflow while reading a record") from None




# A timestamp is base + delta in Java's long arithmetic: it wraps. The loop wraps the sum for deltas of 4+
# bytes; the shorter ones it decodes inline (|delta| < 2^20) can only leave the long range from a base this
# near its ends, and then each row is wrapped after the loop.
_NEAR_EDGE = INT64_MIN + (1 << 21)


def _wrapped(rows: Iterator[RecordTuple]) -> Iterator[RecordTuple]:
    for row in rows:
        ts = row[1]
        yield row if INT64_MIN <= ts <= INT64_MAX else (row[0], java_long(ts), *row[2:])


def _decode_loop(data, count, base_offset, base_timestamp, append_time):  # noqa: C901 - one hot loop
    # Varints are decoded inline for 1 and 2 bytes (values -8192..8191), and deltas also
    # for 3 bytes; that covers lengths, deltas and key/value sizes of typical records.
    # Anything longer goes through the general, length-checked reader.
    pos = 0
    end = len(data)
    zz = ZIGZAG14
    slow_int = read_varint_slow
    for _ in range(count):
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
        attributes = data[pos]
        b = data[pos + 1]
        if b < 0x80:
            ts_delta = zz[b]
            pos += 2
        elif (c := data[pos + 2]) < 0x80:
            ts_delta = zz[(b & 0x7F) | (c << 7)]
            pos += 3
        elif (d := data[pos + 3]) < 0x80:
            u = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
            ts_delta = (u >> 1) ^ -(u & 1)
            pos += 4
        else:
            ts_delta, pos = read_varlong_slow(data, pos + 1)
            ts_delta = java_long(base_timestamp + ts_delta) - base_timestamp  # the sum below then wraps
        b = data[pos]
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        elif (c := data[pos + 1]) < 0x80:
            offset_delta = zz[(b & 0x7F) | (c << 7)]
            pos += 2
        elif (d := data[pos + 2]) < 0x80:
            u = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
            offset_delta = (u >> 1) ^ -(u & 1)
            pos += 3
        else:
            offset_delta, pos = slow_int(data, pos)
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
            key = data[pos : pos + n]
            pos += n
        else:
            key = None
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
            value = data[pos : pos + n]
            pos += n
        else:
            value = None
        if data[pos] == 0:
            headers = ()
            pos += 1
        else:
            n, pos = slow_int(data, pos)
            if n < 0 or n > stop - pos:
                raise InvalidRecordError(f"Found invalid number of record headers {n}")
            headers, pos = _decode_headers(data, pos, n)
        if pos != stop:
            raise InvalidRecordError(f"Invalid record size: expected {length} bytes, read {length + pos - stop}")
        yield (
            base_offset + offset_delta,
            base_timestamp + ts_delta if append_time is None else append_time,
            key,
            value,
            headers,
            attributes,
        )
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        write_varint(out, len(data))
        out += data


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    attributes: int,
) -> None:
    """Append one record (length-prefixed) to ``out``."""
    body = bytearray()
    body.append(attributes & 0xFF)
    write_varlong(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_bytes(body, key)
    _write_bytes(body, value)
    write_varint(body, len(headers))
    for hkey, hvalue in headers:
        if hkey is None:
            raise InvalidRecordError("header key must not be null")
        try:
            raw = hkey.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            raise InvalidRecordError(f"header key is not encodable: {exc}") from None
        _write_bytes(body, raw)
        _write_bytes(body, hvalue)
    write_varint(out, len(body))
    out += body


# Zigzag varint bytes of -8192..8191 (the same as varlong bytes there): lengths, deltas.
_SMALL_VARINTS = {n: encode_varint(n) for n in range(-8192, 8192)}
_ATTRIBUTE_BYTES = tuple(bytes([a]) for a in range(256))


def encode_rows(out: bytearray, rows, base_offset: int, base_timestamp: int) -> None:
    """Append ``(offset, timestamp, key, value, headers, attributes)`` rows as records to ``out``."""
    small, attribute_bytes, big, big_long = _SMALL_VARINTS.get, _ATTRIBUTE_BYTES, encode_varint, encode_varlong
    for offset, timestamp, key, value, headers, attributes in rows:
        if headers:
            delta = java_long(timestamp - base_timestamp)  # Kafka's timestamp - baseTimestamp wraps
            encode_record(out, offset - base_offset, delta, key, value, headers, attributes)
            continue
        delta = timestamp - base_timestamp
        head = attribute_bytes[attributes & 0xFF] + (small(delta) or big_long(java_long(delta)))
        head += small(delta := offset - base_offset) or big(delta)
        if key is None:
            head += b"\x01"
        else:
            head += small(n := len(key)) or big(n)
            head += key
        if value is None:
            head += b"\x01\x00"
            out += small(n := len(head)) or big(n)
            out += head
            continue
        head += small(n := len(value)) or big(n)
        out += small(n := len(head) + n + 1) or big(n)
        out += head
        out += value
        out += b"\x00"
