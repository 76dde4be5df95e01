"""Request/response headers and their quirks, with annotated byte vectors."""

from __future__ import annotations

import struct

import pytest

from protocol import (
    API_BY_KEY,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    message_class,
)

API_VERSIONS, METADATA = API_BY_KEY[18], API_BY_KEY[3]


def test_api_versions_v3_request_annotated():
    body = message_class(API_VERSIONS, True)(client_software_name="kcat", client_software_version="1.7.1")
    frame = encode_request(RequestHeader(18, 3, 9, "rdkafka"), body)
    payload = b"".join(
        [
            struct.pack(">h", 18),  # api_key
            struct.pack(">h", 3),  # api_version
            struct.pack(">i", 9),  # correlation_id
            struct.pack(">h", 7) + b"rdkafka",  # client_id: int16 length even in header v2
            b"\x00",  # header v2 tagged fields: none
            b"\x05kcat",  # client_software_name: compact string (len + 1)
            b"\x061.7.1",  # client_software_version
            b"\x00",  # body tagged fields: none
        ]
    )
    assert frame == struct.pack(">i", len(payload)) + payload
    request = decode_request(payload)
    assert request.header.client_id == "rdkafka" and request.body == body and request.header_version == 2


def test_metadata_v0_request_annotated():
    payload = b"".join(
        [
            struct.pack(">hhi", 3, 0, 1),  # api_key, api_version, correlation_id
            struct.pack(">h", -1),  # client_id: null
            struct.pack(">i", 1),  # topics: one
            struct.pack(">h", 3) + b"abc",  # topic name
        ]
    )
    request = decode_request(payload)
    assert request.header.client_id is None and request.header_version == 1
    assert [t.name for t in request.body.topics] == ["abc"]
    assert encode_request(request.header, request.body) == struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_response_always_uses_header_v0(version):
    body = message_class(API_VERSIONS, False)(error_code=0)
    frame = encode_response(API_VERSIONS, version, 77, body)
    assert frame[4:8] == struct.pack(">i", 77)
    if version >= 3:
        assert frame[8:10] == b"\x00\x00"  # error_code straight after the correlation id: no header tags
    assert decode_response(frame[4:], API_VERSIONS, version)[0] == 77


def test_flexible_metadata_response_uses_header_v1():
    body = message_class(METADATA, False)()
    frame = encode_response(METADATA, 9, 5, body)
    assert frame[4:9] == struct.pack(">i", 5) + b"\x00"  # correlation id + empty header tag buffer


def test_unknown_api_key_and_version_out_of_range():
    with pytest.raises(UnknownApiKeyError):
        decode_request(struct.pack(">hhih", 999, 0, 1, -1))
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(struct.pack(">hhih", 3, 40, 12, 1) + b"x" + b"\x00")
    assert info.value.header.correlation_id == 12 and info.value.header.client_id == "x"
