"""LegacyBatchView semantics and iter_batches framing rules."""

from __future__ import annotations

import struct
import zlib

import pytest

from protocol.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionError
from protocol.records import (
    Codec,
    LegacyBatchView,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    compress,
    iter_batches,
    peek_magic,
    valid_bytes,
)
from protocol.records._legacy_writer import encode_message


def _legacy(magic, codec=Codec.NONE, n=3, base_offset=10, **kw) -> bytes:
    b = RecordBatchBuilder(magic=magic, compression=codec, base_offset=base_offset, **kw)
    for i in range(n):
        b.append(b"k%d" % i, b"v%d" % i, timestamp=100 + i)
    return b.build()


def _wrapper(magic, inner: bytes, offset: int, *, codec=Codec.GZIP, attributes=None, ts=0) -> bytes:
    attrs = int(codec) if attributes is None else attributes
    return encode_message(magic, offset, attrs, ts, None, compress(codec, inner, magic=magic))


def test_v1_wrapper_offsets_and_lazy_base_offset():
    (v,) = list(iter_batches(_legacy(1, Codec.GZIP, n=4, base_offset=20)))
    assert isinstance(v, LegacyBatchView)
    assert (v.last_offset, v.next_offset, v.base_offset, v.records_count) == (23, 24, 20, 4)
    assert (v.producer_id, v.is_control, v.is_transactional, v.partition_leader_epoch) == (-1, False, False, -1)
    assert [r.offset for r in v] == [20, 21, 22, 23]
    assert v.max_timestamp == 103 and v.timestamp_type == TimestampType.CREATE_TIME


def test_v1_inner_offsets_are_relative_and_v0_absolute():
    inner_v1 = b"".join(encode_message(1, rel, 0, 5, b"k", b"v") for rel in (0, 1, 2))
    (v,) = list(iter_batches(_wrapper(1, inner_v1, 52)))
    assert [r.offset for r in v] == [50, 51, 52]
    (v0,) = list(iter_batches(_wrapper(1, inner_v1, 0)))
    assert [r.offset for r in v0] == [0, 1, 2]  # wrapper offset 0 means base 0
    inner_v0 = b"".join(encode_message(0, off, 0, -1, b"k", b"v") for off in (7, 8, 9))
    (w0,) = list(iter_batches(_wrapper(0, inner_v0, 9)))
    assert [r.offset for r in w0] == [7, 8, 9] and [r.timestamp for r in w0] == [-1] * 3
    assert w0.timestamp_type == TimestampType.NO_TIMESTAMP


def test_v1_wrapper_offset_below_last_relative_is_invalid():
    inner = b"".join(encode_message(1, rel, 0, 5, b"k", b"v") for rel in (0, 1, 5))
    (v,) = list(iter_batches(_wrapper(1, inner, 3)))
    with pytest.raises(InvalidRecordError):
        list(v)


def test_wrapper_log_append_time_applies_to_inner_records():
    inner = b"".join(encode_message(1, rel, 0, 100 + rel, b"k", b"v") for rel in (0, 1))
    (v,) = list(iter_batches(_wrapper(1, inner, 1, attributes=0x08 | 1, ts=4242)))
    assert v.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in v] == [4242, 4242]


def test_inner_crc_mismatch_is_corrupt():
    inner = bytearray(encode_message(1, 0, 0, 5, b"key", b"value"))
    inner[-1] ^= 0xFF
    (v,) = list(iter_batches(_wrapper(1, bytes(inner), 0)))
    assert v.is_valid()  # outer CRC is fine
    with pytest.raises(CorruptRecordError):
        list(v)


def test_nested_compression_and_magic_mismatch_are_invalid():
    nested = encode_message(1, 0, int(Codec.GZIP), 5, None, compress(Codec.GZIP, encode_message(1, 0, 0, 5, b"k", b"v")))
    with pytest.raises(InvalidRecordError, match="also compressed"):
        list(next(iter_batches(_wrapper(1, nested, 0))))
    with pytest.raises(InvalidRecordError, match="magic"):
        list(next(iter_batches(_wrapper(1, encode_message(0, 0, 0, -1, b"k", b"v"), 0))))


def test_empty_or_null_wrapper_is_invalid():
    with pytest.raises(InvalidRecordError):
        list(next(iter_batches(encode_message(1, 0, int(Codec.GZIP), 0, None, None))))
    with pytest.raises(InvalidRecordError):
        list(next(iter_batches(_wrapper(1, b"", 0))))


def test_zstd_on_legacy_is_unsupported_and_a_zstd_wrapper_invalid():
    with pytest.raises(UnsupportedCompressionError):
        RecordBatchBuilder(magic=1, compression=Codec.ZSTD)
    bogus = encode_message(1, 0, int(Codec.ZSTD), 0, None, b"whatever")
    with pytest.raises(InvalidRecordError, match="Invalid wrapper compressionType"):  # Kafka's DeepRecordsIterator
        list(next(iter_batches(bogus)))


def test_legacy_patching_keeps_crc_valid():
    data = bytearray(_legacy(1, Codec.SNAPPY, n=3))
    (v,) = list(iter_batches(memoryview(data)))
    v.set_last_offset(1002)
    assert v.is_valid() and [r.offset for r in v] == [1000, 1001, 1002]
    v.set_log_append_time(777)
    assert v.is_valid() and v.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in v] == [777] * 3
    data[20] ^= 1
    assert not v.is_valid()
    with pytest.raises(CorruptRecordError):
        v.ensure_valid()
    with pytest.raises(InvalidRecordError):
        LegacyBatchView(bytearray(_legacy(0, n=1))).set_log_append_time(1)


def test_v1_uncompressed_log_append_time_builder():
    data = _legacy(1, n=2, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=31337)
    views = list(iter_batches(data))
    assert [v.timestamp_type for v in views] == [TimestampType.LOG_APPEND_TIME] * 2
    assert [r.timestamp for v in views for r in v] == [31337, 31337]


def test_mixed_magics_and_partial_trailing_entry():
    v2 = RecordBatchBuilder(base_offset=5)
    v2.append(b"x", b"y", timestamp=1)
    data = _legacy(0, n=2, base_offset=0) + _legacy(1, Codec.LZ4, n=3, base_offset=2) + v2.build()
    full = list(iter_batches(data))
    assert [b.magic for b in full] == [0, 0, 1, 2]
    assert [r.offset for b in full for r in b] == [0, 1, 2, 3, 4, 5]
    for cut in range(1, 60):
        got = list(iter_batches(data[:-cut]))
        assert len(got) == 3  # the truncated last entry is just not yielded
    assert valid_bytes(data[:-1]) == len(data) - full[-1].size_in_bytes
    assert peek_magic(data, 0) == 0 and peek_magic(data, len(data) - full[-1].size_in_bytes) == 2
    assert peek_magic(data, len(data) - 5) is None


@pytest.mark.parametrize("size", [0, 13, -1])
def test_entry_size_below_14_is_corrupt(size):
    with pytest.raises(CorruptRecordError):
        list(iter_batches(struct.pack(">qi", 0, size) + b"\x00" * 30))


def test_entry_size_above_max_is_corrupt_even_if_partial():
    data = _legacy(1, n=1)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data, max_batch_size=len(data) - 13))
    assert len(list(iter_batches(data, max_batch_size=len(data) - 12))) == 1


@pytest.mark.parametrize("magic", [3, 0x7F, 0xFF])
def test_unknown_magic_is_corrupt(magic):
    data = bytearray(_legacy(1, n=1))
    data[16] = magic
    with pytest.raises(CorruptRecordError):
        list(iter_batches(data))


def test_v1_message_below_its_overhead_is_corrupt():
    body = struct.pack(">bb", 1, 0) + b"\x00" * 12  # 14 bytes after crc... too short for v1
    entry = struct.pack(">qi", 0, len(body) + 4) + zlib.crc32(body).to_bytes(4, "big") + body
    with pytest.raises(CorruptRecordError):
        list(iter_batches(entry))


def test_legacy_key_value_lengths_must_fit():
    good = bytearray(encode_message(1, 0, 0, 1, b"key", b"value"))
    struct.pack_into(">i", good, 26, 100)  # key length past the end
    good[12:16] = zlib.crc32(bytes(good[16:])).to_bytes(4, "big")
    (v,) = list(iter_batches(good))
    assert v.is_valid()
    with pytest.raises(InvalidRecordError):
        list(v)


def test_v2_view_is_yielded_for_magic_2():
    b = RecordBatchBuilder()
    b.append(None, b"v", timestamp=3)
    assert isinstance(next(iter_batches(b.build())), RecordBatchView)
