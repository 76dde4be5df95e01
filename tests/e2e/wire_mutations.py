"""Requests of every API, cut and bent where Kafka's readers are most easily fooled (for the wire fuzz test).

``request_pieces`` encodes a request whose arrays hold one element, strings
name the topic ``fuzz`` and the group ``fuzzgroup`` and integers are small,
as a list of byte pieces in which each length prefix (int16, int32 or compact
uvarint) and each tagged-field buffer is its own marked piece: the encoder's
length and tag writers are swapped for marking ones while it runs.
``mutations`` then yields the request cut at every piece boundary, each
length set to -2, -1, the largest value, one too many and the smallest, each
compact length to 0xffffffff and to six varint bytes, each tag buffer with an
unknown tag, a repeated tag, tags out of order, a huge count or size, and
the request with trailing bytes.
"""

from __future__ import annotations

import contextlib
import struct
import uuid

from protocol import API_BY_KEY, RequestHeader
from protocol import codec, primitives
from protocol.messages import class_for_field, message_class, schema_of
from protocol.schema import BOOL, BYTES, FLOAT64, RECORDS, STRING, UUID, ArrayOf, Struct

_SIX_BYTES = b"\xff\xff\xff\xff\xff\x01"  # an unsigned varint one byte too long


class _Length(bytes):
    """An encoded length prefix: ``wide`` (int32), else int16, or ``compact`` (uvarint)."""

    compact = wide = False
    value: int | None = None


class _Tags(bytes):
    """An encoded tagged-field buffer and its ``{tag: bytes}``."""

    entries: dict = {}


def _marking_length(out: list, n: int | None, compact: bool, wide: bool = False) -> None:
    plain: list = []
    _ORIGINAL[0](plain, n, compact, wide)
    piece = _Length(plain[0])
    piece.compact, piece.wide, piece.value = compact, wide, n
    out.append(piece)


def _marking_tags(out: list, obj, tagged: list) -> None:
    plain: list = []
    _ORIGINAL[1](plain, obj, tagged)
    piece = _Tags(b"".join(plain))
    piece.entries = dict(obj.unknown_tagged_fields)
    out.append(piece)


_ORIGINAL = (primitives.w_length, codec._write_tags)


@contextlib.contextmanager
def _marking():
    primitives.w_length, codec._write_tags = _marking_length, _marking_tags
    try:
        yield
    finally:
        primitives.w_length, codec._write_tags = _ORIGINAL


def _value(field, t, version: int, flexible: bool, records: bytes):
    if isinstance(t, ArrayOf):
        return [_value(field, t.item, version, flexible, records)]
    if isinstance(t, Struct):
        return _filled(class_for_field(field), t, version, flexible, records)
    simple = {STRING: "fuzzgroup" if "group" in field.name else "fuzz", BYTES: b"ab", RECORDS: records,
              UUID: uuid.UUID(int=0), BOOL: True, FLOAT64: 1.0}  # fmt: skip
    return simple.get(t, 1 if "timeout" in field.name or "wait" in field.name else 0)


def _filled(cls, struct_, version: int, flexible: bool, records: bytes):
    obj = cls()
    for f in struct_.fields:
        if version in f.versions and (f.tag is None or flexible):
            setattr(obj, f.name, _value(f, f.type, version, flexible, records))
    return obj


def request_pieces(api_key: int, version: int, records: bytes) -> list[bytes]:
    """The header and body of one filled request (no size prefix), as marked pieces."""
    api = API_BY_KEY[api_key]
    cls = message_class(api, True)
    body = _filled(cls, schema_of(cls), version, api.is_flexible(version), records)
    if api_key == 0:
        body.acks = 1  # an answer to wait for
    out: list = []
    with _marking():
        primitives.w_int16(out, api_key)
        primitives.w_int16(out, version)
        primitives.w_int32(out, 1)
        primitives.w_string(out, "fuzz", compact=False)
        if api.request_header_version(version) >= 2:
            codec._write_tags(out, RequestHeader(api_key, version, 1, "fuzz"), [])
        out.extend(codec.encode_chunks(api, version, body, True))
    return out


def _length_variants(piece: _Length) -> list[bytes]:
    if piece.compact:
        return [b"\x00", b"\xff\xff\xff\xff\x0f", _SIX_BYTES, primitives.uvarint_bytes((piece.value or 0) + 3)]
    fmt, top = (">i", (1 << 31) - 1) if piece.wide else (">h", 0x7FFF)
    return [struct.pack(fmt, n) for n in (-2, -1, top, (piece.value or 0) + 1, -top - 1)]


def _tag_variants(piece: _Tags) -> list[bytes]:
    def buffer(items: list, count: int | None = None) -> bytes:
        out = [primitives.uvarint_bytes(len(items) if count is None else count)]
        for tag, data in items:
            out += [primitives.uvarint_bytes(tag), primitives.uvarint_bytes(len(data)), data]
        return b"".join(out)

    items = sorted(piece.entries.items())
    return [buffer(items + [(9999, b"junk")]), buffer([(5, b""), (3, b"")]), buffer([(7, b"x"), (7, b"")]),
            buffer(items, 0x7FFFFFFF), buffer([(0, b"\xff" * 6)]), buffer([(1, b"\xff\xff")]),
            b"\x01\x05\xff\xff\xff\xff\x07", _SIX_BYTES]  # fmt: skip


def mutations(pieces: list[bytes]):
    """Each mutated request (no size prefix)."""
    whole = b"".join(pieces)
    at = 0
    for i, piece in enumerate(pieces):
        yield whole[:at]
        yield whole[: at + 1]
        before, after = whole[:at], whole[at + len(piece) :]
        variants = _length_variants(piece) if isinstance(piece, _Length) else []
        variants += _tag_variants(piece) if isinstance(piece, _Tags) else []
        for variant in variants:
            yield before + variant + after
        at += len(piece)
    yield whole + b"\xde\xad\xbe\xef" * 4
