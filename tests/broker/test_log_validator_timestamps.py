"""Record timestamps at the edges of Java's long: ``baseTimestamp + timestampDelta`` wraps, as in Kafka.

In place (Kafka's assignOffsetsNonCompressed and the same-codec compressed
path) a wrapped timestamp is stored and the batch's ``maxTimestamp`` is the
largest wrapped one; a rebuilt batch (codec change, legacy up-conversion) may
not carry a negative timestamp other than -1 (Kafka's MemoryRecordsBuilder
throws, ReplicaManager answers UNKNOWN_SERVER_ERROR without a message); the
``message.timestamp.before/after.max.ms`` checks subtract in long arithmetic.
"""

from __future__ import annotations

import struct

import crc32c
import pytest

from broker.log_validator import ValidationConfig, ValidationError, validate_and_assign
from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder, RecordBatchView, iter_batches

NOW = 1_700_000_000_000
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def _crafted(stamps: list[int], base: int, max_ts: int, codec=Codec.NONE) -> bytearray:
    """A batch of records ``k``/``v<i>`` whose timestamp deltas are ``stamps[i] - stamps[0]``, then ``base`` and
    ``max_ts`` written over its header (CRC fixed): the records' timestamps are ``base + delta``, wrapped."""
    b = RecordBatchBuilder(compression=codec)
    for i, ts in enumerate(stamps):
        b.append(b"k", b"v%d" % i, timestamp=ts)
    data = bytearray(b.build())
    struct.pack_into(">qq", data, 27, base, max_ts)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return data


def _validate(data, config=ValidationConfig(), version=9):
    return validate_and_assign(memoryview(data), produce_version=version, next_offset=100, now_ms=NOW,
                               config=config, topic_partition="t-0")  # fmt: skip


def _error(data, **kw) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _validate(data, **kw)
    return info.value


def _stamps(result) -> list[int]:
    return [r.timestamp for batch in iter_batches(memoryview(bytes(result.data))) for r in batch]


BELOW_MIN = dict(stamps=[1000, 900], base=LONG_MIN + 10, max_ts=LONG_MIN + 10)  # 2nd: Long.MIN - 90 -> wraps
ABOVE_MAX = dict(stamps=[0, 1000], base=LONG_MAX - 500, max_ts=LONG_MAX)  # 2nd: Long.MAX + 500 -> wraps


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
def test_in_place_stores_wrapped_timestamps_with_the_largest_as_max_timestamp(codec):
    result = _validate(_crafted(**BELOW_MIN, codec=codec))
    view = RecordBatchView(result.data)
    assert result.converted_count == 0 and view.is_valid()
    assert view.max_timestamp == result.max_timestamp == LONG_MAX - 89
    assert _stamps(result) == [LONG_MIN + 10, LONG_MAX - 89]


def test_in_place_above_long_max_wraps_to_negative_and_keeps_the_base_as_max():
    result = _validate(_crafted(**ABOVE_MAX))
    assert RecordBatchView(result.data).max_timestamp == result.max_timestamp == LONG_MAX - 500
    assert _stamps(result) == [LONG_MAX - 500, LONG_MIN + 499]


@pytest.mark.parametrize("case, first_negative", [(BELOW_MIN, LONG_MIN + 10), (ABOVE_MAX, LONG_MIN + 499)],
                         ids=["below-min", "above-max"])  # fmt: skip
def test_a_rebuild_refuses_a_wrapped_timestamp_as_an_unknown_server_error(case, first_negative):
    err = _error(_crafted(**case), config=ValidationConfig(compression_type="gzip"))
    assert err.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and err.record_errors == []
    assert str(err) == f"Invalid negative timestamp {first_negative}"


def test_a_rebuild_refuses_any_negative_timestamp_but_minus_one():
    negative = _crafted([5, 6], base=-5, max_ts=-4)
    assert _validate(bytearray(negative)).max_timestamp == -1  # in place: stored as Kafka stores it
    err = _error(negative, config=ValidationConfig(compression_type="gzip"))
    assert (err.error_code, str(err)) == (ErrorCode.UNKNOWN_SERVER_ERROR, "Invalid negative timestamp -5")
    falling = _crafted([5, 3, 4], base=-2, max_ts=-2)  # -2, -4, -3: the scan's smallest is named
    assert str(_error(falling, config=ValidationConfig(compression_type="gzip"))) == "Invalid negative timestamp -4"
    minus_one = _crafted([5, 6], base=-1, max_ts=0)
    assert _stamps(_validate(minus_one, config=ValidationConfig(compression_type="gzip"))) == [-1, 0]


def test_legacy_up_conversion_refuses_a_negative_timestamp():
    b = RecordBatchBuilder(magic=1)
    b.append(b"k", b"v", timestamp=-7)
    err = _error(bytearray(b.build()), version=2)
    assert (err.error_code, str(err)) == (ErrorCode.UNKNOWN_SERVER_ERROR, "Invalid negative timestamp -7")


def test_record_errors_win_over_the_negative_timestamp_of_a_rebuild():
    data = _crafted([5, 6], base=-5, max_ts=-4)
    err = _error(data, config=ValidationConfig(compression_type="gzip", timestamp_after_max_ms=0,
                                               timestamp_before_max_ms=0))  # fmt: skip
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP


def test_the_timestamp_window_subtracts_in_long_arithmetic():
    """now - (Long.MIN + 10) wraps negative, so Kafka's "before" bound lets it through; -diff is then just
    under Long.MAX, which only a bounded "after" catches."""
    data = _crafted([1000], base=LONG_MIN + 10, max_ts=LONG_MIN + 10)
    before_only = ValidationConfig(timestamp_before_max_ms=3_600_000)
    assert _stamps(_validate(bytearray(data), config=before_only)) == [LONG_MIN + 10]
    err = _error(data, config=ValidationConfig(timestamp_after_max_ms=3_600_000))
    assert err.error_code == ErrorCode.INVALID_TIMESTAMP and err.record_errors[0][0] == 0


def test_a_struct_error_from_a_record_field_is_the_partitions_invalid_record(monkeypatch):
    """Backstop: whatever field no header slot can hold is answered as a bad record, never a dropped connection."""
    import broker.log_validator as lv

    def overflowing(*_args):
        raise struct.error("int too large to convert")

    monkeypatch.setattr(lv, "_in_place", overflowing)
    err = _error(_crafted([1, 2], base=1, max_ts=2))
    assert err.error_code == ErrorCode.INVALID_RECORD and err.record_errors == []
