"""Legacy (magic 0/1) produce input whose attributes claim LogAppendTime, as Kafka's LogValidator takes it.

Kafka reads the claim per message: magic 0 has no timestamp type at all (bit
3 means nothing there), and a magic-1 message's bit is what its
``timestampType()`` reports. ``validateTimestamp`` only looks at that type
when the record's timestamp goes unchecked, that is on a LogAppendTime topic
or when the timestamp is -1: then the record is refused with
INVALID_TIMESTAMP. On a CreateTime topic a claimed message with a timestamp
is taken, range-checked and stored as CreateTime with that timestamp; the
inner records of a compressed wrapper claiming LogAppendTime all read the
wrapper's timestamp (``LegacyRecord.timestamp``). Each plain message is a
batch of its own in Kafka, so the first one that fails decides the error.
"""

from __future__ import annotations

import pytest

from broker.log_validator import ValidationConfig, ValidationError, validate_and_assign
from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder, TimestampType, compress, iter_batches
from protocol.records._legacy_writer import encode_message
from protocol.records.legacy import TIMESTAMP_TYPE_FLAG

NOW = 1_700_000_000_000
LAT = TimestampType.LOG_APPEND_TIME


def _legacy(records, *, magic=1, codec=Codec.NONE, **kw) -> bytearray:
    b = RecordBatchBuilder(magic=magic, compression=codec, **kw)
    for key, value, ts in records:
        b.append(key, value, timestamp=ts)
    return bytearray(b.build())


def _validate(data, config=ValidationConfig(), version=2):
    return validate_and_assign(memoryview(data), produce_version=version, next_offset=10, now_ms=NOW,
                               config=config, topic_partition="t-0")  # fmt: skip


def _error(data, config=ValidationConfig(), version=2) -> ValidationError:
    with pytest.raises(ValidationError) as failed:
        _validate(data, config, version)
    return failed.value


def _stored(result):
    (batch,) = iter_batches(memoryview(bytes(result.data)))
    return batch.timestamp_type, [(r.offset, r.timestamp, r.key) for r in batch]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_plain_v1_message_claiming_log_append_time_keeps_its_timestamp_as_create_time(version):
    data = _legacy([(b"a", b"1", NOW - 5), (b"b", b"2", NOW - 2)], timestamp_type=LAT, log_append_time=NOW - 7)
    result = _validate(data, version=version)  # every message carries NOW - 7 and the bit
    assert _stored(result) == (TimestampType.CREATE_TIME, [(10, NOW - 7, b"a"), (11, NOW - 7, b"b")])
    assert (result.max_timestamp, result.log_append_time) == (NOW - 7, -1)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
def test_a_v1_wrapper_claiming_log_append_time_gives_every_record_its_timestamp(codec):
    data = _legacy([(b"a", b"1", NOW - 5), (b"b", b"2", NOW - 2)], codec=codec, timestamp_type=LAT,
                   log_append_time=NOW - 9)  # fmt: skip
    assert _stored(_validate(data)) == (TimestampType.CREATE_TIME, [(10, NOW - 9, b"a"), (11, NOW - 9, b"b")])


def test_the_claimed_timestamp_is_range_checked_on_a_create_time_topic():
    data = _legacy([(b"a", b"1", NOW)], codec=Codec.GZIP, timestamp_type=LAT, log_append_time=NOW - 60_000)
    err = _error(data, ValidationConfig(timestamp_before_max_ms=1000))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP and [i for i, _ in err.record_errors] == [0]


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
@pytest.mark.parametrize(("topic_lat", "claimed_ts"), [(True, NOW - 7), (False, -1)])
def test_a_claim_kafka_reads_is_invalid_timestamp(codec, topic_lat, claimed_ts):
    """On a LogAppendTime topic, or with no timestamp to check, the claim itself is refused, record by record."""
    data = _legacy([(b"a", b"1", NOW), (b"b", b"2", NOW)], codec=codec, timestamp_type=LAT, log_append_time=claimed_ts)
    err = _error(data, ValidationConfig(log_append_time=topic_lat))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in err.record_errors] == ([0] if codec is Codec.NONE else [0, 1])  # a plain message: its own
    assert err.record_errors[0][1].endswith("Producer should not set timestamp type to LogAppendTime.")


def _wrapped(magic: int, codec: Codec, attributes: int, inner: bytes, ts: int = -1) -> bytearray:
    """A compressed legacy wrapper around ``inner`` with the given extra attribute bits."""
    value = compress(codec, inner, magic=magic)
    return bytearray(encode_message(magic, 1, attributes | int(codec), ts, None, value))


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
@pytest.mark.parametrize("topic_lat", [True, False])
def test_magic_0_has_no_timestamp_type_so_the_bit_is_ignored(codec, topic_lat):
    flag = TIMESTAMP_TYPE_FLAG if codec is Codec.NONE else 0
    plain = b"".join(encode_message(0, i, flag, -1, b"k%d" % i, b"v") for i in range(2))
    data = bytearray(plain) if codec is Codec.NONE else _wrapped(0, codec, TIMESTAMP_TYPE_FLAG, plain)
    ts = NOW if topic_lat else -1
    assert _stored(_validate(data, ValidationConfig(log_append_time=topic_lat))) == (
        LAT if topic_lat else TimestampType.CREATE_TIME, [(10, ts, b"k0"), (11, ts, b"k1")])  # fmt: skip


def test_an_inner_message_claim_is_not_read_under_a_create_time_wrapper():
    """Kafka gives inner v1 records their wrapper's timestamp type, so an inner bit changes nothing."""
    inner = b"".join(encode_message(1, i, TIMESTAMP_TYPE_FLAG, NOW - i, b"k%d" % i, b"v") for i in range(2))
    data = _wrapped(1, Codec.GZIP, 0, inner, NOW)
    assert _stored(_validate(data)) == (TimestampType.CREATE_TIME, [(10, NOW, b"k0"), (11, NOW - 1, b"k1")])


def test_the_first_plain_message_that_fails_decides_the_error():
    """Each plain message is its own batch in Kafka: its errors are raised before the next one is looked at."""
    null_key = encode_message(1, 0, 0, NOW, None, b"v")
    claimed = encode_message(1, 1, TIMESTAMP_TYPE_FLAG, -1, b"k", b"v")
    err = _error(bytearray(null_key + claimed), ValidationConfig(compacted=True))
    assert (err.error_code, [i for i, _ in err.record_errors]) == (ErrorCode.INVALID_RECORD, [0])
    err = _error(bytearray(claimed + null_key), ValidationConfig(compacted=True))
    assert (err.error_code, [i for i, _ in err.record_errors]) == (ErrorCode.INVALID_TIMESTAMP, [0])
    other_magic = encode_message(0, 2, 0, -1, b"k", b"v")
    err = _error(bytearray(claimed + other_magic))  # the claim fails before the magic is compared
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP
    err = _error(bytearray(encode_message(1, 0, 0, NOW, b"k", b"v") + other_magic + claimed))
    assert (err.error_code, err.record_errors) == (ErrorCode.INVALID_RECORD, [])


def test_with_no_codec_to_apply_a_negative_timestamp_fails_before_the_next_message_is_read():
    """Kafka's uncompressed up-conversion hands each message to the builder once it passed; with a codec to
    apply, every message is checked before any is built."""
    negative = encode_message(1, 0, 0, -7, b"k", b"v")
    claimed = encode_message(1, 1, TIMESTAMP_TYPE_FLAG, -1, b"k", b"v")
    assert _error(bytearray(negative + claimed)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    err = _error(bytearray(negative + claimed), ValidationConfig(compression_type="gzip"))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP
