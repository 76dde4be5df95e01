"""``scan_v2_records`` agrees with the full decoder: same findings on valid records, same error on bad ones.

The reference is ``decode_record_tuples`` (what the broker used before): the
scan must report the same timestamp range, null keys, offset order and
KIP-87 flags, and on corrupt input raise ``InvalidRecordError`` with the same
message. Every check runs the scan with the C accelerator (``_cscan.c``, with
the Python scan behind it for what it declines) and without, and both must agree. Batches are built from runs of same-shaped records (what the
column-wise run check handles) mixed with odd ones (what the scalar loop
handles), then mutated and truncated.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.errors import InvalidRecordError
from protocol.records import RecordBatchBuilder, RecordBatchView
from protocol.records._v2_records import decode_record_tuples
from protocol.records.scan import scan_v2_records, tombstone_key
from tests.protocol.records.helpers import python_only

HEADER = "kafka.tombstone"
HKEY = tombstone_key(HEADER)


def reference(payload: bytes, count: int, header: str = HEADER):
    try:
        rows = list(decode_record_tuples(payload, count, 0, 0, None))
    except InvalidRecordError as exc:
        return "error", str(exc)
    ts = [r[1] for r in rows]
    flag = [i for i, r in enumerate(rows)
            if r[4] and header and not r[5] & 1 and any(h[0] == header for h in r[4])]  # fmt: skip
    return "ok", (min(ts, default=None), max(ts, default=None), sum(r[2] is None for r in rows),
                  all(r[0] == i for i, r in enumerate(rows)), flag)  # fmt: skip


def scanned(payload: bytes, count: int, key=HKEY):
    """The scan's finding (or error), which the C scan and the Python scan must agree on."""
    with_c = _scanned(payload, count, key)
    with python_only():
        assert _scanned(payload, count, key) == with_c
    return with_c


def _scanned(payload: bytes, count: int, key):
    try:
        s = scan_v2_records(payload, count, key)
    except InvalidRecordError as exc:
        return "error", str(exc)
    empty = count == 0
    return "ok", (None if empty else s.min_ts_delta, None if empty else s.max_ts_delta, s.null_keys, s.in_order,
                  s.flag)  # fmt: skip


RUN = st.tuples(
    st.integers(1, 120),  # records in the run
    st.none() | st.integers(0, 40),  # key size (None: null key)
    st.none() | st.integers(0, 300),  # value size (None: null value)
    st.integers(-3, 200),  # timestamp step between records
    st.sampled_from([(), (("h", b"x"),), ((HEADER, b""),), ((HEADER, None), ("z", b"1"))]),
    st.integers(0, 1),  # record attributes
    st.integers(1, 2),  # offset gap (2: offsets out of order for the broker)
)


def build_payload(runs, start_ts: int = 0, first_offset: int = 0) -> tuple[bytes, int]:
    builder = RecordBatchBuilder()
    ts, offset = start_ts, first_offset - 1
    for n, key_size, value_size, step, headers, attributes, gap in runs:
        for _ in range(n):
            ts += step
            offset += 1 if offset < first_offset else gap
            key = None if key_size is None else b"k" * key_size
            value = None if value_size is None else b"v" * value_size
            builder.append(key, value, timestamp=ts, headers=headers, offset=offset, attributes=attributes)
    view = RecordBatchView(builder.build())
    return view.records_payload(), view.records_count


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RUN, min_size=1, max_size=6), st.integers(-(2**40), 2**40), st.integers(0, 9000))
def test_scan_matches_the_decoder_on_valid_batches(runs, start_ts, first_offset):
    payload, count = build_payload(runs, start_ts, first_offset)
    expected = reference(payload, count)
    assert expected[0] == "ok"
    assert scanned(payload, count) == expected
    assert scanned(payload, count, None)[1][:4] == expected[1][:4]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RUN, min_size=1, max_size=4), st.randoms(use_true_random=False), st.integers(-2, 2))
def test_scan_fails_exactly_like_the_decoder_on_corrupt_batches(runs, rng, count_change):
    payload, count = build_payload(runs)
    data = bytearray(payload)
    for _ in range(rng.randint(0, 3)):
        data[rng.randrange(len(data))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    cut = rng.choice([len(data), rng.randrange(len(data) + 1)])
    corrupt, n = bytes(data[:cut]), max(count + count_change, 0)
    assert scanned(corrupt, n) == reference(corrupt, n)


@pytest.mark.parametrize("seed", range(300))
def test_every_kind_of_single_byte_damage_in_long_uniform_runs(seed):
    rng = random.Random(seed)
    payload, count = build_payload([(rng.randint(50, 400), 8, 100, rng.choice([0, 1, 70]), (), 0, 1)],
                                   first_offset=rng.choice([0, 8150]))  # fmt: skip
    data = bytearray(payload)
    data[rng.randrange(len(data))] = rng.randrange(256)
    assert scanned(bytes(data), count) == reference(bytes(data), count)


def test_many_records_cross_every_varint_width():
    payload, count = build_payload([(9000, 3, 20, 1, (), 0, 1)])  # offset deltas reach 3 bytes, ts 2 bytes
    assert scanned(payload, count) == reference(payload, count)
    payload, count = build_payload([(300, 3, 20, 0, (), 0, 1), (10, 3, 20, 70, (), 0, 1), (300, 3, 20, -1, (), 0, 1)])
    assert scanned(payload, count) == reference(payload, count)


def test_header_name_matching_follows_the_decoder():
    assert tombstone_key("") is None
    assert tombstone_key("\ud800") is None  # no header key decodes to a lone surrogate outside the escapes
    payload, count = build_payload([(3, 1, 1, 0, (("\udcff", b""),), 0, 1)])
    assert scanned(payload, count, tombstone_key("\udcff")) == reference(payload, count, "\udcff")
    assert scanned(payload, count, tombstone_key("\udcff"))[1][4] == [0, 1, 2]


def test_the_c_scan_takes_valid_records_in_place():
    cscan = pytest.importorskip("protocol.records._cdownconvert").scan
    payload, count = build_payload([(50, 4, 30, 1, (), 0, 1), (5, None, 3, 2, ((HEADER, b""),), 0, 1)])
    found = cscan(memoryview(payload), count, HKEY)  # a memoryview of the request, as the validator passes
    assert found is not None and found == tuple(scan_v2_records(payload, count, HKEY))
    assert found[4] == [50, 51, 52, 53, 54] and found[2] == 5
    assert cscan(payload, count, None)[4] == []
    for odd in (payload[:-1], payload + b"\x00"):  # anything unusual goes to the Python scan
        assert cscan(odd, count, HKEY) is None
    assert cscan(payload, count + 1, HKEY) is None and cscan(b"", 0, HKEY) is None
