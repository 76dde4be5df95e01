"""Cleaning a batch whose record timestamps wrap past Java's long, as Kafka stores it (its Produce accepts one).

A v2 record's timestamp is ``baseTimestamp + timestampDelta`` in long arithmetic: with baseTimestamp
Long.MIN + 10, a delta of -100 reads as Long.MAX - 89. Whether kept records are spliced (their bytes
copied) or re-encoded against a new delete horizon, they keep the timestamps Kafka reads, and the batch's
``maxTimestamp`` is the largest of them.
"""

from __future__ import annotations

import struct

import crc32c
import pytest

from protocol.records import RecordBatchBuilder
from tests.cleaner.helpers import compacted_log, open_manager, read_batches, write
from tests.cleaner.test_cleaning import _cleaner
from tests.storage.lead_helpers import Clock

LOW, HIGH = -(1 << 63) + 10, (1 << 63) - 90  # base, and base - 100 wrapped


def _write_wrapped(log_, records: list[tuple[bytes, bytes | None, int]]) -> None:
    """One batch of ``(key, value, timestamp delta)`` at baseTimestamp Long.MIN + 10."""
    base = log_.log_end_offset
    builder = RecordBatchBuilder(base_offset=base)
    for key, value, delta in records:
        builder.append(key, value, timestamp=1000 + delta)
    data = bytearray(builder.build())
    struct.pack_into(">qq", data, 27, LOW, HIGH)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    log_.append(bytes(data), base, base + len(records) - 1, HIGH)


@pytest.mark.parametrize(
    "first, kept",
    [
        ([(b"a", b"1", 0), (b"b", b"1", -100)], [(b"b", b"1", HIGH)]),  # spliced: Long.MIN - 90 wraps
        ([(b"a", b"1", 0), (b"b", b"1", -100), (b"c", b"1", 0)], [(b"b", b"1", HIGH), (b"c", b"1", LOW)]),
        ([(b"t", None, 0), (b"a", b"1", -100), (b"c", b"1", -100)], [(b"t", None, LOW), (b"c", b"1", HIGH)]),
    ],
    ids=["splice-one", "splice-max-after-wrap", "tombstone-gets-a-horizon"],
)
def test_wrapped_timestamps_are_cleaned_as_kafka_reads_them(tmp_path, first, kept):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, delete_retention_ms=86_400_000)
    _write_wrapped(log_, first)
    write(log_, [(b"a", b"2", 0)])
    log_.roll()
    cleaner = _cleaner(lm, clock)
    assert cleaner.run_once()
    assert [n for n, _bytes in cleaner.manager.uncleanable_by_dir().values()] == [0]
    assert lm.cleaner_offsets()[("t", 0)] == log_.log_end_offset
    batches = read_batches(log_)
    assert [(r.key, r.value, r.timestamp) for r in batches[0]] == kept
    assert batches[0].max_timestamp == max(ts for _k, _v, ts in kept)
    assert [r.value for r in batches[1]] == [b"2"]
