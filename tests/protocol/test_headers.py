"""Request and response headers: their two versions, Kafka's quirks, and annotated byte vectors.

* Request header v1 (non-flexible APIs) is ``api_key, api_version,
  correlation_id, client_id``; v2 (flexible versions) appends a tagged-field
  buffer, and ``client_id`` keeps its int16 length: it is never compact.
* ApiVersions responses use response header v0 (no tagged-field buffer) in
  every version, v3 and v4 included, so a client can read the answer to a
  version the broker does not know; every other flexible response uses v1.
* ``decode_request`` refuses an unknown api key with ``UnknownApiKeyError`` and
  a version outside our range with ``UnsupportedVersionError``, which carries
  the parsed header so the broker can still answer.

kafka-python's own header encoder is used as an independent oracle for both
header versions.
"""

from __future__ import annotations

import struct
import warnings

import pytest

from protocol import (
    API_BY_KEY,
    InvalidRequestError,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    message_class,
)
from protocol.codec import encode_body

with warnings.catch_warnings():
    # kafka-python's message modules read their JSON with a deprecated importlib call.
    warnings.simplefilter("ignore")
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest

API_VERSIONS, METADATA = API_BY_KEY[18], API_BY_KEY[3]
CLIENT_ID = "клиент-1"  # non-ASCII: the int16 length counts UTF-8 bytes, not characters
ALL_VERSIONS = [(api.key, v) for api in API_BY_KEY.values() for v in range(api.min_version, api.max_version + 1)]


def _int16_string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


# ---------------------------------------------------------------- annotated vectors


def test_api_versions_v3_request_annotated():
    body = message_class(API_VERSIONS, True)(client_software_name="kcat", client_software_version="1.7.1")
    payload = b"".join(
        [
            struct.pack(">h", 18),  # api_key: ApiVersions
            struct.pack(">h", 3),  # api_version: 3, first flexible version -> request header v2
            struct.pack(">i", 9),  # correlation_id
            struct.pack(">h", 7),  # client_id length: int16 even in header v2 (not a compact varint)
            b"rdkafka",  # client_id
            b"\x00",  # header v2 tagged fields: none
            b"\x05",  # client_software_name: compact string length, 4 + 1
            b"kcat",
            b"\x06",  # client_software_version: compact string length, 5 + 1
            b"1.7.1",
            b"\x00",  # body tagged fields: none
        ]
    )
    frame = encode_request(RequestHeader(18, 3, 9, "rdkafka"), body)
    assert frame == struct.pack(">i", len(payload)) + payload

    request = decode_request(payload)
    assert request.header == RequestHeader(18, 3, 9, "rdkafka")
    assert request.header_version == 2 and request.api is API_VERSIONS and request.version == 3
    assert request.body == body


def test_metadata_v0_request_annotated():
    payload = b"".join(
        [
            struct.pack(">h", 3),  # api_key: Metadata
            struct.pack(">h", 0),  # api_version: 0 -> request header v1
            struct.pack(">i", 0x01020304),  # correlation_id
            struct.pack(">h", 12),  # client_id length
            b"kafka-python",  # client_id
            # no header tagged fields in v1
            struct.pack(">i", 2),  # topics: int32 array length (v0 arrays are never null)
            struct.pack(">h", 3),  # topics[0].name: int16 string length
            b"abc",
            struct.pack(">h", 5),  # topics[1].name: length in UTF-8 bytes (5), not characters (3)
            b"\xc3\xa9t\xc3\xa9",  # "été"
        ]
    )
    request = decode_request(payload)
    assert request.header == RequestHeader(3, 0, 0x01020304, "kafka-python")
    assert request.header_version == 1
    assert [t.name for t in request.body.topics] == ["abc", "été"]

    topic = message_class(METADATA, True).MetadataRequestTopic
    body = message_class(METADATA, True)(topics=[topic(name="abc"), topic(name="été")])
    assert encode_request(RequestHeader(3, 0, 0x01020304, "kafka-python"), body) == (
        struct.pack(">i", len(payload)) + payload
    )


# ---------------------------------------------------------------- request header v1 / v2


@pytest.mark.parametrize("client_id", [CLIENT_ID, "", None])
@pytest.mark.parametrize("key,version", ALL_VERSIONS, ids=[f"{API_BY_KEY[k].name}-v{v}" for k, v in ALL_VERSIONS])
def test_request_header_layout_in_every_version(key, version, client_id):
    api = API_BY_KEY[key]
    body = message_class(api, True)()
    frame = encode_request(RequestHeader(key, version, -7, client_id), body)
    flexible = api.is_flexible(version)
    header = struct.pack(">hhi", key, version, -7) + _int16_string(client_id) + (b"\x00" if flexible else b"")
    assert frame[4:] == header + encode_body(api, version, body, True)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4

    request = decode_request(frame[4:])
    assert request.header_version == (2 if flexible else 1)
    assert request.header == RequestHeader(key, version, -7, client_id)


def test_header_v2_keeps_unknown_tagged_fields_and_rewrites_them():
    payload = b"".join(
        [
            struct.pack(">hhi", 3, 9, 42),  # Metadata v9: header v2
            _int16_string("c"),
            b"\x01",  # one header tagged field
            b"\x05",  # tag 5 (unknown to us)
            b"\x02",  # size 2
            b"hi",
            encode_body(METADATA, 9, message_class(METADATA, True)(), True),
        ]
    )
    request = decode_request(payload)
    assert request.header.unknown_tagged_fields == {5: b"hi"}
    assert encode_request(request.header, request.body)[4:] == payload


def test_header_v1_has_no_tag_buffer_to_read():
    # Metadata v8 (header v1): a stray byte after client_id is the body, not header tags.
    topic_count_null = struct.pack(">i", -1)
    request = decode_request(struct.pack(">hhi", 3, 8, 1) + _int16_string("c") + topic_count_null + b"\x01\x00\x00")
    assert request.header.unknown_tagged_fields == {} and request.body.topics is None


@pytest.mark.parametrize(
    "kp_request,version",
    [
        (ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3),
        (ApiVersionsRequest(), 2),
        (MetadataRequest(topics=None, allow_auto_topic_creation=False), 12),
        (MetadataRequest(topics=[]), 4),
    ],
)
def test_request_headers_match_kafka_python(kp_request, version):
    api = API_BY_KEY[kp_request.API_KEY]
    kp_request.API_VERSION = version
    kp_request.with_header(correlation_id=123, client_id=CLIENT_ID)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = bytes(kp_request.encode(header=True))
    request = decode_request(theirs)
    assert request.header == RequestHeader(api.key, version, 123, CLIENT_ID)
    assert encode_request(request.header, request.body)[4:] == theirs


# ---------------------------------------------------------------- response headers


@pytest.mark.parametrize("version", range(API_VERSIONS.min_version, API_VERSIONS.max_version + 1))
def test_api_versions_response_always_uses_header_v0(version):
    api_version = message_class(API_VERSIONS, False).ApiVersion
    body = message_class(API_VERSIONS, False)(api_keys=[api_version(api_key=18, min_version=0, max_version=4)])
    frame = encode_response(API_VERSIONS, version, 77, body)
    # size, correlation_id, then straight into the body: no tagged-field buffer, even at v3/v4
    assert frame == struct.pack(">ii", len(frame) - 4, 77) + encode_body(API_VERSIONS, version, body, False)
    assert API_VERSIONS.response_header_version(version) == 0
    correlation_id, decoded = decode_response(frame[4:], API_VERSIONS, version)
    assert correlation_id == 77 and decoded == body

    kp_entry = ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4, version=version)
    kp = ApiVersionsResponse[version](error_code=0, api_keys=[kp_entry])
    kp.with_header(correlation_id=77)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bytes(kp.encode(header=True)) == frame[4:]


@pytest.mark.parametrize("key,version", ALL_VERSIONS, ids=[f"{API_BY_KEY[k].name}-v{v}" for k, v in ALL_VERSIONS])
def test_other_responses_use_header_v1_when_flexible(key, version):
    api = API_BY_KEY[key]
    body = message_class(api, False)()
    frame = encode_response(api, version, 5, body)
    tags = b"\x00" if api.is_flexible(version) and key != 18 else b""
    assert frame[4:] == struct.pack(">i", 5) + tags + encode_body(api, version, body, False)
    assert decode_response(frame[4:], api, version) == (5, body)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("api_key", [4, 57, 999, -1])  # LeaderAndIsr, UpdateFeatures (undeclared), nonsense
def test_unknown_api_key_is_refused(api_key):
    with pytest.raises(UnknownApiKeyError) as info:
        decode_request(struct.pack(">hhi", api_key, 0, 1) + _int16_string("c"))
    assert isinstance(info.value, InvalidRequestError)


@pytest.mark.parametrize(
    "key,version",
    [(3, METADATA.max_version + 1), (18, API_VERSIONS.max_version + 1), (18, -1), (0, 99)],
)
def test_version_out_of_range_carries_the_parsed_header(key, version):
    api = API_BY_KEY[key]
    flexible = api.is_flexible(version)
    payload = struct.pack(">hhi", key, version, 31337) + _int16_string(CLIENT_ID) + (b"\x00" if flexible else b"")
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(payload + b"unparsed body of an unknown version")
    assert info.value.header == RequestHeader(key, version, 31337, CLIENT_ID)
    assert info.value.api is api
    assert isinstance(info.value, InvalidRequestError)


@pytest.mark.parametrize("payload", [b"", b"\x00", b"\x00\x03\x00", b"\x00\x03\x00\x00\x00\x00"])
def test_truncated_header_is_our_error(payload):
    with pytest.raises(InvalidRequestError):
        decode_request(payload)
