"""The dedupe map of pass 1: record key -> latest offset, bounded like Kafka's SkimpyOffsetMap.

Kafka sizes its map from ``log.cleaner.dedupe.buffer.size`` split across
``log.cleaner.threads``: 24 bytes a slot (a 16-byte MD5 of the key plus an
8-byte offset), full at ``log.cleaner.io.buffer.load.factor`` of the slots.
We keep the same *capacity* rule, so a round covers as many distinct keys as
Kafka's would and a full map ends the round early in the same places, but
store entries in a Python ``dict``: keys of up to 64 bytes are stored as they
are (no hashing cost, no collisions), longer ones by their MD5 digest inside a
tuple (which never equals a ``bytes`` key). Like Kafka, an MD5 collision
between two long keys is accepted.

``latest_offset`` is the last offset the map has covered; the round cleans up
to ``latest_offset + 1``. ``utilization`` is entries over slots, the figure
behind ``max-buffer-utilization-percent``.

Pass 1 also remembers, for dirty batches with contiguous offsets and no
delete horizon, where each record starts and whether it is a tombstone (4
bytes a record, the tombstone in the top bit, up to
``POSITION_BUDGET`` records a round). In the dirty section a record survives
exactly when the map holds its own offset, so pass 2 decides those batches
from ``live_offsets()`` and the positions without parsing a record again.

Big containers are filled and emptied in slices of ``GIL_SLICE`` items: a
single C call over half a million entries holds the GIL for tens of
milliseconds, and the broker's thread would wait that long to answer.
"""

from __future__ import annotations

import hashlib
from array import array
from itertools import islice

from protocol.records.skim import TOMBSTONE_BIT

ENTRY_BYTES = 24  # Kafka's hash (16) + offset (8)
MAX_MAP_BYTES = 2**31 - 1
SHORT_KEY = 64
GIL_SLICE = 1024  # items per C call on big containers: one call holds the GIL, the broker's thread waits
POSITION_BUDGET = 16 << 20  # records whose start positions a round may remember (64 MiB)


def map_key(key: bytes):
    """The dict key for a record key (see the module docstring)."""
    if len(key) <= SHORT_KEY:
        return key
    return (hashlib.md5(key).digest(),)


class OffsetMap:
    """A bounded key -> offset map; see the module docstring."""

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.slots = max(1, min(memory_bytes, MAX_MAP_BYTES) // ENTRY_BYTES)
        self.capacity = max(1, int(self.slots * load_factor))
        self.entries: dict = {}
        self.latest_offset = -1
        self.positions: dict[int, array] = {}
        self.keyless = 0  # keyless records of the batches in ``positions``
        self._remembered = 0
        self._live: set[int] | None = None

    @classmethod
    def for_threads(cls, dedupe_buffer_size: int, threads: int, load_factor: float) -> "OffsetMap":
        return cls(dedupe_buffer_size // max(1, threads), load_factor)

    def __len__(self) -> int:
        return len(self.entries)

    def has_room_for(self, count: int) -> bool:
        return len(self.entries) + count <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self.entries[map_key(key)] = offset

    def get(self, key: bytes) -> int:
        """The latest offset for ``key``, -1 when the map has none (so the record is kept)."""
        return self.entries.get(map_key(key), -1)

    def clear(self) -> None:
        _release(self.entries)
        self.entries = {}
        self.latest_offset = -1
        self.positions, self.keyless, self._remembered, self._live = {}, 0, 0, None

    def remember_positions(self, base_offset: int, starts: list[int], end: int) -> bool:
        """Keep a skimmed batch's record starts (tombstone bit included) and end, if the budget allows."""
        if self._remembered + len(starts) > POSITION_BUDGET:
            return False
        positions = array("I", starts)
        positions.append(end)
        self.positions[base_offset] = positions
        self._remembered += len(starts)
        return True

    def live_offsets(self) -> set[int]:
        """The offsets the map points at: the surviving records of the dirty section."""
        if self._live is None:
            live: set[int] = set()
            values = iter(self.entries.values())
            while chunk := list(islice(values, GIL_SLICE)):
                live.update(chunk)
            self._live = live
        return self._live

    @property
    def utilization(self) -> float:
        return len(self.entries) / self.slots


def _release(entries: dict) -> None:
    """Empty a big dict a slice at a time (one C call freeing it all would hold the GIL for long)."""
    while entries:
        for _ in range(min(GIL_SLICE, len(entries))):
            entries.popitem()
