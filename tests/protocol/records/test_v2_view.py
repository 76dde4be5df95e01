"""RecordBatchView: header fields, flags, LogAppendTime and malformed-record errors."""

from __future__ import annotations

import struct

import pytest

from protocol.errors import CorruptRecordError, InvalidRecordError, UnknownCodecError
from protocol.records import Codec, RecordBatchBuilder, RecordBatchView, TimestampType, iter_batches
from protocol.records.v2 import HEADER
from protocol.records.varint import encode_varint

from .helpers import raw_batch, raw_record


def _build(**kwargs) -> bytes:
    b = RecordBatchBuilder(**kwargs)
    b.append(b"a", b"1", timestamp=500)
    b.append(b"b", b"2", timestamp=900, offset=kwargs.get("base_offset", 0) + 5)
    b.append(b"c", b"3", timestamp=700)
    return b.build()


def test_header_fields_match_builder_arguments():
    data = _build(
        base_offset=100, producer_id=42, producer_epoch=3, base_sequence=7,
        is_transactional=True, partition_leader_epoch=9,
    )  # fmt: skip
    v = RecordBatchView(memoryview(data))
    assert (v.base_offset, v.last_offset_delta, v.last_offset, v.next_offset) == (100, 6, 106, 107)
    assert (v.producer_id, v.producer_epoch, v.base_sequence) == (42, 3, 7)
    assert v.partition_leader_epoch == 9 and v.magic == 2 and v.records_count == 3
    assert (v.base_timestamp, v.max_timestamp) == (500, 900)
    assert v.size_in_bytes == len(data) == v.batch_length + 12
    assert v.is_transactional and not v.is_control and not v.has_delete_horizon
    assert v.delete_horizon_ms is None and v.timestamp_type == TimestampType.CREATE_TIME
    assert [r.offset for r in v] == [100, 105, 106]
    assert [r.timestamp for r in v] == [500, 900, 700]


def test_header_struct_is_61_bytes_and_matches_kafka_offsets():
    assert HEADER.size == 61
    data = _build(base_offset=0x0102030405060708)
    assert struct.unpack_from(">q", data, 0)[0] == 0x0102030405060708
    assert data[16] == 2


def test_delete_horizon_uses_base_timestamp_and_bit_6():
    data = _build(delete_horizon_ms=123_456)
    v = RecordBatchView(data)
    assert v.has_delete_horizon and v.delete_horizon_ms == 123_456 == v.base_timestamp
    assert v.attributes & 0x40
    assert [r.timestamp for r in v] == [500, 900, 700]  # deltas still give the real timestamps


def test_control_flag_and_empty_batch():
    data = RecordBatchBuilder.empty_batch(
        base_offset=10, last_offset=19, max_timestamp=777, producer_id=5, producer_epoch=1, base_sequence=3
    )
    v = RecordBatchView(data)
    assert v.records_count == 0 and v.base_timestamp == -1 and v.max_timestamp == 777
    assert (v.base_offset, v.last_offset, v.producer_id) == (10, 19, 5)
    assert v.is_valid() and list(v) == []
    assert RecordBatchView(_build(is_control=True)).is_control


def test_log_append_time_gives_every_record_the_max_timestamp():
    data = _build(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=99_999)
    v = RecordBatchView(data)
    assert v.timestamp_type == TimestampType.LOG_APPEND_TIME and v.max_timestamp == 99_999
    assert [r.timestamp for r in v] == [99_999] * 3


def test_view_is_limited_to_its_own_batch():
    data = _build() + b"trailing junk"
    v = RecordBatchView(data)
    assert len(v.buffer) == v.size_in_bytes and v.is_valid()


@pytest.mark.parametrize("cut", [0, 10, 60])
def test_truncated_or_tiny_batches_are_corrupt(cut):
    with pytest.raises(CorruptRecordError):
        RecordBatchView(_build()[:cut])


def test_batch_length_below_header_is_corrupt():
    data = bytearray(_build())
    struct.pack_into(">i", data, 8, 40)
    with pytest.raises(CorruptRecordError):
        RecordBatchView(data)


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids_raise(codec_id):
    v = RecordBatchView(raw_batch(raw_record(), 1, attributes=codec_id))
    with pytest.raises(UnknownCodecError):
        _ = v.compression
    with pytest.raises(UnknownCodecError):
        list(v)


def _with_length(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


MALFORMED = {
    "length too long": (raw_record(length_adjust=1), 1),
    "length too short": (raw_record(length_adjust=-1), 1),
    "negative header count": (raw_record(header_count=-1), 1),
    "header count over remaining bytes": (raw_record(header_count=1000), 1),
    "null header key": (raw_record(headers=[(None, b"x")]), 1),
    "truncated record": (raw_record(key=b"abc")[:-1], 1),
    "underflow: count too large": (raw_record(), 2),
    "leftover bytes: count too small": (raw_record() * 2, 1),
    "negative record count": (raw_record(), -1),
    "varint too long": (b"\xff\xff\xff\xff\xff\x01" + raw_record(), 1),
    "varlong too long": (_with_length(b"\x00" + b"\xff" * 10 + b"\x01" + b"\x00\x02k\x02v\x00"), 1),
}


REASONS = {
    "negative header count": "number of record headers",
    "header count over remaining bytes": "number of record headers",
    "null header key": "header key",
    "leftover bytes: count too small": "remaining",
    "negative record count": "record count",
    "varint too long": "Varint is too long",
    "varlong too long": "Varlong is too long",
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_records_raise_invalid_record(name):
    records, count = MALFORMED[name]
    v = RecordBatchView(raw_batch(records, count))
    assert v.is_valid()  # the CRC is fine; the records are not
    with pytest.raises(InvalidRecordError, match=REASONS.get(name)):
        list(v)


def test_record_fields_decoded_from_hand_encoded_bytes():
    rec = raw_record(attributes=1, ts_delta=-5, offset_delta=3, key=None, value=b"", headers=[(b"k", None)])
    v = RecordBatchView(raw_batch(rec, 1, base_offset=50, base_ts=10_000))
    (r,) = list(v)
    assert (r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) == (53, 9_995, None, b"", (("k", None),), 1)


def test_compressed_records_region_must_match_count():
    b = RecordBatchBuilder(compression=Codec.GZIP)
    for i in range(3):
        b.append(b"k", b"v", timestamp=i)
    data = bytearray(b.build())
    struct.pack_into(">i", data, 57, 2)  # records_count 3 -> 2: leftover bytes
    with pytest.raises(InvalidRecordError):
        list(RecordBatchView(data))


def test_iter_tuples_matches_records():
    v = RecordBatchView(_build())
    assert [tuple(t) for t in v.iter_tuples()] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for r in v
    ]


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.LZ4])
def test_records_readable_reads_uncompressed_records_in_place(codec):
    b = RecordBatchBuilder(compression=codec)
    for i in range(5):
        b.append(b"k%d" % i, b"v" * i, timestamp=1_700_000_000_000)
    data = bytearray(b.build())
    view = next(iter_batches(data))
    readable = view.records_readable()
    assert bytes(readable) == view.records_payload()
    if codec is Codec.NONE:  # a view of the batch itself: no copy
        assert isinstance(readable, memoryview) and readable.obj is data
    else:
        assert isinstance(readable, bytes)


LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


@pytest.mark.parametrize(
    "base, delta, timestamp",
    [
        (LONG_MIN + 10, -100, LONG_MAX - 89),  # a short delta from a base near the end: wrapped after the loop
        (LONG_MAX - 500, 1000, LONG_MIN + 499),
        (1 << 62, 3 << 61, LONG_MIN + (1 << 61)),  # a long delta from any base: wrapped where it is read
        (-(1 << 62), -(3 << 61), LONG_MAX - (1 << 61) + 1),
        (LONG_MIN + (1 << 21) + 1, -(1 << 20), LONG_MIN + (1 << 20) + 1),  # the closest a base gets unwrapped
        (LONG_MAX, LONG_MAX, -2),
    ],
)
def test_a_timestamp_is_base_plus_delta_wrapped_as_a_java_long(base, delta, timestamp):
    records = raw_record(ts_delta=0, offset_delta=0) + raw_record(ts_delta=delta, offset_delta=1)
    view = RecordBatchView(bytearray(raw_batch(records, 2, base_ts=base, max_ts=base)))
    assert [r.timestamp for r in view] == [base, timestamp]
    assert [t[1] for t in view.iter_tuples()] == [base, timestamp]
