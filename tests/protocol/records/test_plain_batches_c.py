"""The C path for uncompressed batches (``_clz4.c`` via ``_cbatches``): taken whole, same bytes as Python.

An uncompressed v2 batch becomes one legacy message per record from the
fetch offset on, written on the accelerator's helper thread like an LZ4
batch's wrapper. Each test converts with the accelerator and again with it
switched off, and the two answers (bytes and records counted as converted)
must be equal, or raise the same error where the C path declines.
"""

from __future__ import annotations

import random

import pytest

from protocol.errors import CorruptRecordError, InvalidRecordError
from protocol.records import Codec, RecordBatchBuilder, TimestampType, down_convert
from protocol.records import _cbatches
from protocol.records._lz4 import frame_header
from protocol.records._model import Codec as ModelCodec
from protocol.records.convert import start_down_convert
from protocol.records.v2 import RECORD_BATCH_OVERHEAD
from tests.protocol.records.helpers import raw_batch, raw_record

from .test_lz4_wrappers_c import cdc, lz4_batch, python_way, raises_as_python, taken

TS0 = 1_700_000_000_000


def plain_batch(seed: int, base: int, *, records: int = 40, lat: bool = False, headers: bool = False) -> bytes:
    rng = random.Random(seed)
    kw = {"timestamp_type": TimestampType.LOG_APPEND_TIME} if lat else {}
    b = RecordBatchBuilder(compression=Codec.NONE, base_offset=base, **kw)
    for i in range(records):
        value = None if i % 9 == 4 else rng.randbytes(rng.randrange(0, 700))
        hdrs = (("h", b"x" * (i % 3)),) if headers and i % 2 else ()
        b.append(None if i % 5 == 2 else b"key-%d" % i, value, timestamp=TS0 + rng.randrange(-5, 5), headers=hdrs,
                 attributes=1 if i % 13 == 1 else 0)  # fmt: skip
    return b.build()


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("lat", [False, True])
@pytest.mark.parametrize("headers", [False, True])
def test_batches_are_taken_and_give_pythons_bytes_from_any_fetch_offset(magic, lat, headers):
    data = b"".join(plain_batch(s, 40 * s, lat=lat, headers=headers) for s in range(5))
    assert taken(data, magic) == [True] * 5
    for fetch_offset in (0, 17, 40, 119, 199, 250):  # inside a batch, at one's start, past them all
        expected = python_way(data, magic, fetch_offset)
        assert taken(data, magic, fetch_offset=fetch_offset) == [True] * 5
        assert down_convert(data, target_magic=magic, fetch_offset=fetch_offset) == expected
        assert start_down_convert(data, target_magic=magic, fetch_offset=fetch_offset)() == expected
    assert python_way(data, magic, 17).converted_count == 200 - 17


def test_a_chunk_of_every_kind_of_batch():
    gzip = RecordBatchBuilder(compression=Codec.GZIP, base_offset=80)
    gzip.append(b"g", b"zipped", timestamp=TS0)
    marker = RecordBatchBuilder(base_offset=81, is_control=True, is_transactional=True, producer_id=3)
    marker.append(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x01", timestamp=TS0)
    parts = [plain_batch(1, 0), lz4_batch(2, base=40, records=40), gzip.build(), marker.build(), plain_batch(3, 82)]
    data = b"".join(parts)
    assert taken(data, 1, fetch_offset=5) == [True, True, False, False, True]
    for fetch_offset in (0, 5, 100):
        assert down_convert(data, target_magic=1, fetch_offset=fetch_offset) == python_way(data, 1, fetch_offset)


def test_without_liblz4_only_the_uncompressed_batches_go_to_c(monkeypatch):
    monkeypatch.setattr(_cbatches, "_CODECS", (ModelCodec.NONE,))
    data = plain_batch(4, 0) + lz4_batch(5, base=40)
    assert taken(data, 1) == [True, False]
    assert down_convert(data, target_magic=1, fetch_offset=3) == python_way(data, 1, 3)


def test_a_bad_record_is_left_to_python_which_raises():
    records = raw_record(key=b"k", value=b"v", headers=((b"h", b"x"),))
    bad = bytearray(records)
    bad[-4] = 0x01  # the header key length varint becomes -1
    data = raw_batch(bytes(bad), 1)
    assert taken(data, 1) == [False]
    with pytest.raises(InvalidRecordError, match="Invalid negative header key size"):
        down_convert(data, target_magic=1, fetch_offset=0)
    raises_as_python(raw_batch(raw_record(key=b"k", value=b"v", length_adjust=3), 1), 0)  # runs past the batch


def test_a_batch_with_a_bad_crc_is_left_to_python():
    data = bytearray(plain_batch(6, 0))
    data[RECORD_BATCH_OVERHEAD + 3] ^= 1
    assert taken(bytes(data), 1) == [False]  # planned, declined when its CRC-32C was checked
    with pytest.raises(CorruptRecordError, match="Record batch is corrupt"):
        down_convert(bytes(data), target_magic=1, fetch_offset=0)


def test_the_c_answer_counts_what_it_wrote():
    data = plain_batch(7, 0) + lz4_batch(8, base=40, records=30)
    joined, lengths, written, consumed = cdc.convert_chunk(data, 1, frame_header(1), 25, 1 << 20)
    assert written == [15, 30] and sum(lengths) == len(joined)  # plain: offsets 25-39; a wrapper keeps all 30
    assert consumed == len(data)


def test_a_corrupt_batch_between_good_ones_is_the_only_one_left_to_python():
    bad = bytearray(plain_batch(10, 40))
    bad[RECORD_BATCH_OVERHEAD + 7] ^= 0x40
    data = plain_batch(9, 0) + bytes(bad) + lz4_batch(11, base=80, records=20)
    assert taken(data, 1) == [True, False, True]
    with pytest.raises(CorruptRecordError, match="Record batch is corrupt"):
        down_convert(data, target_magic=1, fetch_offset=0)


def test_bytes_past_the_last_whole_entry_are_left_to_python():
    whole = plain_batch(12, 0) + lz4_batch(13, base=40, records=20)
    for tail in (b"\x00" * 9, plain_batch(14, 60)[:-1]):  # a partial header; a batch cut short
        joined, lengths, written, consumed = cdc.convert_chunk(whole + tail, 1, frame_header(1), 0, 1 << 20)
        assert consumed == len(whole) and None not in lengths and len(lengths) == 2
        assert down_convert(whole + tail, target_magic=1, fetch_offset=0) == python_way(whole + tail, 1)


def test_the_joined_entries_are_handed_over_without_a_copy():
    data = plain_batch(15, 0) + lz4_batch(16, base=40, records=20)
    joined, lengths, _, _ = cdc.convert_chunk(data, 1, frame_header(1), 0, 1 << 20)
    assert isinstance(joined, memoryview) and joined.readonly and type(joined.obj).__name__ == "Output"
    assert bytes(joined) == python_way(data, 1).records and len(joined) == sum(lengths)
    empty = cdc.convert_chunk(b"", 1, frame_header(1), 0, 1 << 20)
    assert empty == (b"", [], [], 0)  # no job ran, so nothing was joined: an empty bytes object
