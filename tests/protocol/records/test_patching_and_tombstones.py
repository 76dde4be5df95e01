"""In-place patching keeps or recomputes the CRC; any flipped covered byte is caught; tombstone rule."""

from __future__ import annotations

import pytest

from protocol.errors import CorruptRecordError
from protocol.records import (
    TOMBSTONE_FLAG,
    Codec,
    Record,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    is_tombstone,
)
from protocol.records.v2 import ATTRIBUTES_OFFSET


def _batch(codec=Codec.NONE) -> bytearray:
    b = RecordBatchBuilder(compression=codec)
    for i in range(5):
        b.append(b"key%d" % i, b"value%d" % i, timestamp=1000 + i, headers=[("h", b"x")])
    return bytearray(b.build())


def test_set_base_offset_and_leader_epoch_keep_crc_valid():
    data = _batch()
    v = RecordBatchView(memoryview(data))
    crc = v.crc
    v.set_base_offset(123_456_789)
    v.set_partition_leader_epoch(17)
    assert v.crc == crc and v.is_valid()
    assert (v.base_offset, v.partition_leader_epoch) == (123_456_789, 17)
    assert [r.offset for r in v] == list(range(123_456_789, 123_456_794))
    assert RecordBatchView(bytes(data)).base_offset == 123_456_789  # really written to the buffer


def test_set_last_offset_sets_base_from_delta():
    v = RecordBatchView(memoryview(_batch()))
    v.set_last_offset(50)
    assert (v.base_offset, v.last_offset) == (46, 50)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_set_max_timestamp_recomputes_crc(codec):
    data = _batch(codec)
    v = RecordBatchView(memoryview(data))
    old_crc = v.crc
    v.set_max_timestamp(9_999, TimestampType.LOG_APPEND_TIME)
    assert v.crc != old_crc and v.is_valid()
    assert v.timestamp_type == TimestampType.LOG_APPEND_TIME and v.max_timestamp == 9_999
    assert v.compression == codec
    assert [r.timestamp for r in v] == [9_999] * 5
    v.set_max_timestamp(1004, TimestampType.CREATE_TIME)
    assert v.is_valid() and [r.timestamp for r in v] == [1000, 1001, 1002, 1003, 1004]


def test_every_flipped_byte_in_crc_region_is_detected():
    data = _batch()
    for pos in range(ATTRIBUTES_OFFSET, len(data)):
        for bit in (0x01, 0x80):
            data[pos] ^= bit
            v = RecordBatchView(bytes(data))
            assert not v.is_valid(), pos
            with pytest.raises(CorruptRecordError):
                v.ensure_valid()
            data[pos] ^= bit


def test_flipping_the_stored_crc_is_detected():
    data = _batch()
    data[17] ^= 0x10
    assert not RecordBatchView(data).is_valid()


def test_readonly_buffer_cannot_be_patched():
    v = RecordBatchView(bytes(_batch()))
    with pytest.raises(TypeError):
        v.set_base_offset(1)


def test_tombstone_rule():
    assert is_tombstone(Record(0, 0, b"k", None))
    assert not is_tombstone(Record(0, 0, b"k", b""))
    assert not is_tombstone(Record(0, 0, b"k", b"payload"))
    assert is_tombstone(Record(0, 0, b"k", b"payload", attributes=TOMBSTONE_FLAG))
    assert not is_tombstone(Record(0, 0, b"k", b"payload", attributes=0x02))


def test_tombstone_flag_survives_the_wire():
    b = RecordBatchBuilder(compression=Codec.LZ4)
    b.append(b"a", b"audit payload", timestamp=1, attributes=TOMBSTONE_FLAG)
    b.append(b"b", b"", timestamp=2)
    b.append(b"c", None, timestamp=3, headers=[("why", b"gdpr")])
    got = list(RecordBatchView(b.build()))
    assert [is_tombstone(r) for r in got] == [True, False, True]
    assert got[2].headers == (("why", b"gdpr"),)
