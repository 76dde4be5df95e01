"""The compiled codec on small hand-declared schemas, with annotated byte vectors."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import InvalidRequestError, StringTooLongError
from protocol.codec import decode_body, encode_body
from protocol.messages import message_class
from protocol.primitives import Reader, java_int, uvarint_bytes
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
    ],
)
def test_malformed_bodies_raise_invalid_request(data):
    with pytest.raises(InvalidRequestError):
        decode_body(DEMO, 0, data, True)


_V2_PLAIN = b"\x02a" + b"\x01" + b"\x01" + b"\x00"  # v2: name "a", no ids, no topics, null records


def test_tags_in_any_order_and_sent_twice_are_read_as_kafka_reads_them():
    """Kafka's generated readers take the tags as they come: no order check, a repeated tag read again."""
    unordered = decode_body(DEMO, 2, _V2_PLAIN + b"\x02" + b"\x07\x00" + b"\x03\x00", True)
    assert unordered.unknown_tagged_fields == {7: b"", 3: b""}
    twice = decode_body(DEMO, 2, _V2_PLAIN + b"\x02" + b"\x01\x02\x02x" + b"\x01\x02\x02y", True)
    assert twice.note == "y" and twice.unknown_tagged_fields == {}
    assert encode_body(DEMO, 2, twice, True) == _V2_PLAIN + b"\x01" + b"\x01\x02\x02y"


def test_a_tag_count_that_is_negative_as_a_java_int_reads_no_tags():
    obj = decode_body(DEMO, 2, _V2_PLAIN + b"\xff\xff\xff\xff\x0f" + b"garbage", True)  # 0xffffffff: -1
    assert obj.name == "a" and obj.unknown_tagged_fields == {}


def test_uvarint_limits():
    for n in (0, 1, 127, 128, 300, 2**31 - 1):
        assert Reader(uvarint_bytes(n)).uvarint() == n
    with pytest.raises(InvalidRequestError):
        Reader(b"\xff\xff\xff\xff\xff\x01").uvarint()
    with pytest.raises(InvalidRequestError):
        Reader(b"\x80").uvarint()


@pytest.mark.parametrize(
    "data,value",
    [
        (b"\xff\xff\xff\xff\x0f", -1),  # 2^32 - 1: all 32 bits set
        (b"\x80\x80\x80\x80\x08", -(2**31)),  # 2^31
        (b"\x81\x80\x80\x80\x10", 1),  # 2^32 + 1: the 33rd bit is dropped
        (b"\x80\x80\x80\x80\x00", 0),  # zero in five bytes
    ],
)
def test_a_five_byte_uvarint_keeps_32_bits_as_a_java_int(data, value):
    assert Reader(data).uvarint() == value


def test_compact_lengths_wrap_as_java_ints():
    """The uvarint 2^31 is Integer.MIN_VALUE, less one Integer.MAX_VALUE: a length too long, not a null."""
    with pytest.raises(InvalidRequestError, match="exceeds"):
        Reader(b"\x80\x80\x80\x80\x08").length(compact=True, nullable=True)
    assert Reader(b"\x80\x80\x80\x80\x10").length(compact=True, nullable=True) is None  # 2^32: 0, null


@given(st.integers(min_value=0, max_value=(1 << 35) - 1))
def test_uvarints_and_compact_lengths_read_as_java_ints_for_every_width(n):
    """Kafka's readUnsignedVarint keeps the low 32 bits as a signed int, and ``readUnsignedVarint() - 1`` is
    int arithmetic: the reads agree with that for every value of one to five bytes (the reader wraps only
    where a fifth byte is read)."""
    encoded = uvarint_bytes(n)
    value = java_int(n)
    assert Reader(encoded).uvarint() == value
    assert Reader(encoded).compact_length() == java_int(value - 1)


def test_strings_not_utf8_decode_with_replacement_characters():
    """Kafka's readString is Java's ``new String(bytes, UTF_8)``: bad bytes become U+FFFD, no error."""
    obj = decode_body(DEMO, 0, struct.pack(">h", 4) + b"a\xffb\xed" + b"\x00" * 12, True)
    assert obj.name == "a\ufffdb\ufffd"


def test_any_negative_length_of_a_nullable_field_is_null():
    """Kafka's generated readers test ``length < 0``, not ``== -1``, for nullable strings, bytes and arrays."""
    v1 = struct.pack(">h", -2) + struct.pack(">i", 0) + struct.pack(">i", 0) + struct.pack(">i", -7)
    obj = decode_body(DEMO, 1, v1, True)
    assert obj.name is None and obj.records is None
    flexible = b"\x00" + b"\x01" + b"\xff\xff\xff\xff\x0f" + b"\x00" + b"\x00"  # topics: 0xffffffff, -2 less 1
    assert decode_body(DEMO, 2, flexible, True).topics is None


def test_a_compact_string_over_0x7fff_bytes_is_refused():
    name = b"a" * 0x8000
    with pytest.raises(InvalidRequestError, match="invalid length 32768"):
        decode_body(DEMO, 2, uvarint_bytes(len(name) + 1) + name + b"\x01\x01\x00\x00", True)
    ok = decode_body(DEMO, 2, uvarint_bytes(0x7FFF + 1) + name[:-1] + b"\x01\x01\x00\x00", True)
    assert len(ok.name) == 0x7FFF


def test_records_decode_is_a_zero_copy_view():
    buf = bytearray(encode_body(DEMO, 0, Req(name="", records=b"abcd"), True))
    obj = decode_body(DEMO, 0, buf, True)
    obj.records[0] = ord("z")
    assert b"zbcd" in buf


def test_a_known_tag_is_read_by_its_type_whatever_its_size_says():
    """Kafka's generated readers (MessageDataGenerator's ``case <tag>:``) read a known tagged field straight from
    the message and never look at its size: the next tag is read where the value ended."""
    longer = decode_body(DEMO, 2, _V2_PLAIN + b"\x02" + b"\x01\x05\x02x" + b"\x07\x00", True)
    assert longer.note == "x" and longer.unknown_tagged_fields == {7: b""}
    shorter = decode_body(DEMO, 2, _V2_PLAIN + b"\x01" + b"\x01\x00\x02y", True)
    assert shorter.note == "y"
    with pytest.raises(InvalidRequestError):  # a value that runs past the message
        decode_body(DEMO, 2, _V2_PLAIN + b"\x01" + b"\x01\x02\x09x", True)


def test_a_tag_the_struct_has_in_other_versions_only_is_an_invalid_request():
    """Kafka: ``throw new RuntimeException("Tag 0 is not valid for version 2")``, so the request does not parse."""
    topic = b"\x02t" + struct.pack(">i", 3)  # Topic at v2: topic, epoch; its "lag" is tag 0 from v3 only
    body = b"\x02a" + b"\x01" + b"\x02" + topic + b"%s" + b"\x00" + b"\x00"
    assert decode_body(DEMO, 2, body % b"\x00", True).topics[0].epoch == 3
    with pytest.raises(InvalidRequestError):
        decode_body(DEMO, 2, body % (b"\x01\x00\x08" + bytes(8)), True)
    v3 = b"\x02a" + b"\x01" + b"\x02" + topic + b"\x01\x00\x08" + struct.pack(">q", 9) + b"\x00" + bytes(16) + b"\x00"
    assert decode_body(DEMO, 3, v3, True).topics[0].lag == 9  # then records null, topic_id, no tags


@pytest.mark.parametrize("version", [0, 2])  # classic, compact
def test_a_string_over_0x7fff_bytes_is_never_written(version):
    """Kafka's generated writers throw "'<field>' field is too long to be serialized" for either encoding:
    a classic int16 length would overflow, a compact one would exceed what any Kafka reader takes."""
    assert decode_body(DEMO, version, encode_body(DEMO, version, Req(name="é" * 16383 + "x"), True), True).name
    with pytest.raises(StringTooLongError):
        encode_body(DEMO, version, Req(name="é" * 16384), True)  # 32768 bytes
