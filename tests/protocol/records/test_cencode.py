"""The C writer of v2 records (``_cencode.c``): the same bytes as the Python encoder, or it declines.

Up-conversion writes every legacy message it takes as a v2 record (``RecordBatchBuilder.extend`` and
``extend_renumbered``). Each check builds a batch with the accelerator and without and compares the
bytes (or the error); rows C must take are checked to be taken by it, and rows it must leave to
Python (headers, other types, offsets out of order, values past 64 bits) to be left.
"""

from __future__ import annotations

import random
import shutil
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import KafkaProtocolError
from protocol.records import Codec, RecordBatchBuilder, TimestampType, iter_batches
from protocol.records import builder as builder_module
from protocol.records.scan import summarize_rows
from tests.protocol.records.helpers import python_only

if shutil.which("cc"):  # a compiler is here, so setup must have built the accelerator
    from protocol.records import _cdownconvert as cdc
else:
    cdc = pytest.importorskip("protocol.records._cdownconvert")

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
BLOB = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=200, max_size=20_000))


def build(rows, *, renumber=False, timestamp=None, base_offset=0, extra=None):
    """The batch from ``rows`` (``extra`` appended after them by a second call), or the error's text."""
    b = RecordBatchBuilder(base_offset=base_offset, compression=Codec.NONE,
                           timestamp_type=TimestampType.LOG_APPEND_TIME if timestamp is not None else
                           TimestampType.CREATE_TIME, log_append_time=timestamp)  # fmt: skip
    try:
        for part in (rows, extra or []):
            b.extend_renumbered(part, timestamp) if renumber else b.extend(part)
        return b.build(), len(b), b.max_timestamp
    except (KafkaProtocolError, struct.error) as exc:  # struct: a max timestamp past 64 bits
        return type(exc).__name__, str(exc)


def both(*args, **kwargs):
    with_c = build(*args, **kwargs)
    with python_only():
        assert build(*args, **kwargs) == with_c
    return with_c


def taken_by_c(monkeypatch, rows, **kwargs) -> None:
    """Fails when the Python encoder is reached for ``rows``."""

    def refuse(*_a, **_k):
        raise AssertionError("the Python encoder ran")

    monkeypatch.setattr(builder_module, "encode_rows", refuse)
    monkeypatch.setattr(builder_module, "encode_record", refuse)
    assert not isinstance(build(rows, **kwargs)[0], str)


def random_rows(seed: int, n: int, *, start=0, gap=1) -> list[tuple]:
    rng = random.Random(seed)
    rows, offset = [], start
    for i in range(n):
        key = None if i % 5 == 1 else rng.randbytes(rng.randrange(0, 30))
        value = None if i % 7 == 3 else rng.randbytes(rng.choice((0, 10, 127, 128, 5000)))
        ts = 1_700_000_000_000 + rng.randrange(-100_000, 100_000)
        rows.append((offset, ts, key, value, (), rng.choice((0, 1, 0x101))))
        offset += rng.randrange(1, gap + 1)
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_plain_rows_are_written_by_c_as_python_writes_them(seed, monkeypatch):
    rows = random_rows(seed, 120, start=seed * 1000, gap=1 + seed)
    assert not isinstance(both(rows, base_offset=seed * 1000)[0], str)
    taken_by_c(monkeypatch, rows, base_offset=seed * 1000)


@pytest.mark.parametrize("timestamp", [None, 1_800_000_000_000])
def test_renumbered_rows_get_the_next_offsets_and_the_given_timestamp(timestamp, monkeypatch):
    rows = random_rows(7, 50, start=900, gap=3)  # their own offsets are not looked at
    data, count, max_ts = both(rows, renumber=True, timestamp=timestamp, base_offset=40, extra=rows[:5])
    records = list(next(iter_batches(data)).iter_tuples())
    assert [r[0] for r in records] == list(range(40, 95)) and count == 55
    expected = [r[1] for r in rows + rows[:5]] if timestamp is None else [timestamp] * 55
    assert [r[1] for r in records] == expected and max_ts == max(expected)
    assert [(r[2], r[3], r[5]) for r in records] == [(r[2], r[3], r[5] & 0xFF) for r in rows + rows[:5]]
    taken_by_c(monkeypatch, rows, renumber=True, timestamp=timestamp, base_offset=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), INT64, BLOB, BLOB, st.integers(0, 1 << 70)), min_size=1, max_size=8),
       st.integers(0, (1 << 62)), st.booleans())  # fmt: skip
def test_any_rows_agree(fields, base_offset, renumber):
    """Timestamps anywhere in 64 bits (the delta wraps as Java's does), attributes past a byte."""
    rows, offset = [], base_offset
    for gap, ts, key, value, attributes in fields:
        offset += gap
        rows.append((offset, ts, key, value, (), attributes))
    both(rows, base_offset=base_offset, renumber=renumber)


@pytest.mark.parametrize(
    "bad",
    [
        (5, 1000, b"k", b"v", (("h", b"x"),), 0),  # headers
        (5, 1000, bytearray(b"k"), b"v", (), 0),  # not bytes
        (5, 1000, b"k", memoryview(b"v"), (), 0),
        (1, 1000, b"k", b"v", (), 0),  # not above the row before
        (5, 1 << 64, b"k", b"v", (), 0),  # past 64 bits
        (1 << 40, 1000, b"k", b"v", (), 0),  # an offset delta past 32 bits
    ],
)
def test_rows_c_leaves_to_python_come_out_the_same(bad):
    rows = [(2, 1000, b"a", b"b", (), 0), (3, 1001, None, None, (), 0), bad]
    both(rows)
    assert cdc.encode_rows(bytearray(b"x"), rows, 0, 1000, -1, None, None) is None


def test_an_empty_list_of_headers_is_plain(monkeypatch):
    rows = [(0, 1000, b"a", b"b", [], 0), (1, 1001, None, None, (), 0)]
    assert both(rows)[1] == 2
    taken_by_c(monkeypatch, rows)


def test_declined_rows_leave_the_buffer_as_it_was():
    out = bytearray(b"before")
    rows = [(0, 1, b"k", b"v", (), 0), (0, 1, b"k", b"v", (), 0)]
    assert cdc.encode_rows(out, rows, 0, 1, -1, None, None) is None
    assert out == b"before"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), INT64, st.one_of(st.none(), st.just(b"k"))), max_size=8))
def test_summary_of_rows(fields):
    rows = [(off, ts, key, b"v", (), 0) for off, ts, key in fields]
    found = summarize_rows(rows)
    stamps = [r[1] for r in rows]
    assert found == (min(stamps, default=-1), max([-1, *stamps]), [r[0] for r in rows] == list(range(len(rows))),
                     sum(r[2] is None for r in rows))  # fmt: skip


def test_no_summary_for_rows_with_headers_or_without_the_accelerator():
    rows = [(0, 5, b"k", b"v", (("h", b"x"),), 0)]
    assert summarize_rows(rows) is None
    with python_only():
        assert summarize_rows([(0, 5, b"k", b"v", (), 0)]) is None


class _Clears:
    """An offset or timestamp that is not an int: its ``__index__`` empties the rows being written."""

    def __init__(self, rows: list) -> None:
        self.rows = rows

    def __index__(self) -> int:
        self.rows.clear()
        return 5


@pytest.mark.parametrize("field", [0, 1])
def test_rows_whose_numbers_are_not_ints_are_left_to_python(field):
    """C reads only exact ints, so no Python code runs between its sizing pass and its writing pass."""
    rows = [(i, 1000, b"k" * 100, b"v", (), 0) for i in range(2000)]
    row = list(rows[0])
    row[field] = _Clears(rows)
    rows[0] = tuple(row)
    out = bytearray()
    assert cdc.encode_rows(out, rows, 0, 1000, -1, None, None) is None and out == b"" and len(rows) == 2000
    assert cdc.scan_rows(rows) is None and len(rows) == 2000
