"""OffsetMap: sharded dicts (no shard grows big, none is GC-tracked), long keys, capacity, the live bitmap."""

from __future__ import annotations

import gc
import hashlib

from cleaner import offset_map as om
from cleaner.offset_map import SHARDS, SHORT_KEY, OffsetMap


def test_short_and_long_keys_round_trip_and_a_digest_lookalike_does_not_collide():
    m = OffsetMap(1 << 20)
    long_key = b"L" * (SHORT_KEY + 1)
    lookalike = hashlib.md5(long_key).digest() + bytes(SHORT_KEY - 16)  # a 64-byte key, stored as it is
    m.put(b"short", 1)
    m.put(long_key, 2)
    m.put(lookalike, 3)
    m.put(b"short", 4)
    assert (m.get(b"short"), m.get(long_key), m.get(lookalike), m.get(b"absent")) == (4, 2, 3, -1)
    assert len(m) == 3


def test_keys_spread_over_every_shard_and_no_shard_is_tracked_by_the_garbage_collector():
    m = OffsetMap(64 << 20)
    keys = [b"key-%08d" % i for i in range(50_000)]
    m.put_run(keys, 0)
    m.put(b"x" * 200, 50_000)  # a long key
    sizes = [len(shard) for shard in m.shards]
    assert len(sizes) == SHARDS and sum(sizes) == 50_001
    assert max(sizes) < 2 * 50_000 / SHARDS  # even: no shard approaches the size of the whole map
    assert not any(gc.is_tracked(shard) for shard in m.shards)
    assert all(m.get(k) == i for i, k in enumerate(keys[:1000]))


def test_has_room_for_counts_distinct_keys_not_puts():
    m = OffsetMap(om.ENTRY_BYTES * 10, load_factor=1.0)
    for offset in range(50):
        m.put(b"same", offset)
    assert m.has_room_for(9) and not m.has_room_for(10)
    m.put_run([b"k%d" % i for i in range(9)], 50)
    assert len(m) == 10 and not m.has_room_for(1) and m.utilization == 1.0


def test_live_offsets_mark_each_keys_latest_offset_from_the_first_dirty_offset():
    m = OffsetMap(1 << 20)
    m.begin(100)
    m.put_run([b"a", b"b", b"a", b"c", b"b"], 100)
    m.latest_offset = 104
    assert list(m.live_offsets()) == [0, 0, 1, 1, 1]
    assert m.decides(100, 104) and m.decides(102, 110)  # past latest_offset: kept by the filter anyway
    assert not m.decides(99, 104)  # starts before the map's first offset


def test_the_live_bitmap_is_bounded_and_batches_beyond_it_are_not_decided_by_it(monkeypatch):
    monkeypatch.setattr(om, "POSITION_BUDGET", 4)
    m = OffsetMap(1 << 20)
    m.begin(0)
    m.put_run([b"a", b"b", b"c", b"d", b"e", b"f"], 0)
    m.latest_offset = 5
    assert len(m.live_offsets()) == 4
    assert m.decides(0, 3) and not m.decides(2, 5)


def test_clear_starts_an_empty_round():
    m = OffsetMap(1 << 20)
    m.begin(10)
    m.put(b"a", 10)
    m.latest_offset = 10
    m.live_offsets()
    m.clear()
    assert len(m) == 0 and m.get(b"a") == -1 and m.latest_offset == -1 and len(m.live_offsets()) == 0


def test_clear_empties_the_shards_in_place_one_at_a_time():
    """The last round's keys are freed shard by shard, not by dropping every shard in one C call."""
    m = OffsetMap(64 << 20)
    m.put_run([b"key-%06d" % i for i in range(10_000)], 0)
    before = list(m.shards)
    m.clear()
    assert all(a is b for a, b in zip(before, m.shards)) and not any(before)
