"""ListOffsets v0: Kafka's ``legacyFetchOffsetsBefore``, offsets at segment boundaries.

Before v1 a client asked for "up to N offsets before time T" and the broker
answered with segment boundaries, not record positions. Kafka builds the list
of (offset, time) pairs: each segment's base offset (raised to the log start
offset) with the segment file's last-modified time, plus, when the active
segment holds data, (log end offset, now: the broker's clock). Then:

* T = -1 (latest) starts from the last pair, T = -2 (earliest) from the first;
* any other T starts from the newest pair whose time is <= T (none: empty);
* up to ``max_num_offsets`` offsets are taken from there going back, newest
  first.

For a consumer (``replica_id`` -1) offsets above the high watermark are
replaced by the high watermark itself, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LATEST, EARLIEST = -1, -2


def _pairs(log: Any, now_ms: int) -> list[tuple[int, int]]:
    """(offset, time) per segment boundary, as Kafka lists them."""
    segments = list(log.segment_infos)
    pairs = [(max(s.base_offset, log.log_start_offset), _last_modified_ms(s.path)) for s in segments]
    if not segments or segments[-1].size > 0:
        pairs.append((log.log_end_offset, now_ms))
    return pairs


def _last_modified_ms(path: Path) -> int:
    try:
        return int(path.stat().st_mtime * 1000)
    except OSError:  # deleted under us by retention: as old as can be
        return -1


def legacy_offsets(log: Any, timestamp: int, max_num_offsets: int, from_consumer: bool, now_ms: int) -> list[int]:
    """The old-style offsets of one v0 partition; ``now_ms`` is the broker's clock (``Broker.clock``)."""
    pairs = _pairs(log, now_ms)
    if timestamp == LATEST:
        start = len(pairs) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = len(pairs) - 1
        while start >= 0 and pairs[start][1] > timestamp:
            start -= 1
    count = max(0, min(max_num_offsets, start + 1))
    offsets = sorted((pairs[start - j][0] for j in range(count)), reverse=True)
    if from_consumer:
        hw = log.high_watermark
        if any(o > hw for o in offsets):
            offsets = [hw] + [o for o in offsets if o <= hw]
    return offsets
