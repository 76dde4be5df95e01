"""LogValidator paths: in-place assignment, rebuild/up-conversion, and every error it can give."""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
import zstandard

from broker.log_validator import ValidationConfig, ValidationError, validate_and_assign
from broker.topics import validation_config
from protocol import ErrorCode
from protocol.records import (
    TOMBSTONE_FLAG,
    Codec,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    compress,
    decompress,
    iter_batches,
)
from storage.config import ConfigModel

NOW = 1_700_000_000_000


def _batch(records, *, magic=2, codec=Codec.NONE, **kw) -> bytearray:
    b = RecordBatchBuilder(magic=magic, compression=codec, **kw)
    for key, value, ts, *headers in records:
        b.append(key, value, timestamp=ts, headers=headers[0] if headers else ())
    return bytearray(b.build())


def _validate(data, version=9, next_offset=100, config=ValidationConfig(), now=NOW, topic_partition="t-0"):
    return validate_and_assign(memoryview(data), produce_version=version, next_offset=next_offset,
                               now_ms=now, config=config, topic_partition=topic_partition)  # fmt: skip


def _records(result):
    return [r for batch in iter_batches(memoryview(bytes(result.data))) for r in batch]


RECS = [(b"k1", b"v1", NOW - 5), (b"k2", None, NOW - 1), (None, b"v3", NOW - 3)]


def test_uncompressed_v2_is_patched_in_place():
    data = _batch(RECS)
    result = _validate(data)
    assert result.converted_count == 0
    assert result.data.obj is data  # the request's own buffer, not a copy
    view = RecordBatchView(result.data)
    assert view.is_valid() and view.base_offset == 100 and view.last_offset == 102
    assert view.max_timestamp == NOW - 1
    assert [(r.offset, r.key, r.value) for r in _records(result)] == [
        (100, b"k1", b"v1"), (101, b"k2", None), (102, None, b"v3")]  # fmt: skip


def test_log_append_time_overwrites_timestamps():
    result = _validate(_batch(RECS), config=ValidationConfig(log_append_time=True))
    view = RecordBatchView(result.data)
    assert view.timestamp_type == TimestampType.LOG_APPEND_TIME and view.is_valid()
    assert {r.timestamp for r in _records(result)} == {NOW}
    assert result.log_append_time == NOW


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.SNAPPY, Codec.ZSTD])
def test_same_codec_keeps_compressed_payload(codec):
    data = _batch(RECS, codec=codec)
    payload = bytes(data[61:])
    result = _validate(data)
    assert result.converted_count == 0 and bytes(result.data[61:]) == payload
    assert [r.offset for r in _records(result)] == [100, 101, 102]


def test_topic_codec_recompresses():
    result = _validate(_batch(RECS, codec=Codec.GZIP), config=ValidationConfig(compression_type="lz4"))
    assert RecordBatchView(memoryview(bytes(result.data))).compression is Codec.LZ4
    assert result.converted_count == 3
    assert [(r.offset, r.value) for r in _records(result)] == [(100, b"v1"), (101, None), (102, b"v3")]


TEXT = [(f"k{i}".encode(), (" ".join(f"word{i * j % 37}" for j in range(60))).encode(), NOW) for i in range(200)]


@pytest.mark.parametrize("topic_codec, codec, level", [("gzip", Codec.GZIP, 1), ("lz4", Codec.LZ4, 12),
                                                       ("zstd", Codec.ZSTD, 19), ("lz4", Codec.LZ4, None),
                                                       ("gzip", Codec.GZIP, -1)])  # fmt: skip
def test_topic_codec_recompresses_at_the_topics_level(topic_codec, codec, level):
    config = ValidationConfig(compression_type=topic_codec, compression_level=level)
    result = _validate(_batch(TEXT), config=config)
    view = RecordBatchView(memoryview(bytes(result.data)))
    plain = decompress(codec, view.records_section)
    assert view.compression is codec and bytes(view.records_section) == compress(codec, plain, level=level)
    if level not in (None, -1):  # -1: gzip's default level
        assert bytes(view.records_section) != compress(codec, plain)  # not what the default level writes
    assert [(r.key, r.value) for r in _records(result)] == [(k, v) for k, v, _ in TEXT]


def test_same_codec_stays_in_place_whatever_the_topics_level():
    data = _batch(TEXT, codec=Codec.LZ4)
    payload = bytes(data[61:])
    result = _validate(data, config=ValidationConfig(compression_type="lz4", compression_level=3))
    assert result.converted_count == 0 and bytes(result.data[61:]) == payload


@pytest.mark.parametrize("overrides, level", [
    ({}, None), ({"compression.type": "gzip"}, -1), ({"compression.type": "gzip", "compression.gzip.level": "2"}, 2),
    ({"compression.type": "lz4"}, 9), ({"compression.type": "zstd", "compression.zstd.level": "-5"}, -5),
    ({"compression.type": "snappy", "compression.lz4.level": "4"}, None),
    ({"compression.type": "producer", "compression.lz4.level": "4"}, None),
])  # fmt: skip
def test_the_level_is_the_one_of_the_topics_codec(overrides, level):
    config = validation_config(ConfigModel.from_broker_props({}).effective(overrides))
    assert config.compression_level == level


@pytest.mark.parametrize("magic,codec", [(0, Codec.NONE), (1, Codec.NONE), (0, Codec.GZIP), (1, Codec.SNAPPY), (1, Codec.LZ4)])
def test_legacy_is_up_converted_to_one_v2_batch(magic, codec):
    result = _validate(_batch(RECS, magic=magic, codec=codec), version=2)
    batches = list(iter_batches(memoryview(bytes(result.data))))
    assert len(batches) == 1 and batches[0].magic == 2 and batches[0].compression is codec
    got = _records(result)
    assert [(r.offset, r.key, r.value) for r in got] == [(100, b"k1", b"v1"), (101, b"k2", None), (102, None, b"v3")]
    expected_ts = [-1, -1, -1] if magic == 0 else [NOW - 5, NOW - 1, NOW - 3]
    assert [r.timestamp for r in got] == expected_ts
    assert result.converted_count == 3


def test_tombstone_header_sets_the_flag_in_place():
    recs = [(b"k", b"payload", NOW, [("kafka.tombstone", b"1")]), (b"j", b"x", NOW)]
    result = _validate(_batch(recs), config=ValidationConfig(tombstone_header="kafka.tombstone"))
    got = _records(result)
    assert got[0].attributes & TOMBSTONE_FLAG and got[0].value == b"payload"
    assert got[0].headers == (("kafka.tombstone", b"1"),)
    assert not got[1].attributes & TOMBSTONE_FLAG
    assert RecordBatchView(result.data).is_valid()


def test_tombstone_header_in_compressed_batch_rebuilds():
    recs = [(b"k", b"payload", NOW, [("kafka.tombstone", b"")])]
    result = _validate(_batch(recs, codec=Codec.GZIP), config=ValidationConfig(tombstone_header="kafka.tombstone"))
    assert _records(result)[0].attributes & TOMBSTONE_FLAG


def _error(data, **kw) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _validate(data, **kw)
    return info.value


def test_bad_crc_is_corrupt_message():
    data = _batch(RECS)
    data[-1] ^= 0xFF
    assert _error(data).error_code == ErrorCode.CORRUPT_MESSAGE


def test_null_key_on_compacted_topic_is_invalid_record_with_record_errors():
    err = _error(_batch(RECS), config=ValidationConfig(compacted=True))
    assert err.error_code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in err.record_errors] == [2]


def test_timestamp_out_of_window_is_invalid_timestamp():
    err = _error(_batch(RECS), config=ValidationConfig(timestamp_before_max_ms=2, compacted=True))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP  # wins over the null-key error


def test_too_large_batch_is_message_too_large():
    data = _batch([(b"k", b"x" * 2000, NOW)])
    assert _error(data, config=ValidationConfig(max_message_bytes=1000)).error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_whole_set_over_segment_bytes_is_record_list_too_large():
    data = _batch([(b"k", b"x" * 2000, NOW)])
    assert _error(data, config=ValidationConfig(segment_bytes=1000)).error_code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_v3_needs_magic_2_and_one_batch():
    assert _error(_batch(RECS, magic=1), version=3).error_code == ErrorCode.INVALID_RECORD
    two = _batch(RECS) + _batch(RECS)
    assert _error(two, version=3).error_code == ErrorCode.INVALID_RECORD


MORE_THAN_ONE = "Compressed outer record has more than one batch"


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
def test_two_magic_2_batches_before_produce_v3_are_invalid_record(version, codec):
    err = _error(_batch(RECS, codec=codec) + _batch(RECS, codec=codec), version=version)
    assert (err.error_code, str(err)) == (ErrorCode.INVALID_RECORD, MORE_THAN_ONE)


@pytest.mark.parametrize("magic,version", [(0, 0), (0, 1), (1, 2)])
def test_two_compressed_legacy_wrappers_are_invalid_record(magic, version):
    two = _batch(RECS, magic=magic, codec=Codec.GZIP) + _batch(RECS, magic=magic, codec=Codec.GZIP)
    err = _error(two, version=version)
    assert (err.error_code, str(err)) == (ErrorCode.INVALID_RECORD, MORE_THAN_ONE)


@pytest.mark.parametrize("wrapper_first", [False, True])
def test_plain_legacy_message_beside_a_wrapper_is_invalid_record(wrapper_first):
    plain, wrapper = _batch(RECS[:1], magic=1), _batch(RECS[1:], magic=1, codec=Codec.SNAPPY)
    err = _error(wrapper + plain if wrapper_first else plain + wrapper, version=2)
    assert (err.error_code, str(err)) == (ErrorCode.INVALID_RECORD, MORE_THAN_ONE)


def test_size_and_crc_of_every_batch_are_checked_before_the_batch_count():
    second = _batch(RECS)
    second[-1] ^= 0xFF
    assert _error(_batch(RECS) + second, version=2).error_code == ErrorCode.CORRUPT_MESSAGE
    big = _batch([(b"k", b"x" * 2000, NOW)])
    err = _error(_batch(RECS) + big, version=2, config=ValidationConfig(max_message_bytes=1000))
    assert err.error_code == ErrorCode.MESSAGE_TOO_LARGE


@pytest.mark.parametrize("magic,version", [(0, 0), (0, 1), (1, 2)])
@pytest.mark.parametrize("topic_codec", ["producer", "gzip"])
def test_many_plain_legacy_messages_are_still_accepted(magic, version, topic_codec):
    plain = b"".join(_batch([rec], magic=magic) for rec in RECS)
    assert len(list(iter_batches(memoryview(plain)))) == 3
    result = _validate(plain, version=version, config=ValidationConfig(compression_type=topic_codec))
    assert [(r.offset, r.key, r.value) for r in _records(result)] == [
        (100, b"k1", b"v1"), (101, b"k2", None), (102, None, b"v3")]  # fmt: skip
    assert result.records_count == 3 and result.converted_count == 3


def test_non_zero_base_offset_and_count_mismatch_are_invalid_record():
    assert _error(_batch(RECS, base_offset=5)).error_code == ErrorCode.INVALID_RECORD


def test_zstd_before_produce_v7_is_unsupported():
    err = _error(_batch(RECS, codec=Codec.ZSTD), version=6)
    assert err.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_a_zstd_v2_batch_in_produce_v0_to_v2_is_stored():
    """Kafka's ``ProduceRequest.validateRecords`` looks at magic and codec from v3 only."""
    result = _validate(_batch(RECS, codec=Codec.ZSTD), version=2)
    assert RecordBatchView(result.data).compression is Codec.ZSTD
    assert [r.value for r in _records(result)] == [b"v1", None, b"v3"]


@pytest.mark.parametrize("version", [0, 2])
def test_a_zstd_legacy_wrapper_is_invalid_record(version):
    """Kafka's ``DeepRecordsIterator`` throws InvalidRecordException for a zstd wrapper of magic 0/1."""
    magic = 1 if version == 2 else 0
    wrapper = _legacy_message(magic, Codec.ZSTD, compress(Codec.ZSTD, bytes(_batch(RECS[:1], magic=magic))))
    assert _error(wrapper, version=version).error_code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_codec_ids_5_to_7_are_unknown_server_error(codec_id):
    """``CompressionType.forId`` throws IllegalArgumentException (no ApiException) in Kafka's
    ``analyzeAndValidateRecords``: the partition's answer is UNKNOWN_SERVER_ERROR, after the CRC check."""
    batch = _batch(RECS)
    batch[22] |= codec_id
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    assert _error(batch).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    batch[-1] ^= 1
    assert _error(batch).error_code == ErrorCode.CORRUPT_MESSAGE
    assert _error(_legacy_message(1, codec_id, b"x"), version=2).error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def _v2_with_payload(codec: Codec, payload: bytes) -> bytearray:
    """A 3-record v2 batch of ``codec`` whose records section is ``payload``, with a good CRC."""
    batch = _batch(RECS)[:61] + payload
    struct.pack_into(">iH", batch, 8, len(batch) - 12, 0)  # batchLength; the attributes' high byte
    batch[22] = codec
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
@pytest.mark.parametrize("how", ["garbage", "cut"])
def test_compressed_data_the_codec_cannot_read_is_unknown_server_error(codec, how):
    """Kafka's codec streams throw IOException (or fail to open), which ``DefaultRecordBatch`` and
    ``DeepRecordsIterator`` wrap in a plain KafkaException: UNKNOWN_SERVER_ERROR, not CORRUPT_MESSAGE."""
    whole = compress(codec, bytes(_batch(RECS)[61:]))
    payload = b"\x00\x01garbage" * 8 if how == "garbage" else whole[: len(whole) // 2]
    assert _error(_v2_with_payload(codec, payload)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    if codec is not Codec.ZSTD:
        wrapper = _legacy_message(1, codec, payload)
        assert _error(wrapper, version=2).error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_an_unsized_zstd_frame_cut_short_is_unknown_server_error_and_one_too_big_corrupt_message():
    """The Java producer's zstd-jni stream writes frames without a content size: one cut short is a stream
    error (UNKNOWN_SERVER_ERROR) as with a sized frame, and one past the decompression limit stays
    CORRUPT_MESSAGE; both fail the first decompression budgets alike (review12)."""
    unsized = zstandard.ZstdCompressor(write_content_size=False)
    whole = unsized.compress(bytes(_batch(RECS)[61:]))
    assert _error(_v2_with_payload(Codec.ZSTD, whole[: len(whole) // 2])).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    bomb = unsized.compress(b"\x00" * (65 << 20))  # over 64 x max.message.bytes (1 MiB)
    assert _error(_v2_with_payload(Codec.ZSTD, bomb)).error_code == ErrorCode.CORRUPT_MESSAGE


def test_compressed_data_past_the_decompression_limit_stays_corrupt_message():
    bomb = compress(Codec.GZIP, b"\x00" * (65 << 20))  # over 64 x max.message.bytes (1 MiB)
    assert _error(_v2_with_payload(Codec.GZIP, bomb)).error_code == ErrorCode.CORRUPT_MESSAGE


def _legacy_message(magic: int, attributes: int, value: bytes) -> bytes:
    """One magic 0/1 message at offset 0 with a null key and a good CRC."""
    body = bytes([magic, attributes]) + (struct.pack(">q", NOW) if magic else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def test_only_a_truncated_batch_is_invalid_record_and_junk_after_a_batch_is_dropped():
    data = _batch(RECS)
    assert _error(data[:-3]).error_code == ErrorCode.INVALID_RECORD
    result = _validate(data + b"\x00\x00\x00")
    assert len(result.data) == len(data) - 0 and result.last_offset == 102


def test_framing_error_is_corrupt_message():
    assert _error(bytearray(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x02" * 10)).error_code == ErrorCode.CORRUPT_MESSAGE


def _claiming_append_time(records, append_time, **kw) -> bytearray:
    return _batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=append_time, **kw)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
@pytest.mark.parametrize("topic_codec", ["producer", "lz4"])  # in place, rebuilt
def test_a_batch_claiming_log_append_time_on_a_create_time_topic_is_stored_as_create_time(codec, topic_codec):
    """Kafka's validateTimestamp range-checks the records' timestamp (the batch's max timestamp) instead."""
    data = _claiming_append_time(RECS, NOW - 7, codec=codec)
    result = _validate(data, config=ValidationConfig(compression_type=topic_codec, timestamp_before_max_ms=10))
    view = next(iter_batches(memoryview(bytes(result.data))))
    assert (view.timestamp_type, view.max_timestamp, result.max_timestamp) == (TimestampType.CREATE_TIME, NOW - 7,
                                                                               NOW - 7)  # fmt: skip
    assert result.log_append_time == -1 and len(_records(result)) == 3


def test_a_batch_claiming_log_append_time_is_range_checked_as_its_max_timestamp():
    data = _claiming_append_time(RECS[:2], NOW - 11)
    err = _error(data, config=ValidationConfig(timestamp_before_max_ms=10, timestamp_after_max_ms=10))
    assert (err.error_code, str(err)) == (ErrorCode.INVALID_TIMESTAMP,
                                          "One or more records have been rejected due to invalid timestamp")
    assert err.record_errors == [(i, f"Timestamp {NOW - 11} of message with offset {i} is out of range. The "
                                     f"timestamp should be within [{NOW - 10}, {NOW + 10}]") for i in (0, 1)]


@pytest.mark.parametrize(("log_append_time", "append_time"), [(True, NOW), (False, -1)])
def test_a_producer_claiming_log_append_time_is_refused_per_record(log_append_time, append_time):
    """On a LogAppendTime topic, or without a timestamp, every record gets Kafka's error."""
    err = _error(_claiming_append_time(RECS[:2], append_time), config=ValidationConfig(log_append_time=log_append_time))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP
    assert err.record_errors == [
        (i, f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={append_time}, key=2 bytes, "
            f"value={2 if value else 0} bytes). Producer should not set timestamp type to LogAppendTime.")
        for i, (_key, value, _ts) in enumerate(RECS[:2])]  # fmt: skip


def test_a_record_without_a_key_on_a_compacted_topic_gets_only_the_key_error():
    """Kafka's validateRecord checks the key first and stops there: the timestamp of that record is not looked at."""
    records = [(None, b"v", NOW - 10_000), (b"k", b"v", NOW)]
    err = _error(_batch(records), config=ValidationConfig(compacted=True, timestamp_before_max_ms=1000),
                 topic_partition="logs-3")  # fmt: skip
    key_error = "Compacted topic cannot accept message without key in topic partition logs-3"
    assert (err.error_code, err.record_errors) == (ErrorCode.INVALID_RECORD, [(0, key_error)])
    assert str(err) == ("One or more records have been rejected due to 1 record errors in total, and only showing "
                        f"the first three errors at most: [RecordError(batchIndex=0, message='{key_error}')]")


def test_the_invalid_record_summary_shows_the_first_three_errors():
    err = _error(_batch([(None, b"v", NOW)] * 4), config=ValidationConfig(compacted=True), topic_partition="t-0")
    assert [i for i, _ in err.record_errors] == [0, 1, 2, 3]
    assert str(err).startswith("One or more records have been rejected due to 4 record errors in total")
    assert str(err).count("RecordError(batchIndex=") == 3 and "batchIndex=2" in str(err)


def test_a_bound_at_long_max_shows_as_java_long_arithmetic_leaves_it():
    err = _error(_batch([(b"k", b"v", NOW - 11)]), config=ValidationConfig(timestamp_before_max_ms=10))
    assert err.record_errors[0][1].endswith(f"should be within [{NOW - 10}, {NOW + 2**63 - 1 - 2**64}]")


def test_partition_level_errors_carry_no_record_errors():
    """What the Produce handler answers without ``error_message`` (Kafka's hasCustomErrorMessage = false)."""
    corrupt = _batch(RECS)
    corrupt[-1] ^= 0xFF
    assert _error(corrupt).record_errors == []
    assert _error(_batch(RECS), config=ValidationConfig(max_message_bytes=10)).record_errors == []
