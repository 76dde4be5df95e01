"""Hypothesis round-trips (our builder -> our reader) and fuzzing of the readers.

The fuzz tests feed random bytes and mutated/truncated valid batches to
``iter_batches`` plus full iteration and CRC checks: the only exceptions
allowed are ours (``KafkaProtocolError`` subclasses), and everything ends.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import KafkaProtocolError
from protocol.records import Codec, RecordBatchBuilder, TimestampType, iter_batches

KEYS = st.none() | st.binary(max_size=40)
VALUES = st.none() | st.binary(max_size=300)
HEADERS = st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3)
TIMESTAMPS = st.integers(-1, 2**41)


@st.composite
def batches(draw):
    magic = draw(st.sampled_from([0, 1, 2]))
    codecs = [c for c in Codec if magic == 2 or c != Codec.ZSTD]
    codec = draw(st.sampled_from(codecs))
    n = draw(st.integers(1, 20))
    records = []
    for _ in range(n):
        headers = tuple(draw(HEADERS)) if magic == 2 else ()
        gap = draw(st.integers(1, 3)) if magic == 2 or codec == Codec.NONE else 1
        records.append((draw(KEYS), draw(VALUES), draw(TIMESTAMPS), headers, gap, draw(st.integers(0, 1))))
    return magic, codec, draw(st.integers(0, 2**40)), records


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_builder_reader_round_trip(case):
    magic, codec, base_offset, records = case
    builder = RecordBatchBuilder(magic=magic, compression=codec, base_offset=base_offset)
    expected = []
    offset = base_offset - 1
    for key, value, ts, headers, gap, attrs in records:
        offset += gap
        builder.append(key, value, timestamp=ts, headers=headers, offset=offset, attributes=attrs if magic == 2 else 0)
        expected.append((offset, ts if magic else -1, key, value, headers, attrs if magic == 2 else 0))
    data = builder.build()
    views = list(iter_batches(memoryview(data)))
    assert all(v.is_valid() and v.magic == magic for v in views)
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for v in views for r in v]
    assert got == expected
    # v2 keeps the builder's base_offset (records may start later, as after compaction)
    assert views[0].base_offset == (base_offset if magic == 2 else expected[0][0])
    assert views[-1].last_offset == expected[-1][0]
    assert sum(v.size_in_bytes for v in views) == len(data)
    if magic == 2:
        (v,) = views
        assert v.max_timestamp == max(r[1] for r in expected) and v.records_count == len(records)
    elif magic == 1 and codec != Codec.NONE:
        assert views[0].max_timestamp == max(r[1] for r in expected)


def _exercise(data) -> None:
    """Everything a broker might do with untrusted bytes."""
    for batch in iter_batches(memoryview(data), max_batch_size=1 << 20):
        batch.is_valid()
        _ = (batch.base_offset, batch.last_offset, batch.size_in_bytes, batch.timestamp_type)
        for _ in batch.iter_records(max_decompressed_size=1 << 20):
            pass


def _assert_only_ours(data) -> None:
    try:
        _exercise(data)
    except KafkaProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_our_errors(data):
    _assert_only_ours(data)


def _valid_corpus() -> list[bytes]:
    rng = random.Random(1)
    out = []
    for magic in (0, 1, 2):
        for codec in Codec:
            if magic < 2 and codec == Codec.ZSTD:
                continue
            b = RecordBatchBuilder(
                magic=magic, compression=codec,
                timestamp_type=TimestampType.LOG_APPEND_TIME if magic else TimestampType.CREATE_TIME,
            )  # fmt: skip
            for i in range(4):
                hs = [("h", rng.randbytes(3))] if magic == 2 else ()
                b.append(rng.randbytes(4), rng.randbytes(8) * i, timestamp=i, headers=hs)
            out.append(b.build())
    return out


CORPUS = _valid_corpus()


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(range(len(CORPUS))),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
)
def test_mutated_and_truncated_batches_raise_only_our_errors(index, flips, cut):
    data = bytearray(CORPUS[index])
    for pos, byte in flips:
        data[pos % len(data)] = byte
    _assert_only_ours(bytes(data))
    _assert_only_ours(bytes(data[: cut % (len(data) + 1)]))


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_every_single_byte_mutation(index):
    """Exhaustive: every position of every corpus batch set to a few nasty values."""
    original = CORPUS[index]
    for pos in range(len(original)):
        for value in (0x00, 0x7F, 0x80, 0xFF):
            data = bytearray(original)
            data[pos] = value
            _assert_only_ours(bytes(data))
