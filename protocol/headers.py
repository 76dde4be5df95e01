"""Request and response headers, and whole-frame encode/decode.

Request header v1: ``api_key int16, api_version int16, correlation_id int32,
client_id nullable string``; v2 (flexible APIs) adds a tagged-field buffer.
``client_id`` keeps its int16 length even in v2: Kafka never made it compact.
Response header v0 is ``correlation_id``; v1 adds tagged fields. ApiVersions
responses always use header v0 (``Api.response_header_version``).

``decode_request(payload)`` takes one frame *without* its size prefix and
returns a ``Request``; ``decode_request_header`` reads the header alone.
Produce requests and answers take a shortcut (``produce_wire``) that builds
the same objects and bytes, and falls back to the schema-driven codec for any
shape it does not handle, errors included.
Failures are the ones Kafka closes the connection for: ``UnknownApiKeyError``,
``UnsupportedVersionError`` (which carries the parsed header, so a broker can
still answer ApiVersions) and ``InvalidRequestError``.
"""

from __future__ import annotations

import struct
from typing import Any

import attrs

from . import primitives as p
from . import produce_wire
from .apis import API_BY_KEY
from .codec import _read_tags, _write_tags, decode_body, encode_chunks
from .errors import InvalidRequestError
from .primitives import Reader
from .schema import Api

_SIZE = struct.Struct(">i")
API_VERSIONS_KEY = 18
_PRODUCE = API_BY_KEY[0]


@attrs.define
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    unknown_tagged_fields: dict[int, bytes] = attrs.field(factory=dict, repr=False)


@attrs.define
class Request:
    """A decoded request: its header, its API and its body object."""

    header: RequestHeader
    api: Api
    body: Any
    header_version: int

    @property
    def version(self) -> int:
        return self.header.api_version


class UnknownApiKeyError(InvalidRequestError):
    """An api key we do not declare: Kafka closes the connection."""


class UnsupportedVersionError(InvalidRequestError):
    """A version outside our declared range; ``header`` is the parsed header."""

    def __init__(self, message: str, header: RequestHeader, api: Api) -> None:
        super().__init__(message)
        self.header = header
        self.api = api


def _read_request_header(r: Reader, flexible_header: bool) -> RequestHeader:
    header = RequestHeader(r.int16(), r.int16(), r.int32(), r.string(compact=False, nullable=True))
    if flexible_header:
        header.unknown_tagged_fields = _read_tags(r, {}, {})
    return header


def _read_header(r: Reader) -> tuple[Api, RequestHeader, int]:
    if r.remaining < 4:
        raise InvalidRequestError("request shorter than api key and version")
    api_key, api_version = r.int16(), r.int16()
    api = API_BY_KEY.get(api_key)
    if api is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    r.pos = 0
    header_version = api.request_header_version(api_version)
    return api, _read_request_header(r, header_version >= 2), header_version


def decode_request_header(payload: bytes | bytearray | memoryview) -> RequestHeader:
    """Only the header of one request frame (size prefix removed), whatever its version; raises
    ``UnknownApiKeyError`` or ``InvalidRequestError`` when there is no header to read."""
    return _read_header(Reader(payload))[1]


def decode_request(payload: bytes | bytearray | memoryview) -> Request:
    """Decode one request frame body (size prefix already removed)."""
    if payload[:2] == b"\x00\x00" and (fast := produce_wire.decode_request(payload)) is not None:
        fields, body = fast
        return Request(RequestHeader(*fields, {}), _PRODUCE, body, _PRODUCE.request_header_version(fields[1]))
    return decode_request_generic(payload)


def decode_request_generic(payload: bytes | bytearray | memoryview) -> Request:
    """``decode_request`` by the schema-driven codec alone (the oracle of the Produce shortcut)."""
    r = Reader(payload)
    api, header, header_version = _read_header(r)
    api_version = header.api_version
    if not api.min_version <= api_version <= api.max_version:
        raise UnsupportedVersionError(f"{api.name} v{api_version} is not supported", header, api)
    body = decode_body(api, api_version, None, True, reader=r)
    return Request(header, api, body, header_version)


def encode_request(header: RequestHeader, body: Any) -> bytes:
    """Encode a whole request frame, size prefix included."""
    api = API_BY_KEY[header.api_key]
    out: list = []
    p.w_int16(out, header.api_key)
    p.w_int16(out, header.api_version)
    p.w_int32(out, header.correlation_id)
    p.w_string(out, header.client_id, compact=False)
    if api.request_header_version(header.api_version) >= 2:
        _write_tags(out, header, [])
    out.extend(encode_chunks(api, header.api_version, body, True))
    return _with_size(out)


def response_chunks(api: Api, version: int, correlation_id: int, body: Any) -> list:
    """A response frame as chunks (size prefix first); records chunks pass through."""
    if api is _PRODUCE and (fast := produce_wire.encode_response(version, correlation_id, body)) is not None:
        return [fast]
    return response_chunks_generic(api, version, correlation_id, body)


def response_chunks_generic(api: Api, version: int, correlation_id: int, body: Any) -> list:
    """``response_chunks`` by the schema-driven codec alone (the oracle of the Produce shortcut)."""
    out: list = [b""]
    p.w_int32(out, correlation_id)
    if api.response_header_version(version) >= 1:
        p.w_uvarint(out, 0)
    out.extend(encode_chunks(api, version, body, False))
    out[0] = _SIZE.pack(sum(len(c) for c in out))
    return out


def encode_response(api: Api, version: int, correlation_id: int, body: Any) -> bytes:
    """Encode a whole response frame, size prefix included."""
    return b"".join(response_chunks(api, version, correlation_id, body))


def decode_response(payload: bytes | memoryview, api: Api, version: int) -> tuple[int, Any]:
    """Decode a response frame body (no size prefix): ``(correlation_id, body)``."""
    r = Reader(payload)
    correlation_id = r.int32()
    if api.response_header_version(version) >= 1:
        _read_tags(r, {}, {})
    return correlation_id, decode_body(api, version, None, False, reader=r)


def _with_size(out: list) -> bytes:
    body = b"".join(out)
    return _SIZE.pack(len(body)) + body
