"""Down-conversion for Fetch v0-v3 and KIP-724 up-conversion, checked against kafka-python's readers.

Expected records are computed from the *inputs* handed to the builders (never
from our own reader of the converted bytes), and the converted bytes are read
back with kafka-python's ``MemoryRecords``/``LegacyRecordBatch``.
"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError, KafkaProtocolError, UnsupportedCompressionError
from protocol.records import (
    TOMBSTONE_FLAG,
    Codec,
    DownConverted,
    RecordBatchBuilder,
    TimestampType,
    decompress,
    down_convert,
    iter_batches,
    legacy_to_v2_batch,
    legacy_to_v2_batches,
    upgrade_to_v2,
)

from .oracle import kp_batch_info, kp_build_legacy, kp_read, skip_unless_available

LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]
APPEND_TIME = 1_800_000_000_123
TS0 = 1_700_000_000_000


def _spec(n: int, seed: int, *, first_offset: int, step: int = 1) -> list[tuple]:
    """(offset, timestamp, key, value, headers, attributes) inputs; some null, some flagged tombstones."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 6 == 5 else b"key-%d" % i
        value = None if i % 5 == 1 else rng.randbytes(rng.randrange(0, 40)) * 3
        attributes = TOMBSTONE_FLAG if i % 4 == 2 else 0  # flagged, often with a payload
        headers = (("trace", b"t%d" % i), ("n", None)) if i % 2 else ()
        out.append((first_offset + i * step, TS0 + rng.randrange(-500, 500), key, value, headers, attributes))
    return out


def _v2(spec, codec: Codec = Codec.NONE, *, lat: bool = False) -> bytes:
    builder = RecordBatchBuilder(
        compression=codec,
        base_offset=spec[0][0],
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        log_append_time=APPEND_TIME if lat else None,
        producer_id=7, producer_epoch=1, base_sequence=0, partition_leader_epoch=3,
    )  # fmt: skip
    for off, ts, key, value, headers, attributes in spec:
        builder.append(key, value, timestamp=ts, headers=headers, offset=off, attributes=attributes)
    return builder.build()


def _expected(spec, magic: int, *, lat: bool = False, fetch_offset: int | None = None) -> list[tuple]:
    """What an old client must read: no headers, null value for every tombstone."""
    out = []
    for off, ts, key, value, _headers, attributes in spec:
        if fetch_offset is not None and off < fetch_offset:
            continue
        timestamp = -1 if magic == 0 else (APPEND_TIME if lat else ts)
        out.append((off, timestamp, key, None if attributes & TOMBSTONE_FLAG else value, ()))
    return out


def _entries(data: bytes) -> list[tuple[int, int]]:
    """(offset, total size) of each top-level entry, from the raw prefixes."""
    out, pos = [], 0
    while pos < len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        out.append((offset, size + 12))
        pos += size + 12
    return out


# -- down-conversion against the oracle ----------------------------------------------


@pytest.mark.parametrize("lat", [False, True], ids=["create", "append"])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_down_convert_read_by_kafka_python(magic, codec, lat):
    skip_unless_available(codec, magic)
    first, second = _spec(23, seed=codec * 7 + magic, first_offset=500), _spec(9, seed=99, first_offset=523)
    third = _v2(_spec(5, seed=3, first_offset=532), codec, lat=lat)
    data = _v2(first, codec, lat=lat) + _v2(second, codec, lat=lat) + third[:-7]  # partial trailing batch
    result = down_convert(data, target_magic=magic, fetch_offset=500)
    assert kp_read(result.records) == _expected(first + second, magic, lat=lat)
    info = kp_batch_info(result.records)
    timestamp_type = None if magic == 0 else int(lat)
    assert info == [(magic, int(codec), timestamp_type, True)] * len(info)
    assert len(info) == (32 if codec == Codec.NONE else 2)  # one message per record, or one wrapper per batch
    assert result.converted_count == 32


@pytest.mark.parametrize("magic", [0, 1])
def test_append_time_bit_on_every_message(magic):
    records = down_convert(_v2(_spec(6, seed=1, first_offset=0), lat=True), target_magic=magic, fetch_offset=0).records
    positions = [0]
    for _offset, size in _entries(records):
        positions.append(positions[-1] + size)
    attributes = {records[pos + 17] for pos in positions[:-1]}
    assert len(positions) == 7
    assert attributes == ({0x08} if magic == 1 else {0})


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_fetch_offset_inside_a_batch(magic, codec):
    skip_unless_available(codec, magic)
    spec = _spec(20, seed=5, first_offset=1000)
    result = down_convert(_v2(spec, codec), target_magic=magic, fetch_offset=1013)
    if codec == Codec.NONE:  # records before the fetch offset are dropped
        assert kp_read(result.records) == _expected(spec, magic, fetch_offset=1013)
        assert result.converted_count == 7
    else:  # the wrapper keeps the whole batch
        assert kp_read(result.records) == _expected(spec, magic)
        assert result.converted_count == 20


@pytest.mark.parametrize("magic", [0, 1])
def test_wrapper_inner_offsets(magic):
    spec = _spec(8, seed=2, first_offset=300, step=3)  # gaps, as after compaction
    records = down_convert(_v2(spec, Codec.GZIP), target_magic=magic, fetch_offset=0).records
    [(wrapper_offset, size)] = _entries(records)
    assert wrapper_offset == spec[-1][0] == 321
    key_len_pos = 12 + 4 + 2 + (8 if magic == 1 else 0)
    assert records[key_len_pos : key_len_pos + 4] == b"\xff\xff\xff\xff"  # null wrapper key
    inner = decompress(Codec.GZIP, records[key_len_pos + 8 : size], magic=magic)
    inner_offsets = [off for off, _ in _entries(inner)]
    absolute = [s[0] for s in spec]
    assert inner_offsets == (absolute if magic == 0 else [o - 300 for o in absolute])
    assert kp_read(records) == _expected(spec, magic)
    if magic == 1:  # CreateTime wrapper: the max inner timestamp
        assert struct.unpack_from(">q", records, 18)[0] == max(s[1] for s in spec) != spec[0][1]


def test_zstd_batch_refused():
    data = _v2(_spec(3, seed=1, first_offset=0)) + _v2(_spec(3, seed=1, first_offset=3), Codec.ZSTD)
    with pytest.raises(UnsupportedCompressionError) as info:
        down_convert(data, target_magic=1, fetch_offset=0)
    assert info.value.error_code == 76


def _control_batch(offset: int) -> bytes:
    builder = RecordBatchBuilder(base_offset=offset, is_control=True, is_transactional=True, producer_id=9)
    builder.append(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05", timestamp=TS0)  # COMMIT marker
    return builder.build()


@pytest.mark.parametrize("magic", [0, 1])
def test_control_and_empty_batches_dropped(magic):
    a, b = _spec(3, seed=1, first_offset=0), _spec(3, seed=2, first_offset=5)
    empty = RecordBatchBuilder.empty_batch(base_offset=3, last_offset=3)
    data = _v2(a) + empty + _control_batch(4) + _v2(b)
    result = down_convert(data, target_magic=magic, fetch_offset=0)
    assert kp_read(result.records) == _expected(a + b, magic)
    assert result.converted_count == 6


def test_only_markers_survive_as_nothing():
    result = down_convert(_control_batch(4) + _control_batch(5), target_magic=1, fetch_offset=4)
    assert (result.records, result.converted_count) == (b"", 0)


def test_empty_and_partial_inputs():
    batch = _v2(_spec(4, seed=1, first_offset=0))
    assert down_convert(b"", target_magic=1, fetch_offset=0) == DownConverted(b"", 0)
    for cut in (1, 11, 16, 17, 60, len(batch) - 1):
        assert down_convert(batch[:cut], target_magic=0, fetch_offset=0) == DownConverted(b"", 0)


@pytest.mark.parametrize("target", [-1, 2, 3])
def test_bad_target_magic(target):
    with pytest.raises(ValueError, match="magic 0 or 1"):
        down_convert(b"", target_magic=target, fetch_offset=0)


def test_corrupt_source_not_resigned():
    data = bytearray(_v2(_spec(4, seed=1, first_offset=0)))
    data[-3] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        down_convert(bytes(data), target_magic=1, fetch_offset=0)


# -- legacy input --------------------------------------------------------------------


def _legacy_sample(n: int) -> list[tuple]:
    return [(None if i == 2 else b"k%d" % i, None if i == 3 else b"value-%d" % i, TS0 + i) for i in range(n)]


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize(("source", "target"), [(0, 0), (0, 1), (1, 1)])
def test_legacy_passes_through(source, target, codec):
    skip_unless_available(codec, source)
    data = kp_build_legacy(_legacy_sample(5), codec, source) + kp_build_legacy(_legacy_sample(2), codec, source)
    result = down_convert(data, target_magic=target, fetch_offset=0)
    assert (result.records, result.converted_count) == (data, 0)


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_v1_converted_for_magic_0(codec):
    skip_unless_available(codec, 0)
    sample = _legacy_sample(6)
    result = down_convert(kp_build_legacy(sample, codec, 1), target_magic=0, fetch_offset=0)
    assert kp_read(result.records) == [(i, -1, k, v, ()) for i, (k, v, _) in enumerate(sample)]
    assert {info[:2] for info in kp_batch_info(result.records)} == {(0, int(codec))}
    assert result.converted_count == 6


# -- up-conversion (KIP-724) ------------------------------------------------------------


def _legacy(records, magic: int, codec: Codec, *, lat: bool = False) -> bytes:
    builder = RecordBatchBuilder(
        magic=magic, compression=codec, base_offset=records[0][0],
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        log_append_time=APPEND_TIME if lat else None,
    )  # fmt: skip
    for off, ts, key, value in records:
        builder.append(key, value, timestamp=ts, offset=off)
    return builder.build()


def _as_read(records, magic: int, *, lat: bool = False) -> list[tuple]:
    return [(o, -1 if magic == 0 else APPEND_TIME if lat else t, k, v, ()) for o, t, k, v in records]


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize(("magic", "lat"), [(0, False), (1, False), (1, True)], ids=["v0", "v1-create", "v1-append"])
def test_legacy_to_v2(magic, codec, lat):
    records = [(40 + 2 * i, TS0 + i, None if i == 1 else b"k", None if i == 2 else b"v" * i) for i in range(5)]
    source = _legacy(records, magic, codec, lat=lat)
    batches = legacy_to_v2_batches(source)
    assert len(batches) == (5 if codec == Codec.NONE else 1)  # single-record batches, or one per wrapper
    data = b"".join(batches)
    assert kp_read(data) == _as_read(records, magic, lat=lat)
    assert {info for info in kp_batch_info(data)} == {(2, int(codec), int(lat), True)}
    views = list(iter_batches(data))
    assert [v.base_offset for v in views] == ([r[0] for r in records] if codec == Codec.NONE else [40])
    if magic == 0:
        assert {v.max_timestamp for v in views} == {-1}
    if lat:
        assert {v.max_timestamp for v in views} == {APPEND_TIME}


def test_legacy_to_v2_batch_refuses_corrupt_and_v2():
    entry = bytearray(_legacy([(0, TS0, b"k", b"v")], 1, Codec.NONE))
    assert iter_batches(legacy_to_v2_batch(bytes(entry))).__next__().magic == 2
    entry[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        legacy_to_v2_batch(bytes(entry))
    with pytest.raises(CorruptRecordError):
        legacy_to_v2_batch(_v2(_spec(2, seed=1, first_offset=0)))


def test_upgrade_copies_v2_and_drops_partial_tail():
    v2_batch = _v2(_spec(3, seed=1, first_offset=10))
    legacy_a = _legacy([(0, TS0, b"a", b"1"), (1, TS0 + 1, b"b", None)], 1, Codec.SNAPPY)
    legacy_b = _legacy([(13, TS0 + 5, b"c", b"3")], 0, Codec.NONE)
    data = legacy_a + v2_batch + legacy_b + v2_batch[:20]
    upgraded = upgrade_to_v2(data)
    views = list(iter_batches(upgraded))
    assert [v.magic for v in views] == [2, 2, 2]
    assert bytes(views[1].buffer) == v2_batch
    assert len(upgraded) == sum(v.size_in_bytes for v in views)  # partial tail dropped
    assert [r[:4] for r in kp_read(upgraded)][:2] == [(0, TS0, b"a", b"1"), (1, TS0 + 1, b"b", None)]
    assert kp_read(upgraded)[-1][:4] == (13, -1, b"c", b"3")


# -- properties ---------------------------------------------------------------------------

_bytes_or_none = st.none() | st.binary(max_size=30)
_legacy_set = st.tuples(
    st.sampled_from([0, 1]),
    st.sampled_from(LEGACY_CODECS),
    st.booleans(),
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(0, 2**40), _bytes_or_none, _bytes_or_none), min_size=1, max_size=8
    ),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sets=st.lists(_legacy_set, min_size=1, max_size=5))
def test_upgrade_round_trip(sets):
    data, expected, next_offset = b"", [], 0
    for magic, codec, lat, rows in sets:
        records = []
        for gap, ts, key, value in rows:
            next_offset += gap
            records.append((next_offset, ts, key, value))
        lat = lat and magic == 1
        data += _legacy(records, magic, codec, lat=lat)
        expected += _as_read(records, magic, lat=lat)
    upgraded = upgrade_to_v2(data)
    assert kp_read(upgraded) == expected
    assert {v.magic for v in iter_batches(upgraded)} == {2}


_v2_record = st.tuples(st.integers(-1000, 1000), _bytes_or_none, _bytes_or_none, st.booleans(), st.booleans())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(_v2_record, min_size=1, max_size=12),
    codec=st.sampled_from(LEGACY_CODECS),
    magic=st.sampled_from([0, 1]),
    skip=st.integers(0, 12),
)
def test_down_convert_round_trip(rows, codec, magic, skip):
    spec = [
        (100 + i, TS0 + d, k, v, (("h", b"x"),) if h else (), TOMBSTONE_FLAG if flag else 0)
        for i, (d, k, v, flag, h) in enumerate(rows)
    ]
    fetch_offset = 100 + skip
    result = down_convert(_v2(spec, codec), target_magic=magic, fetch_offset=fetch_offset)
    cut = fetch_offset if codec == Codec.NONE else None
    assert kp_read(result.records) == _expected(spec, magic, fetch_offset=cut)
    assert result.converted_count == (len(spec) if codec != Codec.NONE else len(_expected(spec, magic, fetch_offset=cut)))


@settings(max_examples=300, deadline=None)
@given(pos=st.integers(0, 10**6), byte=st.integers(0, 255), target=st.sampled_from([0, 1]))
def test_mangled_input_raises_only_our_errors(pos, byte, target):
    data = bytearray(_v2(_spec(4, seed=1, first_offset=0), Codec.GZIP) + _v2(_spec(3, seed=2, first_offset=4)))
    data[pos % len(data)] = byte
    try:
        down_convert(bytes(data), target_magic=target, fetch_offset=0)
        upgrade_to_v2(bytes(data))
    except KafkaProtocolError:
        pass
