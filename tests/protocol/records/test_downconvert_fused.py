"""The fused down-conversion loop writes exactly what the row-by-row encoder writes, and fails alike.

Reference: every v2 batch decoded with ``iter_tuples`` and written with
``convert._encode_messages`` / ``convert._encode_wrapper`` (the former path);
compared byte for byte on valid batches (headers, tombstones, LogAppendTime,
fetch offsets inside the batch, v0 and v1 targets, compressed and not), and
on corrupt records (CRC re-signed so that only the record structure is bad)
both must raise ``InvalidRecordError`` with the same message.

Every test here runs twice: with the C accelerator (when it is built) and with
the pure-Python loops it falls back to.
"""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import InvalidRecordError
from protocol.records import Codec, RecordBatchBuilder, RecordBatchView, TimestampType, down_convert, iter_batches
from protocol.records import _downconvert_runs, convert
from protocol.records.v2 import ATTRIBUTES_OFFSET, CRC_OFFSET


@pytest.fixture(scope="module", autouse=True, params=["c", "python"])
def implementation(request):
    """Module-scoped (hypothesis refuses function-scoped fixtures): patch by hand."""
    real = _downconvert_runs.C_EMIT
    if request.param == "c" and real is None:
        pytest.skip("the C accelerator is not built here")
    _downconvert_runs.C_EMIT = real if request.param == "c" else None
    yield request.param
    _downconvert_runs.C_EMIT = real


def reference(data: bytes, magic: int, fetch_offset: int) -> bytes:
    batch = RecordBatchView(data)
    lat = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    rows = list(batch.iter_tuples())
    out = bytearray()
    if batch.compression is not Codec.NONE:
        if rows:
            convert._encode_wrapper(out, magic, batch.compression, lat, rows)
        return bytes(out)
    flag = convert.TIMESTAMP_TYPE_FLAG if lat is not None and magic == 1 else 0
    convert._encode_messages(out, magic, flag, rows, fetch_offset=fetch_offset)
    return bytes(out)


RECORDS = st.lists(st.tuples(
    st.none() | st.binary(max_size=30), st.none() | st.binary(max_size=300),
    st.sampled_from([(), (("h", b"x"),), (("a", None), ("b", b""))]), st.integers(0, 1),
    st.integers(-3, 100_000), st.integers(1, 3)), min_size=1, max_size=40)  # fmt: skip


def build(records, codec: Codec, lat: bool) -> bytes:
    builder = RecordBatchBuilder(compression=codec, base_offset=1000, log_append_time=5_000 if lat else None,
                                 timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME)
    ts, offset = 1_700_000_000_000, 999
    for key, value, headers, attributes, step, gap in records:
        ts, offset = ts + step, offset + gap
        builder.append(key, value, timestamp=ts, headers=headers, offset=offset, attributes=attributes)
    return builder.build()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS, st.sampled_from([Codec.NONE, Codec.GZIP, Codec.LZ4]), st.booleans(), st.integers(0, 1),
       st.integers(990, 1100))  # fmt: skip
def test_fused_loop_writes_what_the_row_encoder_writes(records, codec, lat, magic, fetch_offset):
    data = build(records, codec, lat)
    assert down_convert(data, target_magic=magic, fetch_offset=fetch_offset).records == reference(
        data, magic, fetch_offset)


def _resign(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c.crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))
    return bytes(batch)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS, st.integers(0, 1), st.randoms(use_true_random=False), st.integers(-1, 1))
def test_corrupt_records_fail_with_the_decoders_error(records, magic, rng, count_change):
    batch = bytearray(build(records, Codec.NONE, False))
    for _ in range(rng.randint(1, 3)):
        batch[rng.randrange(61, len(batch))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    struct.pack_into(">i", batch, 57, struct.unpack_from(">i", batch, 57)[0] + count_change)
    data = _resign(batch)
    try:
        expected = ("ok", reference(data, magic, 0))
    except InvalidRecordError as exc:
        expected = ("error", str(exc))
    try:
        got = ("ok", down_convert(data, target_magic=magic, fetch_offset=0).records)
    except InvalidRecordError as exc:
        got = ("error", str(exc))
    assert got == expected


# Runs of same-shaped records (the column-wise path of ``_downconvert_runs``), broken up by odd records:
# another key or value size, a null key or value, headers, the KIP-87 flag, a timestamp or offset jump that
# changes a varint's width.
SHAPES = st.tuples(st.none() | st.integers(0, 12), st.integers(-1, 200))  # key length (None: null), value length
ODD = st.tuples(st.none() | st.binary(max_size=5), st.none() | st.binary(max_size=5),
                st.sampled_from([(), (("h", b"x"),)]), st.integers(0, 1), st.integers(-3, 20_000), st.integers(1, 200))


@st.composite
def runs(draw):
    records = []
    for _ in range(draw(st.integers(1, 4))):
        key_len, value_len = draw(SHAPES)
        step, gap = draw(st.sampled_from([(1, 1), (0, 1), (100, 1), (5, 2)]))
        for _ in range(draw(st.integers(1, 70))):
            key = None if key_len is None else bytes([len(records) % 256]) * key_len
            value = None if value_len < 0 else bytes([7]) * value_len
            records.append((key, value, (), 0, step, gap))
        records += draw(st.lists(ODD, max_size=2))
    return records


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([Codec.NONE, Codec.LZ4]), st.booleans(), st.integers(0, 1), st.integers(990, 1300))
def test_runs_of_one_shape_convert_as_the_row_encoder_does(records, codec, lat, magic, fetch_offset):
    data = build(records, codec, lat)
    assert down_convert(data, target_magic=magic, fetch_offset=fetch_offset).records == reference(
        data, magic, fetch_offset)


def test_a_long_uniform_batch_takes_the_column_path(monkeypatch, implementation):
    """The property above must exercise the run path (of the Python loops): count the records it wrote."""
    monkeypatch.setattr(_downconvert_runs, "C_EMIT", None)
    seen = []
    real = _downconvert_runs._emit_run
    monkeypatch.setattr(_downconvert_runs, "_emit_run", lambda parts, data, pos, n, *a: seen.append(n) or real(
        parts, data, pos, n, *a))  # fmt: skip
    records = [(b"k%03d" % i, bytes(100), (), 0, 1, 1) for i in range(500)]
    data = build(records, Codec.NONE, False)
    assert down_convert(data, target_magic=1, fetch_offset=0).records == reference(data, 1, 0)
    assert sum(seen) == 500


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_timestamps_past_a_long_wrap_as_kafka_reads_them(codec, magic):
    """baseTimestamp Long.MIN + 10 and deltas 0, -100 (a batch Kafka stores): the second record's timestamp is
    Long.MAX - 89, as Java's long arithmetic leaves Long.MIN - 90; magic 0 carries no timestamp."""
    low, high = -(1 << 63) + 10, (1 << 63) - 90
    builder = RecordBatchBuilder(compression=codec, base_offset=1000)
    builder.append(b"k", b"v", timestamp=1000)
    builder.append(b"k", b"w", timestamp=900)
    batch = bytearray(builder.build())
    struct.pack_into(">qq", batch, 27, low, high)
    data = _resign(batch)
    out = down_convert(data, target_magic=magic, fetch_offset=0).records
    assert out == reference(data, magic, 0)
    got = [(r.offset, r.timestamp, r.value) for b in iter_batches(memoryview(bytes(out))) for r in b]
    assert got == [(1000, low if magic else -1, b"v"), (1001, high if magic else -1, b"w")]
