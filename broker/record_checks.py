"""Per-record produce checks (Kafka's ``validateRecord``) and the KIP-87 flag.

``check_records`` walks decoded record tuples ``(offset, timestamp, key,
value, headers, attributes)`` once and collects every failure, as Kafka does,
before raising. Each record gets at most one error, Kafka's ``validateRecord``
order: a null key on a compacted topic is INVALID_RECORD (its timestamp is
then not looked at); else, on a CreateTime topic, a timestamp (not -1)
outside ``message.timestamp.before/after.max.ms`` is INVALID_TIMESTAMP; else
a producer's batch claiming LogAppendTime is INVALID_TIMESTAMP (on a
LogAppendTime topic, or with timestamp -1; on a CreateTime topic the records'
timestamp, the batch's max timestamp, is range-checked instead and the batch
is stored as CreateTime). Legacy records are given their message's claim
(``claims``: a v1 message's attribute bit 3, which a plain message holds for
itself and a wrapper for all its records, whose timestamp is then the
wrapper's). The error text names such a record as Kafka does, less the
attributes, codec and CRC Kafka adds; no client sees it (only Produce v8+
carries texts, and only v0-v2 take legacy messages). INVALID_TIMESTAMP wins
when both codes occur. The
Produce v8+ response carries the per-record errors (``batch_index`` +
Kafka's message) and, as ``error_message``, Kafka's summary ("One or more
records have been rejected due to ..."); ``ValidationError.record_errors`` is
empty for every other (partition-level) error, which Kafka answers with no
message.

It also returns the indexes of records that carry the topic's
``tombstone.header`` and are not yet flagged: those get record attributes bit
0 (KIP-87). ``mark_tombstones_in_place`` sets that bit inside an uncompressed
v2 batch without re-encoding it: the attributes byte sits right after each
record's length varint, so it is a one-byte patch per record and one new CRC.

``scan_batch`` is the fast way to the same ``RecordScan`` for one v2 batch:
``scan_v2_records`` checks the records' structure exactly as the decoder does
but builds nothing, and gives the timestamp range and the null-key count. Only
when those say a record may fail (a null key on a compacted topic, a
timestamp range crossing the bounds) are the records decoded and handed to
``check_records``, which then finds and reports the failures as before.
``check_records`` itself first asks the accelerator for the same summary of
decoded rows without headers (``summarize_rows``: an up-conversion's rows) and
passes them from it when no check can fail; otherwise it looks at each row.

Timestamps are Java longs: a record's is ``baseTimestamp + timestampDelta``
wrapped to 64 bits, and the bounds check subtracts in the same arithmetic
(``now - ts`` past Long.MAX wraps negative, as Kafka's does). When base plus a
delta leaves the long range the records are decoded too, since the largest
wrapped timestamp is then not base plus the largest delta.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import attrs

from protocol import ErrorCode
from protocol.primitives import INT64_MAX
from protocol.records import TOMBSTONE_FLAG, RecordBatchView, TimestampType
from protocol.records._v2_records import decode_record_tuples
from protocol.records.scan import scan_v2_records, summarize_rows, tombstone_key
from protocol.records.v2 import RECORD_BATCH_OVERHEAD
from protocol.records.varint import decode_varint, java_long

_MAX_LISTED = 3  # Kafka's error_message lists the first three problems
_NO_LOG_APPEND_TIME = "Producer should not set timestamp type to LogAppendTime."


class ValidationError(Exception):
    """A partition-level produce error: ``error_code``, message and per-record errors (only for errors of
    records, Kafka's RecordValidationException, whose message Kafka sends as ``error_message``)."""

    def __init__(self, error_code: ErrorCode, message: str, record_errors: Iterable[tuple[int, str]] = ()) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.record_errors = list(record_errors)


@attrs.frozen
class RecordChecks:
    now_ms: int
    compacted: bool
    create_time: bool  # the topic's message.timestamp.type is CreateTime
    check_timestamps: bool  # CreateTime, and a bound some timestamp can break
    before_max_ms: int
    after_max_ms: int
    tombstone_header: str
    header_key: bytes | None = None  # tombstone_header as raw header key bytes (None: disabled)
    topic_partition: str = ""  # "topic-index", as Kafka's messages name it
    producer_log_append_time: bool = False  # the producer's v2 batch claims LogAppendTime

    @classmethod
    def for_config(cls, config, now_ms: int, topic_partition: str = "",
                   producer_log_append_time: bool = False) -> "RecordChecks":  # fmt: skip
        # With both bounds at Long.MAX (the default) no timestamp can fail Kafka's check.
        unbounded = min(config.timestamp_before_max_ms, config.timestamp_after_max_ms) >= INT64_MAX
        return cls(
            now_ms=now_ms,
            compacted=config.compacted,
            create_time=not config.log_append_time,
            check_timestamps=not config.log_append_time and not unbounded,
            before_max_ms=config.timestamp_before_max_ms,
            after_max_ms=config.timestamp_after_max_ms,
            tombstone_header=config.tombstone_header,
            header_key=tombstone_key(config.tombstone_header),
            topic_partition=topic_partition,
            producer_log_append_time=producer_log_append_time,
        )


def _record_error(row: tuple, checks: RecordChecks, claimed: bool | None = None) -> tuple[bool, str] | None:
    """Kafka's validateRecord for one record: ``(is a timestamp error, message)``, or None. ``claimed``: the
    LogAppendTime claim of this legacy record's message (None: a v2 record, whose batch's is in ``checks``)."""
    offset, ts, key, value, _headers, _attributes = row
    if key is None and checks.compacted:
        return False, f"Compacted topic cannot accept message without key in topic partition {checks.topic_partition}"
    if checks.create_time and ts != -1:
        if checks.check_timestamps and _out_of_range(ts, checks):
            low, high = java_long(checks.now_ms - checks.before_max_ms), java_long(checks.now_ms + checks.after_max_ms)
            return True, (f"Timestamp {ts} of message with offset {offset} is out of range. "
                          f"The timestamp should be within [{low}, {high}]")  # fmt: skip
        return None
    if checks.producer_log_append_time if claimed is None else claimed:
        sizes = f"key={len(key or b'')} bytes, value={len(value or b'')} bytes"
        shown = (f"DefaultRecord(offset={offset}, timestamp={ts}, {sizes})" if claimed is None
                 else f"LegacyRecordBatch(offset={offset}, Record(magic=1, LogAppendTime={ts}, {sizes}))")  # fmt: skip
        return True, f"Invalid timestamp type in message {shown}. {_NO_LOG_APPEND_TIME}"
    return None


def _out_of_range(ts: int, checks: RecordChecks) -> bool:
    """Kafka's recordHasInvalidTimestamp, in its long arithmetic (a difference past Long.MAX wraps)."""
    diff = java_long(checks.now_ms - ts)
    return diff > checks.before_max_ms or java_long(-diff) > checks.after_max_ms


def _rejected(errors: list[tuple[int, str]], timestamp_failed: bool) -> ValidationError:
    """Kafka's processRecordErrors: the partition's error, with its summary message."""
    if timestamp_failed:
        return ValidationError(ErrorCode.INVALID_TIMESTAMP,
                               "One or more records have been rejected due to invalid timestamp", errors)  # fmt: skip
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:_MAX_LISTED])
    return ValidationError(ErrorCode.INVALID_RECORD, f"One or more records have been rejected due to {len(errors)} "
                           f"record errors in total, and only showing the first three errors at most: [{shown}]",
                           errors)  # fmt: skip


@attrs.frozen
class RecordScan:
    """What one pass over a batch's records found, besides errors."""

    flagged: list[int]  # indexes of records to mark as KIP-87 tombstones
    max_timestamp: int
    sequential: bool  # offsets run 0, 1, 2 ... (relative to a client's base offset of 0)
    min_timestamp: int = -1  # the smallest record timestamp (-1 without records)


def check_records(tuples: list[tuple], checks: RecordChecks, claims: Sequence[bool] | None = None) -> RecordScan:
    """One pass over the records (none when their summary shows no check can fail): raise ``ValidationError``
    on bad ones, else report a ``RecordScan``.
    ``claims``: legacy records, with the LogAppendTime claim of each one's message."""
    if (passed := _passed_whole(tuples, checks, claims)) is not None:
        return passed
    errors: list[tuple[int, str]] = []
    timestamp_failed, sequential, max_ts = False, True, -1
    min_ts = tuples[0][1] if tuples else -1
    flag: list[int] = []
    header = checks.tombstone_header
    for i, row in enumerate(tuples):
        offset, ts, _key, _value, headers, attributes = row
        if offset != i:
            sequential = False
        if ts > max_ts:
            max_ts = ts
        if ts < min_ts:
            min_ts = ts
        problem = _record_error(row, checks, None if claims is None else claims[i])
        if problem is not None:
            timestamp_failed |= problem[0]
            errors.append((i, problem[1]))
        if headers and header and not attributes & TOMBSTONE_FLAG and any(h[0] == header for h in headers):
            flag.append(i)
    if errors:
        raise _rejected(errors, timestamp_failed)
    return RecordScan(flag, max_ts, sequential, min_ts)


def _passed_whole(rows: list[tuple], checks: RecordChecks, claims: Sequence[bool] | None) -> RecordScan | None:
    """The scan of rows without headers that no check can fail, from their summary alone (up-conversion's
    rows); None when one might fail or there is no summary: then each row is looked at."""
    found = summarize_rows(rows)
    if found is None or (checks.compacted and found.null_keys):
        return None
    if checks.producer_log_append_time if claims is None else any(claims):
        return None
    if checks.check_timestamps and _may_fail(found.min_timestamp, found.max_timestamp, checks):
        return None
    return RecordScan([], found.max_timestamp, found.in_order, found.min_timestamp)


def scan_batch(payload, batch: RecordBatchView, checks: RecordChecks) -> RecordScan:
    """``check_records`` for a client's v2 batch (base offset 0) given its records payload; the records of a
    batch claiming LogAppendTime all carry its max timestamp (Kafka reads them so)."""
    count, base_ts = batch.records_count, batch.base_timestamp
    found = scan_v2_records(payload, count, checks.header_key)
    low, high = base_ts + found.min_ts_delta, base_ts + found.max_ts_delta
    wraps = low != java_long(low) or high != java_long(high)  # then the largest timestamp is not base + max delta
    if checks.producer_log_append_time or (checks.compacted and found.null_keys) or wraps or (
        checks.check_timestamps and _may_fail(low, high, checks)
    ):
        append_time = batch.max_timestamp if checks.producer_log_append_time else None
        return check_records(list(decode_record_tuples(bytes(payload), count, 0, base_ts, append_time)), checks)
    return RecordScan(found.flag, max(-1, high), found.in_order, low if count else -1)


def _may_fail(low: int, high: int, checks: RecordChecks) -> bool:
    """Whether some timestamp in ``low..high`` breaks a bound (then each record is checked)."""
    return checks.now_ms - low > checks.before_max_ms or high - checks.now_ms > checks.after_max_ms


def mark_tombstones_in_place(view: RecordBatchView, indexes: list[int]) -> None:
    """Set attributes bit 0 on the given records of an uncompressed v2 batch; fix the CRC."""
    wanted = set(indexes)
    buf = view.buffer
    pos = RECORD_BATCH_OVERHEAD
    for i in range(view.records_count):
        length, body = decode_varint(buf, pos)
        if i in wanted:
            buf[body] |= TOMBSTONE_FLAG
        pos = body + length
    # maxTimestamp is rewritten with the same value only to recompute the CRC.
    view.set_max_timestamp(view.max_timestamp, TimestampType(view.timestamp_type))
