"""Encoders and decoders compiled from the schema declarations.

For a (struct, version, flexible) triple, ``_compile_reader`` walks the
declaration once and returns a closure that decodes that exact layout; the
result is cached, so the per-message cost is only the closures' calls (kio's
approach, without generated source). ``_compile_writer`` does the same for
encoding into a list of ``bytes`` pieces.

Layout rules applied here (Kafka's):

* a field is on the wire only in its ``versions``; absent fields decode to
  their default;
* in flexible versions strings/bytes/arrays/records use compact (uvarint
  length + 1) encodings and every struct ends with a tagged-field buffer:
  ``count``, then ``tag, size, data`` for each tag in ascending order;
* tagged fields are written only when their value differs from the default;
  unknown tags read from the wire are kept in ``unknown_tagged_fields`` (so
  are known tags a peer sent at their default value, which Kafka itself never
  does), so a decoded message re-encodes to the bytes it came from. As
  Kafka's generated readers, decoding takes tags in any order and a tag sent
  twice (the last wins: a re-encode then writes it once, in order); a known
  tag's value is read by its type straight from the message, its size not
  looked at (so a size that does not match leaves the reader where the value
  ended, as in Kafka), and a tag the struct has in other versions only is an
  invalid request (Kafka's "Tag N is not valid for version").

Records fields decode to a ``memoryview`` into the caller's buffer (zero copy;
writable when the caller's buffer is), and encode from any object that has
``len()`` and is a bytes-like chunk (the broker may put its own sized chunk
objects there and write them itself; see ``encode_chunks``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from . import primitives as p
from .errors import InvalidRequestError
from .messages import class_for_field, default_value, struct_class
from .primitives import Reader
from .schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    Api,
    ArrayOf,
    Field,
    Struct,
)

ReadFn = Callable[[Reader], Any]
WriteFn = Callable[[list, Any], None]

_FIXED_READERS: dict[str, ReadFn] = {
    INT8: Reader.int8,
    INT16: Reader.int16,
    UINT16: Reader.uint16,
    INT32: Reader.int32,
    UINT32: Reader.uint32,
    INT64: Reader.int64,
    FLOAT64: Reader.float64,
    BOOL: Reader.boolean,
    UUID: Reader.uuid,
}

_FIXED_WRITERS: dict[str, WriteFn] = {
    INT8: p.w_int8,
    INT16: p.w_int16,
    UINT16: p.w_uint16,
    INT32: p.w_int32,
    UINT32: p.w_uint32,
    INT64: p.w_int64,
    FLOAT64: p.w_float64,
    BOOL: p.w_bool,
    UUID: p.w_uuid,
}


# ---------------------------------------------------------------- decoding


def _type_reader(field: Field, t: Any, version: int, flexible: bool, nullable: bool) -> ReadFn:
    if isinstance(t, ArrayOf):
        return _array_reader(field, t, version, flexible, nullable)
    if isinstance(t, Struct):
        inner = _compile_reader(t, class_for_field(field), version, flexible)
        if not nullable:
            return inner
        return lambda r: None if r.int8() < 0 else inner(r)
    if t in _FIXED_READERS:
        return _FIXED_READERS[t]
    if t == STRING:
        return lambda r: r.string(flexible, nullable)
    if t == BYTES:
        return lambda r: r.bytes_(flexible, nullable)
    if t == RECORDS:
        return lambda r: r.records(flexible, nullable)
    raise AssertionError(t)


def _array_reader(field: Field, t: ArrayOf, version: int, flexible: bool, nullable: bool) -> ReadFn:
    item = _type_reader(field, t.item, version, flexible, nullable=False)

    def read_array(r: Reader) -> list | None:
        n = r.compact_length() if flexible else r.int32()
        if n < 0:  # any negative count of a nullable array is null, as in Kafka's readers
            if nullable:
                return None
            raise InvalidRequestError(f"{field.name}: negative array length {n}")
        if n > r.remaining:
            raise InvalidRequestError(f"{field.name}: {n} elements in {r.remaining} bytes")
        return [item(r) for _ in range(n)]

    return read_array


def _field_reader(field: Field, version: int, flexible: bool) -> ReadFn:
    return _type_reader(field, field.type, version, flexible, version in field.nullable)


@functools.cache
def _compile_reader(struct: Struct, cls: type, version: int, flexible: bool) -> ReadFn:
    plain: list[tuple[str, ReadFn]] = []
    tagged: dict[int, tuple[str, ReadFn, Any] | None] = {}
    for f in struct.fields:
        if f.tag is not None and flexible and version in f.versions:
            tagged[f.tag] = (f.name, _field_reader(f, version, flexible), default_value(f))
        elif f.tag is not None and flexible:
            tagged.setdefault(f.tag, None)  # a tag of other versions
        if version in f.versions and f.tag is None:
            plain.append((f.name, _field_reader(f, version, flexible)))

    def read_struct(r: Reader) -> Any:
        values = {name: fn(r) for name, fn in plain}
        if flexible:
            values["unknown_tagged_fields"] = _read_tags(r, tagged, values)
        return cls(**values)

    return read_struct


def _read_tags(r: Reader, known: dict[int, tuple[str, ReadFn, Any] | None], values: dict) -> dict[int, bytes]:
    """A tagged-field buffer, read as Kafka's generated readers read it: a count that comes out negative
    reads none, tags may come in any order and again (the last one wins), a known tag's value is read by
    its type whatever its size says."""
    unknown: dict[int, bytes] = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint() & 0xFFFFFFFF  # an unknown tag is kept as the 32 bits a writer puts back
        size = r.uvarint()
        if tag not in known:
            unknown[tag] = bytes(r.view(size))
            continue
        if known[tag] is None:
            raise InvalidRequestError(f"tag {tag} is not valid for this version")
        name, fn, default = known[tag]
        start = r.pos
        values[name] = fn(r)
        if values[name] == default:
            # Kafka never writes a tag at its default, but some peers do; keep the
            # raw bytes so a re-encode reproduces exactly what was received.
            unknown[tag] = bytes(r.buf[start : r.pos])
        else:
            unknown.pop(tag, None)  # sent twice: the value read last stands
    return unknown


# ---------------------------------------------------------------- encoding


def _type_writer(field: Field, t: Any, version: int, flexible: bool, nullable: bool) -> WriteFn:
    if isinstance(t, ArrayOf):
        return _array_writer(field, t, version, flexible, nullable)
    if isinstance(t, Struct):
        inner = _compile_writer(t, version, flexible)
        if not nullable:
            return inner
        return lambda out, v: p.w_int8(out, -1) if v is None else (p.w_int8(out, 1), inner(out, v))
    if t in _FIXED_WRITERS:
        return _FIXED_WRITERS[t]
    if t == STRING:
        return lambda out, v: p.w_string(out, _check_null(field, v, nullable), flexible)
    if t in (BYTES, RECORDS):
        return lambda out, v: p.w_bytes(out, _check_null(field, v, nullable), flexible)
    raise AssertionError(t)


def _check_null(field: Field, v: Any, nullable: bool) -> Any:
    if v is None and not nullable:
        raise ValueError(f"{field.name} is not nullable in this version")
    return v


def _array_writer(field: Field, t: ArrayOf, version: int, flexible: bool, nullable: bool) -> WriteFn:
    item = _type_writer(field, t.item, version, flexible, nullable=False)

    def write_array(out: list, v: list | None) -> None:
        if v is None:
            _check_null(field, v, nullable)
            p.w_length(out, None, flexible, wide=True)
            return
        p.w_length(out, len(v), flexible, wide=True)
        for x in v:
            item(out, x)

    return write_array


@functools.cache
def _compile_writer(struct: Struct, version: int, flexible: bool) -> WriteFn:
    plain: list[tuple[str, WriteFn]] = []
    tagged: list[tuple[int, str, WriteFn, Any]] = []
    for f in struct.fields:
        if version not in f.versions:
            continue
        fn = _type_writer(f, f.type, version, flexible, version in f.nullable)
        if f.tag is None:
            plain.append((f.name, fn))
        elif flexible:
            tagged.append((f.tag, f.name, fn, default_value(f)))
    tagged.sort(key=lambda t: t[0])

    def write_struct(out: list, obj: Any) -> None:
        for name, fn in plain:
            fn(out, getattr(obj, name))
        if flexible:
            _write_tags(out, obj, tagged)

    return write_struct


def _write_tags(out: list, obj: Any, tagged: list[tuple[int, str, WriteFn, Any]]) -> None:
    entries: dict[int, bytes] = dict(obj.unknown_tagged_fields)
    for tag, name, fn, default in tagged:
        value = getattr(obj, name)
        if value != default:
            piece: list = []
            fn(piece, value)
            entries[tag] = b"".join(piece)
    p.w_uvarint(out, len(entries))
    for tag in sorted(entries):
        p.w_uvarint(out, tag)
        p.w_uvarint(out, len(entries[tag]))
        out.append(entries[tag])


# ---------------------------------------------------------------- public


def _struct_for(api: Api, is_request: bool) -> tuple[Struct, type]:
    struct = api.request if is_request else api.response
    name = api.name + ("Request" if is_request else "Response")
    return struct, struct_class(struct, name)


def decode_body(api: Api, version: int, data: Any, is_request: bool, *, reader: Reader | None = None) -> Any:
    """Decode a request or response body of ``api`` at ``version``.

    Raises ``InvalidRequestError`` for any malformed input. Trailing bytes after
    a complete body are ignored, as Kafka ignores them.
    """
    struct, cls = _struct_for(api, is_request)
    fn = _compile_reader(struct, cls, version, api.is_flexible(version))
    return fn(reader if reader is not None else Reader(data))


def encode_chunks(api: Api, version: int, obj: Any, is_request: bool) -> list:
    """Encode a body into a list of chunks (``bytes`` and records objects)."""
    struct, _ = _struct_for(api, is_request)
    out: list = []
    _compile_writer(struct, version, api.is_flexible(version))(out, obj)
    return out


def encode_body(api: Api, version: int, obj: Any, is_request: bool) -> bytes:
    """Encode a request or response body into bytes."""
    return b"".join(encode_chunks(api, version, obj, is_request))


def encode_struct(struct: Struct, version: int, obj: Any, *, flexible: bool = False) -> bytes:
    """Encode a free-standing ``struct`` (not a request/response body) at ``version``."""
    out: list = []
    _compile_writer(struct, version, flexible)(out, obj)
    return b"".join(out)


def decode_struct(struct: Struct, version: int, data: Any, *, flexible: bool = False) -> Any:
    """Decode a free-standing ``struct`` at ``version``; raises ``InvalidRequestError`` on bad bytes."""
    return _compile_reader(struct, struct_class(struct), version, flexible)(Reader(data))
