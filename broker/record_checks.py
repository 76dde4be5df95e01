"""Per-record produce checks (Kafka's ``validateRecord``) and the KIP-87 flag.

``check_records`` walks decoded record tuples ``(offset, timestamp, key,
value, headers, attributes)`` once and collects every failure, as Kafka does,
before raising: a null key on a compacted topic is INVALID_RECORD, a
CreateTime timestamp outside ``message.timestamp.before/after.max.ms`` is
INVALID_TIMESTAMP, and INVALID_TIMESTAMP wins when both occur. The Produce v8+
response carries the per-record errors (``batch_index`` + message).

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
"""

from __future__ import annotations

from typing import Iterable

import attrs

from protocol import ErrorCode
from protocol.primitives import INT64_MAX
from protocol.records import TOMBSTONE_FLAG, RecordBatchView, TimestampType
from protocol.records._v2_records import decode_record_tuples
from protocol.records.scan import scan_v2_records, tombstone_key
from protocol.records.v2 import RECORD_BATCH_OVERHEAD
from protocol.records.varint import decode_varint

_MAX_LISTED = 3  # Kafka's error_message lists the first three problems


class ValidationError(Exception):
    """A partition-level produce error: ``error_code``, message and per-record errors."""

    def __init__(self, error_code: ErrorCode, message: str, record_errors: Iterable[tuple[int, str]] = ()) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.record_errors = list(record_errors)


@attrs.frozen
class RecordChecks:
    now_ms: int
    compacted: bool
    check_timestamps: bool
    before_max_ms: int
    after_max_ms: int
    tombstone_header: str
    header_key: bytes | None = None  # tombstone_header as raw header key bytes (None: disabled)

    @classmethod
    def for_config(cls, config, now_ms: int) -> "RecordChecks":
        # With both bounds at Long.MAX (the default) no timestamp can fail Kafka's check.
        unbounded = min(config.timestamp_before_max_ms, config.timestamp_after_max_ms) >= INT64_MAX
        return cls(
            now_ms=now_ms,
            compacted=config.compacted,
            check_timestamps=not config.log_append_time and not unbounded,
            before_max_ms=config.timestamp_before_max_ms,
            after_max_ms=config.timestamp_after_max_ms,
            tombstone_header=config.tombstone_header,
            header_key=tombstone_key(config.tombstone_header),
        )


def _timestamp_error(ts: int, checks: RecordChecks) -> str | None:
    if ts == -1:
        return None
    if checks.now_ms - ts > checks.before_max_ms or ts - checks.now_ms > checks.after_max_ms:
        return f"Timestamp {ts} of message with offset is out of range"
    return None


@attrs.frozen
class RecordScan:
    """What one pass over a batch's records found, besides errors."""

    flagged: list[int]  # indexes of records to mark as KIP-87 tombstones
    max_timestamp: int
    sequential: bool  # offsets run 0, 1, 2 ... (relative to a client's base offset of 0)


def check_records(tuples: list[tuple], checks: RecordChecks) -> RecordScan:
    """One pass over the records: raise ``ValidationError`` on bad ones, else report a ``RecordScan``."""
    errors: list[tuple[int, str]] = []
    timestamp_failed, sequential, max_ts = False, True, -1
    flag: list[int] = []
    header = checks.tombstone_header
    compacted, check_ts = checks.compacted, checks.check_timestamps
    for i, (offset, ts, key, _value, headers, attributes) in enumerate(tuples):
        if offset != i:
            sequential = False
        if ts > max_ts:
            max_ts = ts
        if key is None and compacted:
            errors.append((i, "Compacted topic cannot accept message without key in topic partition"))
        if check_ts:
            problem = _timestamp_error(ts, checks)
            if problem:
                timestamp_failed = True
                errors.append((i, problem))
        if headers and header and not attributes & TOMBSTONE_FLAG and any(h[0] == header for h in headers):
            flag.append(i)
    if errors:
        code = ErrorCode.INVALID_TIMESTAMP if timestamp_failed else ErrorCode.INVALID_RECORD
        listed = "; ".join(f"record {i}: {msg}" for i, msg in errors[:_MAX_LISTED])
        raise ValidationError(code, listed, errors)
    return RecordScan(flag, max_ts, sequential)


def scan_batch(payload, batch: RecordBatchView, checks: RecordChecks) -> RecordScan:
    """``check_records`` for a client's v2 batch (base offset 0, CreateTime) given its records payload."""
    count, base_ts = batch.records_count, batch.base_timestamp
    found = scan_v2_records(payload, count, checks.header_key)
    if (checks.compacted and found.null_keys) or (
        checks.check_timestamps and _may_fail(base_ts + found.min_ts_delta, base_ts + found.max_ts_delta, checks)
    ):
        return check_records(list(decode_record_tuples(bytes(payload), count, 0, base_ts, None)), checks)
    return RecordScan(found.flag, max(-1, base_ts + found.max_ts_delta), found.in_order)


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
