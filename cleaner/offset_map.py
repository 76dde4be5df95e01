"""The dedupe map of pass 1: record key -> latest offset, bounded like Kafka's SkimpyOffsetMap.

Kafka sizes its map from ``log.cleaner.dedupe.buffer.size`` split across
``log.cleaner.threads``: 24 bytes a slot (a 16-byte MD5 of the key plus an
8-byte offset), full at ``log.cleaner.io.buffer.load.factor`` of the slots.
We keep the same *capacity* rule, so a round covers as many distinct keys as
Kafka's would and a full map ends the round early in the same places, but
store entries in Python dicts: keys of up to 64 bytes are stored as they are
(no hashing cost, no collisions), longer ones as their MD5 digest padded to
65 bytes (which never equals a short key). Like Kafka, an MD5 collision
between two long keys is accepted.

The entries are spread over ``SHARDS`` dicts by the key's hash. One dict of
half a million keys would double its table in a single C call holding the
GIL for 10-25 ms, and the broker's thread would wait that long to answer
(bench/bench_cleaner.py); a shard holds 1/256 of the keys, so each growth step
stays well under a millisecond.
Keys and offsets are bytes and ints, so no shard is ever tracked by the
cyclic garbage collector.

``latest_offset`` is the last offset the map has covered; the round cleans up
to ``latest_offset + 1``. ``utilization`` is entries over slots, the figure
behind ``max-buffer-utilization-percent``.

Pass 1 also remembers, for dirty batches with contiguous offsets and no
delete horizon, where each record starts and whether it is a tombstone (4
bytes a record, the tombstone in the top bit, up to ``POSITION_BUDGET``
records a round). In the dirty section a record survives exactly when the map
holds its own offset, so pass 2 decides those batches from ``live_offsets()``,
a byte per offset from ``first_offset`` (a set of ints would be as slow to
grow, and the garbage collector would walk it), and the positions, without
parsing a record again.
"""

from __future__ import annotations

import hashlib
from array import array
from typing import Callable

ENTRY_BYTES = 24  # Kafka's hash (16) + offset (8)
MAX_MAP_BYTES = 2**31 - 1
SHORT_KEY = 64
SHARDS = 256
GIL_SLICE = 1024  # records per step of the cleaner's loops, between which the broker's thread gets its turn
POSITION_BUDGET = 16 << 20  # records whose start positions a round may remember (64 MiB)
_LONG_KEY_PAD = bytes(SHORT_KEY + 1 - 16)


def map_key(key: bytes) -> bytes:
    """The dict key for a record key (see the module docstring)."""
    if len(key) <= SHORT_KEY:
        return key
    return hashlib.md5(key).digest() + _LONG_KEY_PAD


class OffsetMap:
    """A bounded key -> offset map; see the module docstring."""

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = max(1, min(memory_bytes, MAX_MAP_BYTES) // ENTRY_BYTES)
        self.capacity = max(1, int(self.slots * load_factor))
        self.shards: list[dict] = [{} for _ in range(SHARDS)]
        self.clear()

    @classmethod
    def for_threads(cls, dedupe_buffer_size: int, threads: int, load_factor: float) -> "OffsetMap":
        return cls(dedupe_buffer_size // max(1, threads), load_factor)

    def __len__(self) -> int:
        return sum(map(len, self.shards))

    def begin(self, first_offset: int) -> None:
        """Start covering offsets from ``first_offset`` (the round's first dirty offset)."""
        self.first_offset, self.latest_offset = first_offset, first_offset - 1

    def has_room_for(self, count: int) -> bool:
        if self._at_most + count <= self.capacity:  # an upper bound, so most batches skip the count
            return True
        self._at_most = len(self)
        return self._at_most + count <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        k = map_key(key)
        self.shards[hash(k) & (SHARDS - 1)][k] = offset
        self._at_most += 1

    def put_run(self, keys: list[bytes], first_offset: int) -> None:
        """Put short (``<= SHORT_KEY``), non-null keys at consecutive offsets from ``first_offset``."""
        shards, mask = self.shards, SHARDS - 1
        for offset, key in enumerate(keys, first_offset):
            shards[hash(key) & mask][key] = offset
        self._at_most += len(keys)

    def get(self, key: bytes) -> int:
        """The latest offset for ``key``, -1 when the map has none (so the record is kept)."""
        k = map_key(key)
        return self.shards[hash(k) & (SHARDS - 1)].get(k, -1)

    def clear(self) -> None:
        """Empty the map for a new round, a shard at a time: dropping every shard at once frees the last
        round's keys in one C call (13 ms for half a million), holding the GIL all along."""
        for shard in self.shards:
            shard.clear()
        self.first_offset, self.latest_offset, self._at_most = 0, -1, 0
        self.positions: dict[int, array] = {}
        self.keyless, self._remembered, self._live = 0, 0, None  # keyless records of the batches in ``positions``

    def remember_positions(self, base_offset: int, starts: list[int], end: int) -> bool:
        """Keep a skimmed batch's record starts (tombstone bit included) and end, if the budget allows."""
        if self._remembered + len(starts) > POSITION_BUDGET:
            return False
        positions = array("I", starts)
        positions.append(end)
        self.positions[base_offset] = positions
        self._remembered += len(starts)
        return True

    def live_offsets(self, between: Callable[[], None] = lambda: None) -> bytearray:
        """Byte ``o - first_offset`` is 1 when the map points at offset ``o``: a surviving record of the
        dirty section. Covers ``first_offset`` to ``latest_offset``, ``POSITION_BUDGET`` offsets at most;
        ``between`` is called about every ``GIL_SLICE`` entries."""
        if self._live is None:
            first = self.first_offset
            live = bytearray(max(0, min(self.latest_offset + 1 - first, POSITION_BUDGET)))
            span, done = len(live), 0
            for shard in self.shards:
                for offset in shard.values():
                    if 0 <= offset - first < span:
                        live[offset - first] = 1
                done += len(shard)
                if done >= GIL_SLICE:
                    between()
                    done = 0
            self._live = live
        return self._live

    def decides(self, base_offset: int, last_offset: int, between: Callable[[], None] = lambda: None) -> bool:
        """True when ``live_offsets()`` covers the part of ``[base_offset, last_offset]`` the map covered."""
        end = min(last_offset, self.latest_offset) - self.first_offset
        return base_offset >= self.first_offset and end < len(self.live_offsets(between))

    @property
    def utilization(self) -> float:
        return len(self) / self.slots
