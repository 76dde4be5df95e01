"""KIP-724 in the cleaner: v0/v1 entries always come out as v2, even when nothing is removed."""

from __future__ import annotations

import pytest

from cleaner import CleanerConfig, LogCleaner
from protocol.records import Codec, RecordBatchBuilder, TimestampType
from tests.cleaner.helpers import compacted_log, open_manager, read_batches, read_records
from tests.storage.lead_helpers import Clock

TS = 1_700_000_000_000


def _legacy(log_, magic: int, codec: Codec, keys: list[bytes]) -> int:
    base = log_.log_end_offset
    b = RecordBatchBuilder(magic=magic, compression=codec, base_offset=base)
    for i, key in enumerate(keys):
        b.append(key, b"v%d" % (base + i), timestamp=TS + base + i, offset=base + i)
    log_.append(b.build(), base, base + len(keys) - 1, TS + base + len(keys) - 1)
    return base


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_entries_become_v2_batches_with_offsets_and_timestamps_kept(tmp_path, magic):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    _legacy(log_, magic, Codec.NONE, [b"a", b"b"])  # two uncompressed messages
    _legacy(log_, magic, Codec.GZIP, [b"c", b"d", b"e"])  # one wrapper
    _legacy(log_, magic, Codec.SNAPPY, [b"a", b"f"])  # supersedes offset 0
    log_.roll()
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    batches = read_batches(log_)
    assert {b.magic for b in batches} == {2}
    shape = [(b.base_offset, b.last_offset, b.records_count, b.compression) for b in batches]
    assert shape == [(1, 1, 1, Codec.NONE), (2, 4, 3, Codec.GZIP), (5, 6, 2, Codec.SNAPPY)]
    records = read_records(log_)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (1, b"b", b"v1"), (2, b"c", b"v2"), (3, b"d", b"v3"), (4, b"e", b"v4"), (5, b"a", b"v5"), (6, b"f", b"v6")]
    expected_ts = [-1] * 6 if magic == 0 else [TS + r.offset for r in records]
    assert [r.timestamp for r in records] == expected_ts
    assert {b.timestamp_type for b in batches} == {TimestampType.CREATE_TIME}


def test_a_legacy_segment_with_nothing_to_remove_is_still_rewritten(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    _legacy(log_, 1, Codec.LZ4, [b"x", b"y"])
    log_.roll()
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    (batch,) = read_batches(log_)
    assert (batch.magic, batch.compression, batch.records_count) == (2, Codec.LZ4, 2)


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_wrapper_that_loses_records_spans_only_those_kept(tmp_path, magic):
    """Kafka's ``MemoryRecords.filterTo`` builds a legacy entry's survivors from the first one kept to the last
    (only a v2 batch keeps its base and last offsets): here the wrapper's first and last go."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm)
    _legacy(log_, magic, Codec.GZIP, [b"a", b"b", b"c", b"d"])  # 0..3
    _legacy(log_, magic, Codec.NONE, [b"a", b"d"])  # 4, 5: supersede 0 and 3
    log_.roll()
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    shape = [(b.magic, b.base_offset, b.last_offset, b.records_count, b.compression) for b in read_batches(log_)]
    assert shape == [(2, 1, 2, 2, Codec.GZIP), (2, 4, 4, 1, Codec.NONE), (2, 5, 5, 1, Codec.NONE)]
    assert [(r.offset, r.key) for r in read_records(log_)] == [(1, b"b"), (2, b"c"), (4, b"a"), (5, b"d")]
