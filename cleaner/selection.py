"""Choosing the log to clean: Kafka's ``grabFilthiestCompactedLog`` with KIP-354's ordering.

For one compacted log (``cleanup.policy`` holding ``compact``), from a
snapshot of its segment list:

* ``first_dirty_offset``: the ``cleaner-offset-checkpoint`` entry, or the log
  start offset when there is none or it lies outside [log start, log end];
* ``first_uncleanable_offset``: the smallest of the last stable offset (the
  high watermark, or the first offset of the oldest undecided transaction
  when that is lower), the active segment's base offset and, with
  ``min.compaction.lag.ms`` > 0 (KIP-58), the base of the first dirty inactive
  segment whose largest timestamp (the ``.log`` mtime when no record has
  one, as Kafka's ``LogSegment.largestTimestamp``) is newer than ``now -
  min.compaction.lag.ms``; rounded down to the base of the segment holding it,
  as Kafka's ``calculateCleanableBytes`` does (so a round never reads past the
  last stable offset); never below the first dirty offset;
* ``clean_bytes`` (segments starting below the first dirty offset) and
  ``cleanable_bytes`` (segments overlapping [first dirty, first uncleanable),
  counted before that last clamp, so 0 when it applies);
  the dirty ratio is ``cleanable / (clean + cleanable)``;
* KIP-354: ``compaction_delay_ms`` is ``now - max.compaction.lag.ms`` minus the
  earliest first-batch timestamp (values <= 0 ignored) of the dirty inactive
  segments, when positive; the **must-clean ratio** (the seed's) is the size of
  the cleanable segments whose first batch is older than ``now -
  max.compaction.lag.ms`` over ``clean + cleanable``.

A log is cleanable when it must be cleaned (delay > 0) and has cleanable
bytes, or when its dirty ratio is strictly above ``min.cleanable.dirty.ratio``.
``choose`` orders cleanable logs by must-clean ratio first, then by dirty
ratio, as the KIP-354 seed specifies (Kafka itself only orders by dirty ratio).
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs


@attrs.frozen
class LogToClean:
    log: Any
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    must_clean_bytes: int
    compaction_delay_ms: int
    checkpoint_reset: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def must_clean_ratio(self) -> float:
        return self.must_clean_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def needs_compaction_now(self) -> bool:
        return self.compaction_delay_ms > 0

    @property
    def cleanable(self) -> bool:
        if self.needs_compaction_now and self.cleanable_bytes > 0:
            return True
        return self.dirty_ratio > self.log.config.min_cleanable_dirty_ratio

    @property
    def sort_key(self) -> tuple[float, float]:
        return (self.must_clean_ratio, self.dirty_ratio)


def is_compacted(log_: Any) -> bool:
    return "compact" in log_.config.cleanup_policy


def first_dirty_offset(log_: Any, checkpointed: int | None) -> tuple[int, bool]:
    """(first dirty offset, whether the checkpoint had to be reset to the log start)."""
    start = log_.log_start_offset
    if checkpointed is None:
        return start, False
    if checkpointed < start or checkpointed > log_.log_end_offset:
        return start, True
    return checkpointed, False


def _first_uncleanable(log_: Any, segments: list, first_dirty: int, now: int) -> int:
    """Kafka's bound, rounded down to a segment base; the caller clamps it to the first dirty offset."""
    limit = min(log_.last_stable_offset, segments[-1].base_offset)
    lag = log_.config.min_compaction_lag_ms
    if lag > 0:
        for seg in _dirty_inactive(segments, first_dirty):
            if seg.largest_timestamp_or_mtime() > now - lag:
                limit = min(limit, seg.base_offset)
                break
    return max((s.base_offset for s in segments if s.base_offset <= limit), default=limit)


def _dirty_inactive(segments: list, first_dirty: int) -> list:
    """Inactive segments holding offsets >= ``first_dirty``."""
    return [s for i, s in enumerate(segments[:-1]) if segments[i + 1].base_offset > first_dirty]


def earliest_dirty_timestamp(segments: list, first_dirty: int) -> int | None:
    stamps = [t for s in _dirty_inactive(segments, first_dirty) if (t := s.first_batch_timestamp or 0) > 0]
    return min(stamps, default=None)


def compaction_delay(log_: Any, segments: list, first_dirty: int, now: int) -> int:
    """KIP-354: how long past ``max.compaction.lag.ms`` the oldest dirty record is (0 if not)."""
    earliest = earliest_dirty_timestamp(segments, first_dirty)
    clean_until = now - log_.config.max_compaction_lag_ms
    return clean_until - earliest if earliest is not None and earliest < clean_until else 0


def log_to_clean(log_: Any, checkpointed: int | None, now: int) -> LogToClean:
    segments = list(log_.segments)
    dirty, reset = first_dirty_offset(log_, checkpointed)
    bound = _first_uncleanable(log_, segments, dirty, now)
    clean_until = now - log_.config.max_compaction_lag_ms
    clean = cleanable = must = 0
    for i, seg in enumerate(segments):
        end = segments[i + 1].base_offset if i + 1 < len(segments) else log_.log_end_offset
        if seg.base_offset < dirty:
            clean += seg.size
        if end > dirty and seg.base_offset < bound:
            cleanable += seg.size
            first = seg.first_batch_timestamp or 0
            if 0 < first < clean_until:
                must += seg.size
    delay = compaction_delay(log_, segments, dirty, now)
    return LogToClean(log_, dirty, max(bound, dirty), clean, cleanable, must, delay, reset)


def choose(candidates: Iterable[LogToClean]) -> LogToClean | None:
    """The log to clean next: highest must-clean ratio, then highest dirty ratio."""
    cleanable = [c for c in candidates if c.cleanable]
    return max(cleanable, key=lambda c: c.sort_key, default=None)
