"""The compiled codec on small hand-declared schemas, with annotated byte vectors."""

from __future__ import annotations

import struct
import uuid

import pytest

from protocol import InvalidRequestError
from protocol.codec import decode_body, encode_body
from protocol.messages import message_class
from protocol.primitives import Reader, uvarint_bytes
from protocol.schema import INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, F, Struct, Versions

DEMO = Api(
    900,
    "Demo",
    (0, 3),
    flexible=2,
    request=Struct(
        F("name", STRING, null="1+"),
        F("ids", [INT32]),
        F(
            "topics",
            [Struct(F("topic", STRING), F("epoch", INT32, v="1+", default=-1), F("lag", INT64, v="3+", tag=0), name="Topic")],
            null="2+",
        ),
        F("records", RECORDS, null="0+"),
        F("topic_id", UUID, v="3+"),
        F("note", STRING, v="2+", tag=1, null="2+", default=None),
    ),
    response=Struct(F("error_code", INT16), F("level", INT8, v="1+")),
)
Req = message_class(DEMO, True)


def test_versions_parse():
    assert Versions.parse("3+") == Versions(3, 1 << 15)
    assert 4 in Versions.parse("0-4") and 5 not in Versions.parse("0-4")
    assert Versions.parse("none").empty
    with pytest.raises(ValueError):
        Versions.parse("x")


def test_v0_layout_annotated():
    obj = Req(name="ab", ids=[7], topics=[Req.Topic(topic="t")], records=b"R")
    expected = b"".join(
        [
            struct.pack(">h", 2) + b"ab",  # name: int16 length + utf-8
            struct.pack(">i", 1) + struct.pack(">i", 7),  # ids: int32 count, one int32
            struct.pack(">i", 1) + struct.pack(">h", 1) + b"t",  # topics[0].topic (epoch absent in v0)
            struct.pack(">i", 1) + b"R",  # records: int32 length
        ]
    )
    assert encode_body(DEMO, 0, obj, True) == expected
    back = decode_body(DEMO, 0, expected, True)
    assert back.topics[0].epoch == -1  # absent field takes its declared default
    assert bytes(back.records) == b"R"


def test_flexible_layout_with_tags_annotated():
    obj = Req(name=None, ids=[], topics=None, records=None, note="n")
    expected = b"".join(
        [
            b"\x00",  # name: compact nullable string, null
            b"\x01",  # ids: compact array, 0 elements (len + 1)
            b"\x00",  # topics: compact nullable array, null
            b"\x00",  # records: compact nullable, null
            b"\x01",  # one tagged field
            b"\x01\x02" + b"\x02n",  # tag 1, size 2, compact string "n"
        ]
    )
    assert encode_body(DEMO, 2, obj, True) == expected
    assert decode_body(DEMO, 2, expected, True) == obj


def test_tagged_field_at_default_is_not_written():
    obj = Req(name="x", topics=[Req.Topic(topic="t", epoch=3, lag=0)], topic_id=uuid.UUID(int=5))
    data = encode_body(DEMO, 3, obj, True)
    assert decode_body(DEMO, 3, data, True) == obj
    obj.topics[0].lag = 9
    data2 = encode_body(DEMO, 3, obj, True)
    assert len(data2) == len(data) + 2 + 8  # tag + size + int64
    assert decode_body(DEMO, 3, data2, True).topics[0].lag == 9


def test_unknown_tags_survive_a_round_trip():
    data = b"".join([b"\x02a", b"\x01", b"\x01", b"\x00", b"\x01", b"\x07\x03abc"])
    obj = decode_body(DEMO, 2, data, True)
    assert obj.unknown_tagged_fields == {7: b"abc"}
    assert encode_body(DEMO, 2, obj, True) == data


def test_not_nullable_in_version_refuses_none_on_encode():
    with pytest.raises(ValueError):
        encode_body(DEMO, 0, Req(name=None), True)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # nothing at all
        struct.pack(">h", 50) + b"ab",  # string longer than the buffer
        struct.pack(">h", -2),  # negative non-null length
        struct.pack(">h", 0) + struct.pack(">i", 2**31 - 1),  # lying array count
        struct.pack(">h", 0) + struct.pack(">i", -5),  # negative array count
        struct.pack(">h", 2) + b"\xff\xfe",  # invalid UTF-8
    ],
)
def test_malformed_bodies_raise_invalid_request(data):
    with pytest.raises(InvalidRequestError):
        decode_body(DEMO, 0, data, True)


def test_tags_out_of_order_rejected():
    data = b"".join([b"\x02a", b"\x01", b"\x01", b"\x00", b"\x02", b"\x07\x00", b"\x03\x00"])
    with pytest.raises(InvalidRequestError):
        decode_body(DEMO, 2, data, True)


def test_uvarint_limits():
    for n in (0, 1, 127, 128, 300, 2**31 - 1):
        assert Reader(uvarint_bytes(n)).uvarint() == n
    with pytest.raises(InvalidRequestError):
        Reader(b"\xff\xff\xff\xff\xff\x01").uvarint()
    with pytest.raises(InvalidRequestError):
        Reader(b"\x80").uvarint()


def test_records_decode_is_a_zero_copy_view():
    buf = bytearray(encode_body(DEMO, 0, Req(name="", records=b"abcd"), True))
    obj = decode_body(DEMO, 0, buf, True)
    obj.records[0] = ord("z")
    assert b"zbcd" in buf
