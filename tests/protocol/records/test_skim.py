"""``skim_v2_records`` agrees with the full decoder on valid records and fails only with our error on bad ones."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import InvalidRecordError
from protocol.records import RecordBatchBuilder, RecordBatchView, is_tombstone
from protocol.records.skim import SLICE, skim_v2_records

KEYS = st.none() | st.binary(max_size=200)
VALUES = st.none() | st.binary(max_size=20_000)
HEADERS = st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(KEYS, VALUES, HEADERS, st.integers(0, 1), st.integers(-(2**40), 2**40), st.integers(1, 3)),
                min_size=1, max_size=30))  # fmt: skip
def test_skim_matches_the_decoder(records):
    builder = RecordBatchBuilder(base_offset=100)
    offset = 99
    for key, value, headers, attributes, ts, gap in records:
        offset += gap
        builder.append(key, value, timestamp=ts, headers=headers, offset=offset, attributes=attributes)
    view = RecordBatchView(builder.build())
    payload = view.records_payload()
    skimmed = skim_v2_records(payload, view.records_count)
    decoded = list(view)
    assert [(view.base_offset + d, k, t) for d, k, t, _s, _e in skimmed] == [
        (r.offset, r.key, is_tombstone(r)) for r in decoded]
    assert skimmed[0][3] == 0 and skimmed[-1][4] == len(payload)
    assert all(a[4] == b[3] for a, b in zip(skimmed, skimmed[1:]))  # byte ranges tile the payload
    for (_d, _k, _t, s, e), record in zip(skimmed, decoded):  # each range is exactly one record
        assert skim_v2_records(payload[s:e], 1)[0][:3] == (record.offset - view.base_offset, record.key,
                                                          is_tombstone(record))  # fmt: skip


def _payload() -> bytes:
    b = RecordBatchBuilder()
    for i in range(20):
        b.append(b"k%d" % i, None if i % 3 == 0 else b"v" * i, timestamp=i * 1000, headers=[("h", b"x")])
    return RecordBatchView(b.build()).records_payload()


@pytest.mark.parametrize("seed", range(200))
def test_corrupt_payloads_raise_only_invalid_record(seed):
    rng = random.Random(seed)
    data = bytearray(_payload())
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    cut = rng.choice([len(data), rng.randrange(len(data))])
    try:
        skim_v2_records(bytes(data[:cut]), 20)
    except InvalidRecordError:
        pass


def test_wrong_counts_are_errors():
    payload = _payload()
    with pytest.raises(InvalidRecordError):
        skim_v2_records(payload, 21)
    with pytest.raises(InvalidRecordError):
        skim_v2_records(payload, 19)
    with pytest.raises(InvalidRecordError):
        skim_v2_records(payload, -1)


@pytest.mark.parametrize("count", [1, 255, 256, 257, 1000])
def test_between_is_called_after_every_slice_and_the_result_is_the_same(count):
    builder = RecordBatchBuilder(base_offset=0)
    for i in range(count):
        builder.append(b"k%d" % i, None if i % 7 == 0 else b"v" * (i % 300), timestamp=i)
    view = RecordBatchView(builder.build())
    payload = view.records_payload()
    calls = []
    records = skim_v2_records(payload, count, lambda: calls.append(1))
    assert len(calls) == -(-count // SLICE)
    assert records == skim_v2_records(payload, count)
    assert [r[1] for r in records] == [b"k%d" % i for i in range(count)]
