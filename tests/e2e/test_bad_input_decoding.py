"""Odd but parsable request bytes over real sockets, read as Kafka's generated readers read them.

Found by fuzzing the broker process. Kafka's readers (``Readable.readString``,
``ByteUtils.readUnsignedVarint`` and the read loop ``MessageDataGenerator``
writes) are lenient where ours were strict, and strict in one place where
ours were lenient:

* a string that is not UTF-8 is decoded with U+FFFD for the bad bytes (Java's
  ``new String(bytes, UTF_8)``), so the request is answered: a client id in
  Latin-1 is served, a client software name that is not UTF-8 gets
  INVALID_REQUEST from ApiVersions, a topic name gets INVALID_TOPIC_EXCEPTION;
* tagged fields may come in any order or twice, and a tag count whose five
  varint bytes read as a negative Java int means no tags;
* any negative length or count of a nullable field is null, not only -1;
* a compact string over 0x7fff bytes fails the parse: the connection closes.

After each case the broker still answers ApiVersions on a new connection.
"""

from __future__ import annotations

import socket
import struct

import pytest

from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request, message_class
from protocol.primitives import uvarint_bytes

from .harness import raw_call, recv_exactly

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _api_versions_v3(name: bytes, tags: bytes = b"\x00") -> bytes:
    """ApiVersions v3 with ``client_software_name`` as given, version "1.0" and the body's tag buffer."""
    header = struct.pack(">hhih", 18, 3, 11, 3) + b"cli" + b"\x00"
    body = uvarint_bytes(len(name) + 1) + name + uvarint_bytes(4) + b"1.0" + tags
    return _frame(header + body)


def _send(port: int, frame: bytes, api_key: int, version: int):
    """The decoded answer to one frame on a new connection, or None when the broker closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(frame)
        head = s.recv(4)
        if not head:
            return None
        size = struct.unpack(">i", head + recv_exactly(s, 4 - len(head)))[0]
        corr, body = decode_response(recv_exactly(s, size), API_BY_KEY[api_key], version)
    assert corr == 11
    return body


def _still_serving(port: int) -> None:
    body = raw_call(port, 18, 0, message_class(API_BY_KEY[18], True)())
    assert body.error_code == 0 and body.api_keys


@pytest.mark.parametrize(
    "name,tags,error",
    [
        (b"app", b"\x02\x09\x00\x05\x00", ErrorCode.NONE),  # unknown tags 9 then 5: out of order
        (b"app", b"\x02\x05\x01x\x05\x00", ErrorCode.NONE),  # tag 5 twice
        (b"app", b"\xff\xff\xff\xff\x0f", ErrorCode.NONE),  # count 0xffffffff: -1 as a Java int, no tags
        (b"a\xffb", b"\x00", ErrorCode.INVALID_REQUEST),  # not UTF-8: "a\ufffdb", which the pattern refuses
        (b"a" * 0x7FFF, b"\x00", ErrorCode.NONE),  # the longest string Kafka reads
    ],
    ids=["tags-out-of-order", "tag-twice", "tag-count-negative", "name-not-utf8", "name-0x7fff-bytes"],
)
def test_api_versions_v3_read_as_kafka_reads_it(broker, name, tags, error):
    body = _send(broker.port, _api_versions_v3(name, tags), 18, 3)
    assert body is not None and body.error_code == error
    assert bool(body.api_keys) == (error == ErrorCode.NONE)
    _still_serving(broker.port)


def test_a_compact_string_over_0x7fff_bytes_closes_the_connection(broker):
    assert _send(broker.port, _api_versions_v3(b"a" * 0x8000), 18, 3) is None
    _still_serving(broker.port)


def test_a_client_id_not_utf8_is_served(broker):
    payload = struct.pack(">hhih", 3, 1, 11, 4) + b"caf\xe9" + struct.pack(">i", -1)  # Metadata v1, all topics
    body = _send(broker.port, _frame(payload), 3, 1)
    assert body is not None and body.brokers


def test_any_negative_count_of_a_nullable_array_is_null(broker):
    """Metadata v4 with topics count -2: null (all topics) to Kafka's reader, which tests ``< 0``."""
    payload = struct.pack(">hhih", 3, 4, 11, 3) + b"cli" + struct.pack(">i", -2) + b"\x00"
    body = _send(broker.port, _frame(payload), 3, 4)
    assert body is not None and body.brokers


def test_a_topic_name_not_utf8_is_an_invalid_topic(broker):
    api = API_BY_KEY[19]
    req = message_class(api, True)
    topic = req.CreatableTopic(name="Q", num_partitions=1, replication_factor=1)
    payload = bytearray(encode_request(RequestHeader(19, 5, 11, "cli"), req(topics=[topic], timeout_ms=5000)))
    payload[payload.index(b"Q")] = 0xFF
    body = _send(broker.port, bytes(payload), 19, 5)
    assert body is not None
    assert [(t.name, t.error_code) for t in body.topics] == [("\ufffd", ErrorCode.INVALID_TOPIC_EXCEPTION)]
    _still_serving(broker.port)

