"""A Produce-only decoder and answer encoder for the shapes clients really send.

Produce is the request a busy broker decodes most, and it is big: the generic
codec's closures, per-struct dicts and tag walks cost tens of microseconds a
request, most of it on cold caches. The two functions here do the same job in
one straight pass over the bytes for every version we serve (v0-13), building
the very objects the generic codec builds (``ProduceRequest`` with its
``TopicProduceData``/``PartitionProduceData``, records as memoryviews into the
frame).

They are optimistic: they handle the ordinary shape only, and return None for
anything else, so the caller falls back to the generic codec, which stays the
one definition of the layout and of every failure:

* decoding gives up on any tagged field on the wire (header or body), on a
  negative or oversized length (a string over 0x7fff bytes too), on a short
  buffer, on bad UTF-8 — whatever goes wrong, the generic decoder then runs
  on the same bytes and raises (or returns) what it always did;
* encoding gives up on a non-default ``current_leader``, on node endpoints, on
  unknown tagged fields, on any value ``struct`` refuses.

So the fast path changes speed only; the property tests in
``tests/protocol/test_produce_wire.py`` check it against the generic codec.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from .apis.produce import API as PRODUCE
from .messages import default_value, message_class, schema_of
from .errors import StringTooLongError
from .primitives import MAX_STRING_BYTES, ZERO_UUID, uvarint_bytes

_H_HDR = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_HI = struct.Struct(">hi")
_I = struct.Struct(">i")
_H = struct.Struct(">h")
_ihqqq = struct.Struct(">ihqqq")
_ihqq = struct.Struct(">ihqq")
_ihq = struct.Struct(">ihq")
_U128 = struct.Struct(">16s")

_Request = message_class(PRODUCE, True)
_Topic = _Request.TopicProduceData
_Partition = _Topic.PartitionProduceData
_Response = message_class(PRODUCE, False)
_TopicResponse = _Response.TopicProduceResponse
_PartitionResponse = _TopicResponse.PartitionProduceResponse
# The default ``current_leader`` is an instance of the class built for the bare struct, which is not
# ``LeaderIdAndEpoch`` itself; the generic writer skips the tag only for a value equal to that default.
_DEFAULT_LEADER = default_value(next(f for f in schema_of(_PartitionResponse).fields if f.name == "current_leader"))
_Leader = type(_DEFAULT_LEADER)

_MIN_VERSION, _MAX_VERSION = PRODUCE.min_version, PRODUCE.max_version
_FLEXIBLE: int = PRODUCE.flexible or _MAX_VERSION + 1


class _GiveUp(Exception):
    """The bytes or objects are not the ordinary shape: let the generic codec decide."""


def _uvarint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes at ``pos``: (value, position after it)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while shift < 35:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
    raise _GiveUp


def _length(buf: Any, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length prefix (int16, int32 or compact): (length, position after it); -1 stands for null."""
    if flexible:
        n, pos = _uvarint(buf, pos)
        return n - 1, pos
    if wide:
        return _I.unpack_from(buf, pos)[0], pos + 4
    return _H.unpack_from(buf, pos)[0], pos + 2


def _no_tags(buf: Any, pos: int) -> int:
    if buf[pos] != 0:
        raise _GiveUp
    return pos + 1


def _string(buf: Any, view: memoryview, pos: int, end: int, flexible: bool) -> tuple[str | None, int]:
    n, pos = _length(buf, pos, flexible, False)
    if n < 0 or pos + n > end or n > MAX_STRING_BYTES:
        if n == -1:
            return None, pos
        raise _GiveUp
    return str(view[pos : pos + n], "utf-8"), pos + n


def decode_request(payload: Any) -> tuple[Any, Any] | None:
    """``(header fields, body)`` of a Produce request frame (size prefix removed), or None to fall back.

    The header comes back as the tuple ``(api_key, api_version, correlation_id, client_id)``; the
    body is the ``ProduceRequest`` the generic codec would build."""
    try:
        return _decode(payload)
    except (_GiveUp, struct.error, IndexError, UnicodeDecodeError):
        return None


def _decode(payload: Any) -> tuple[Any, Any]:
    view = memoryview(payload)
    end = len(view)
    api_key, version, correlation_id, n = _H_HDR.unpack_from(payload, 0)
    if api_key != 0 or not _MIN_VERSION <= version <= _MAX_VERSION or n < -1 or 10 + n > end:
        raise _GiveUp
    client_id = None if n == -1 else str(view[10 : 10 + n], "utf-8")
    pos = 10 + max(n, 0)
    flexible = version >= _FLEXIBLE
    if flexible:
        pos = _no_tags(payload, pos)
    transactional_id = None
    if version >= 3:
        transactional_id, pos = _string(payload, view, pos, end, flexible)
    acks, timeout_ms = _HI.unpack_from(payload, pos)
    topics, pos = _topics(payload, view, pos + 6, end, version, flexible)
    if flexible:
        _no_tags(payload, pos)
    body = _Request(transactional_id, acks, timeout_ms, topics, {})
    return (api_key, version, correlation_id, client_id), body


def _count(buf: Any, pos: int, end: int, flexible: bool) -> tuple[int, int]:
    n, pos = _length(buf, pos, flexible, True)
    if n < 0 or n > end - pos:
        raise _GiveUp
    return n, pos


def _topics(buf: Any, view: memoryview, pos: int, end: int, version: int, flexible: bool) -> tuple[list, int]:
    count, pos = _count(buf, pos, end, flexible)
    topics = []
    for _ in range(count):
        name, topic_id = "", ZERO_UUID
        if version >= 13:
            topic_id = _uuid(buf, pos)
            pos += 16
        else:
            name, pos = _string(buf, view, pos, end, flexible)
            if name is None:
                raise _GiveUp
        parts, pos = _partitions(buf, view, pos, end, flexible)
        if flexible:
            pos = _no_tags(buf, pos)
        topics.append(_Topic(name, topic_id, parts, {}))
    return topics, pos


def _uuid(buf: Any, pos: int) -> uuid.UUID:
    return uuid.UUID(bytes=_U128.unpack_from(buf, pos)[0])


def _partitions(buf: Any, view: memoryview, pos: int, end: int, flexible: bool) -> tuple[list, int]:
    count, pos = _count(buf, pos, end, flexible)
    parts = []
    for _ in range(count):
        index = _I.unpack_from(buf, pos)[0]
        n, pos = _length(buf, pos + 4, flexible, True)
        if n < 0 or pos + n > end:
            if n != -1:
                raise _GiveUp
            records = None
        else:
            records = view[pos : pos + n]
            pos += n
        if flexible:
            pos = _no_tags(buf, pos)
        parts.append(_Partition(index, records, {}))
    return parts, pos


# ---------------------------------------------------------------- answers


def encode_response(version: int, correlation_id: int, body: Any) -> bytes | None:
    """The whole answer frame (size prefix and header v0/v1 included), or None to fall back."""
    try:
        return _encode(version, correlation_id, body)
    except (_GiveUp, struct.error, AttributeError, TypeError):
        return None


def _encode(version: int, correlation_id: int, body: Any) -> bytes:
    if type(body) is not _Response or _not_empty(body.unknown_tagged_fields) or _not_empty(body.node_endpoints):
        raise _GiveUp
    flexible = version >= _FLEXIBLE
    out = [b"", _I.pack(correlation_id), b"\x00" if flexible else b""]
    _array_length(out, len(body.responses), flexible)
    for topic in body.responses:
        if type(topic) is not _TopicResponse or _not_empty(topic.unknown_tagged_fields):
            raise _GiveUp
        if version >= 13:
            out.append(topic.topic_id.bytes)
        elif topic.name is None:
            raise _GiveUp
        else:
            _write_string(out, topic.name, flexible)
        _array_length(out, len(topic.partition_responses), flexible)
        for part in topic.partition_responses:
            _write_partition(out, part, version, flexible)
        if flexible:
            out.append(b"\x00")
    if version >= 1:
        out.append(_I.pack(body.throttle_time_ms))
    if flexible:
        out.append(b"\x00")
    out[0] = _I.pack(sum(map(len, out)))
    return b"".join(out)


def _write_partition(out: list, part: Any, version: int, flexible: bool) -> None:
    if type(part) is not _PartitionResponse or _not_empty(part.unknown_tagged_fields):
        raise _GiveUp
    if version >= 5:
        out.append(_ihqqq.pack(part.index, part.error_code, part.base_offset, part.log_append_time_ms,
                               part.log_start_offset))  # fmt: skip
    elif version >= 2:
        out.append(_ihqq.pack(part.index, part.error_code, part.base_offset, part.log_append_time_ms))
    else:
        out.append(_ihq.pack(part.index, part.error_code, part.base_offset))
    if version >= 8:
        _array_length(out, len(part.record_errors), flexible)
        for err in part.record_errors:
            if _not_empty(err.unknown_tagged_fields):
                raise _GiveUp
            out.append(_I.pack(err.batch_index))
            _write_string(out, err.batch_index_error_message, flexible)
            if flexible:
                out.append(b"\x00")
        _write_string(out, part.error_message, flexible)
    if flexible:
        leader = part.current_leader
        if version >= 10 and (
            type(leader) is not _Leader or leader.leader_id != -1 or leader.leader_epoch != -1
            or _not_empty(leader.unknown_tagged_fields)
        ):  # fmt: skip
            raise _GiveUp
        out.append(b"\x00")


def _not_empty(value: Any) -> bool:
    """Anything but an empty collection (None too: the generic encoder refuses it, so this one gives up)."""
    return value is None or bool(value)


def _array_length(out: list, n: int, flexible: bool) -> None:
    out.append(uvarint_bytes(n + 1) if flexible else _I.pack(n))


def _write_string(out: list, value: str | None, flexible: bool) -> None:
    if value is None:
        out.append(b"\x00" if flexible else b"\xff\xff")
        return
    data = value.encode("utf-8")
    if len(data) > MAX_STRING_BYTES:  # as the generic writer (primitives.w_string) refuses it
        raise StringTooLongError(f"a string of {len(data)} bytes is too long to be serialized")
    out.append(uvarint_bytes(len(data) + 1) if flexible else _H.pack(len(data)))
    out.append(data)
