"""When a partition log starts a new segment: Kafka's ``LogSegment.shouldRoll`` rules, and the KIP-354 timer.

``must_roll`` is the test made before each append (``Log.append``): the
active segment is non-empty and

* the batch would take it past ``segment.bytes``;
* the time since its first batch (by record timestamps; the wall clock
  when the segment has none) passed the roll interval minus the segment's
  jitter — ``segment.ms``, or for a compacted log ``min(segment.ms,
  max.compaction.lag.ms)`` (KIP-354);
* an index is full, or the batch's offsets would not fit an int32 offset
  relative to the segment's base.

``idle_roll_due`` is the same time rule from the broker's timer, beyond
Kafka (which rolls on append only), so that an idle compacted log still
rolls its active segment in time for the cleaner (KIP-354's guarantee):
only for a log whose ``cleanup.policy`` includes compact with
``max.compaction.lag.ms`` set. A segment this process created must also
have existed that long by the wall clock, so records stamped long ago (a
backfill) do not roll a new segment on every tick. A segment found on disk
at startup has no such wait: its ``created_ms`` is only the load time (as
Kafka's ``LogSegment.created``), and waiting on it would put the roll off by
a full lag after each restart, for ever if restarts come more often; it
rolls as soon as its first batch is older than the lag, as Kafka's
``rollingBasedTimestamp`` has it (once per restart at most for a backfill).
"""

from __future__ import annotations

from typing import Any

from .config import LONG_MAX

INT_MAX = 2**31 - 1


def max_segment_ms(config: Any) -> int:
    """The roll interval: ``segment.ms``, capped by ``max.compaction.lag.ms`` on a compacted log."""
    if "compact" in config.cleanup_policy and config.max_compaction_lag_ms > 0:
        return min(config.segment_ms, config.max_compaction_lag_ms)
    return config.segment_ms


def time_to_roll(log: Any, seg: Any, incoming_ts: int, now: int | None, idle: bool = False) -> bool:
    """Kafka's time rule; ``idle`` (the timer, with ``now``) also wants the segment that old by the clock."""
    if seg.size == 0:
        return False
    limit = max_segment_ms(log.config) - seg.roll_jitter_ms
    first = seg.first_batch_timestamp
    if first is not None and first >= 0:  # Kafka's timeWaitedForRoll: record time when it has one
        due = (incoming_ts if now is None else now) - first > limit
        young = idle and seg.made_in_this_run and now - seg.created_ms <= limit  # backfills: once a period
        return due and not young
    return (log.clock() if now is None else now) - seg.created_ms > limit


def must_roll(log: Any, size: int, last: int, max_ts: int) -> bool:
    """Whether a batch of ``size`` bytes ending at offset ``last`` needs a new active segment first."""
    seg = log.active
    return seg.size > 0 and (
        seg.size > log.config.segment_bytes - size
        or time_to_roll(log, seg, max_ts, None)
        or seg.index_full()
        or last - seg.base_offset > INT_MAX
    )


def idle_roll_due(log: Any, now_ms: int) -> bool:
    """The timer's roll (KIP-354): only a compacted log with ``max.compaction.lag.ms`` set (at least 1)."""
    c = log.config
    return "compact" in c.cleanup_policy and c.max_compaction_lag_ms < LONG_MAX and time_to_roll(
        log, log.active, -1, now_ms, idle=True)  # fmt: skip
