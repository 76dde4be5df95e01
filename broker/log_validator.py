"""Produce-side validation and offset assignment (Kafka's LogValidator), sync and pure.

``validate_and_assign(records, ...)`` takes one partition's records from a
Produce request and returns the bytes to append, with offsets starting at
the log end offset, or raises ``ValidationError`` carrying the partition's
error code (reference §3). The three paths:

* **in place** - magic 2 with the producer's codec kept (uncompressed, or the
  same codec as the topic wants): every record is read to check structure,
  keys and timestamps, then ``baseOffset``, the leader epoch and
  ``maxTimestamp`` are patched into the request buffer itself; the
  (compressed) payload is never rewritten;
* **rebuild** - anything else (legacy magic 0/1 up-converted to v2, topic codec
  differs, records needing the KIP-87 flag set inside a compressed batch,
  non-sequential inner offsets): records are decoded and written again as
  *one* v2 batch with the target codec, keeping producer fields of the first
  batch; this is counted as a conversion. As in Kafka, the topic's KIP-390
  level (``compression.lz4.level`` ...) applies when the topic names a codec;
  under ``producer`` the producer's codec is used at its default level;
* a rebuilt batch may not carry a negative record timestamp other than -1
  (Kafka's builder throws; the partition gets UNKNOWN_SERVER_ERROR), while the
  in-place path stores one as Kafka does. A v2 record's timestamp is
  ``baseTimestamp + timestampDelta`` wrapped to 64 bits (Java's long);
* legacy input is read as Kafka reads it: each plain message is a batch of its
  own, checked in turn (a magic other than the first one's, its record checks,
  and, with no codec to apply, the builder's refusal of a timestamp below -1),
  so the first message that fails decides; a v1 message's LogAppendTime bit is
  its own claim (a wrapper's is its records', which then read its timestamp),
  refused only where Kafka looks at it (``record_checks.py``);
* then size checks: every output batch <= ``max.message.bytes``
  (MESSAGE_TOO_LARGE) and the whole set <= ``segment.bytes``
  (RECORD_LIST_TOO_LARGE).

KIP-87: a record carrying the topic's ``tombstone.header`` is stored with
record attributes bit 0 set (an explicit tombstone keeping its value). In an
uncompressed v2 batch that is a one-byte patch per record plus a new CRC; in a
compressed one it forces a rebuild.
"""

from __future__ import annotations

import struct

import attrs

from protocol import ErrorCode, KafkaProtocolError
from protocol.errors import UnknownCodecError
from protocol.records import (
    TOMBSTONE_FLAG,
    Codec,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    iter_batches,
)
from protocol.primitives import INT64_MAX
from protocol.records.legacy import plain_rows

from .record_checks import (
    RecordChecks,
    RecordScan,
    ValidationError,
    check_records,
    mark_tombstones_in_place,
    scan_batch,
)

LEADER_EPOCH = 0  # every partition's only epoch on this single node, stamped on each batch it appends
_TOPIC_CODECS = {"gzip": Codec.GZIP, "snappy": Codec.SNAPPY, "lz4": Codec.LZ4, "zstd": Codec.ZSTD,
                 "uncompressed": Codec.NONE}  # fmt: skip


@attrs.frozen
class ValidationConfig:
    """The topic settings validation depends on (from the effective topic config)."""

    compression_type: str = "producer"
    compression_level: int | None = None  # KIP-390: the level of the topic's own codec; None: the default
    compacted: bool = False
    log_append_time: bool = False
    timestamp_before_max_ms: int = INT64_MAX
    timestamp_after_max_ms: int = INT64_MAX
    max_message_bytes: int = 1_048_588
    segment_bytes: int = 1 << 30
    tombstone_header: str = ""


@attrs.frozen
class ValidatedRecords:
    """What to append and what to tell the producer."""

    data: bytes | memoryview
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    records_count: int
    converted_count: int


def target_codec(config: ValidationConfig, source: Codec) -> Codec:
    if config.compression_type == "producer":
        return source
    return _TOPIC_CODECS[config.compression_type]


def validate_and_assign(
    records: memoryview, *, produce_version: int, next_offset: int, now_ms: int,
    config: ValidationConfig, leader_epoch: int = LEADER_EPOCH, topic_partition: str = "",
) -> ValidatedRecords:  # fmt: skip
    """Validate one partition's records (``topic_partition`` names it in Kafka's messages) and assign offsets
    from ``next_offset``."""
    try:
        rows = plain_rows(records, config.max_message_bytes) if produce_version < 3 else None
        if rows is not None:  # the common up-conversion: plain v0/v1 messages, all well formed
            target = target_codec(config, Codec.NONE)
            scan = _check_messages(rows, RecordChecks.for_config(config, now_ms, topic_partition), target)
            return _build(rows, scan, (-1, -1, -1, False), target, next_offset, now_ms, config, leader_epoch)
        batches = _framed_batches(records, produce_version, config)
        source = _source_codec(batches, produce_version)
        target = target_codec(config, source)
        claims_append_time = batches[0].magic == 2 and batches[0].timestamp_type == TimestampType.LOG_APPEND_TIME
        checks = RecordChecks.for_config(config, now_ms, topic_partition, claims_append_time)
        if batches[0].magic == 2 and source == target:
            result = _in_place(records, batches, next_offset, now_ms, config, checks, leader_epoch)
            if result is not None:
                return result
        return _rebuild(batches, target, next_offset, now_ms, config, checks, leader_epoch)
    except ValidationError:
        raise
    except KafkaProtocolError as exc:
        raise ValidationError(exc.error_code, str(exc)) from None
    except struct.error as exc:  # backstop: a record field no 8-byte header field can hold is a bad record
        raise ValidationError(ErrorCode.INVALID_RECORD, f"record field out of range: {exc}") from None


def _framed_batches(records: memoryview, produce_version: int, config: ValidationConfig) -> list:
    """The request's batches, checked in Kafka's order: size and CRC of each, then (any Produce
    version) one batch only when it is magic 2 or compressed, then a v2 batch's header (a legacy set's
    messages are checked one by one later). Only a set of plain legacy messages may hold several entries."""
    batches = list(iter_batches(records))
    if not batches:
        raise ValidationError(ErrorCode.INVALID_RECORD, "no complete record batch in the request")
    magic = batches[0].magic
    if produce_version >= 3 and (magic != 2 or len(batches) != 1):
        raise ValidationError(ErrorCode.INVALID_RECORD, "Produce v3+ needs exactly one magic-2 batch")
    for batch in batches:
        _check_size_and_crc(batch, config)
    if len(batches) > 1 and (magic == 2 or any(batch.compression is not Codec.NONE for batch in batches)):
        raise ValidationError(ErrorCode.INVALID_RECORD, "Compressed outer record has more than one batch")
    if magic == 2:  # a legacy set's magics are compared message by message (``_plain_legacy_rows``)
        _check_v2_header(batches[0])
    return batches


def _check_size_and_crc(batch, config: ValidationConfig) -> None:
    if batch.size_in_bytes > config.max_message_bytes:
        raise ValidationError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"batch of {batch.size_in_bytes} bytes exceeds max.message.bytes {config.max_message_bytes}",
        )
    if not batch.is_valid():
        raise ValidationError(ErrorCode.CORRUPT_MESSAGE, "record batch fails its CRC check")


def _check_v2_header(batch: RecordBatchView) -> None:
    """Kafka's ``analyzeAndValidateRecords`` (baseOffset, then the codec id: 5-7 raise ``UnknownCodecError``,
    UNKNOWN_SERVER_ERROR), then ``LogValidator.validateBatch``."""
    if batch.base_offset != 0:
        raise ValidationError(ErrorCode.INVALID_RECORD, f"baseOffset must be 0, got {batch.base_offset}")
    batch.compression  # raises UnknownCodecError for codec ids 5-7
    count = batch.last_offset_delta + 1
    if count <= 0 or batch.records_count <= 0 or count != batch.records_count:
        raise ValidationError(
            ErrorCode.INVALID_RECORD,
            f"lastOffsetDelta {batch.last_offset_delta} does not match {batch.records_count} records",
        )
    if batch.is_control:
        raise ValidationError(ErrorCode.INVALID_RECORD, "clients may not send control batches")
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise ValidationError(ErrorCode.INVALID_RECORD, "idempotent batch without a base sequence")


def first_batch_codec_unknown(records) -> bool:
    """Is the first whole batch of ``records`` a magic-2 one naming codec id 5-7? (What makes Kafka's
    ``ProduceRequest.validateRecords`` of Produce v3-6 throw, failing the whole request.)"""
    try:
        first = next(iter_batches(memoryview(records if records is not None else b"")), None)
        if first is not None and first.magic == 2:
            first.compression  # raises UnknownCodecError for codec ids 5-7
    except UnknownCodecError:
        return True
    except KafkaProtocolError:  # a framing error: refused for that partition alone
        pass
    return False


def _source_codec(batches: list, produce_version: int) -> Codec:
    """The producer's codec. zstd is refused below Produce v7 from v3 only, as Kafka's
    ``ProduceRequest.validateRecords`` (v0-2 may carry any magic; a legacy zstd wrapper is INVALID_RECORD)."""
    source = Codec.NONE
    for batch in batches:
        if batch.compression is not Codec.NONE:
            source = batch.compression
    if source is Codec.ZSTD and 3 <= produce_version < 7:
        raise ValidationError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
    return source


def _in_place(records, batches, next_offset, now_ms, config, checks, leader_epoch) -> ValidatedRecords | None:
    batch: RecordBatchView = batches[0]
    payload = batch.records_readable(max_decompressed_size=max(config.max_message_bytes, 1) * 64)  # no copy
    scan = scan_batch(payload, batch, checks)
    count = batch.records_count
    if not scan.sequential:
        return None  # non-sequential offset deltas: Kafka rewrites the batch
    flagged = scan.flagged
    if flagged and batch.compression is not Codec.NONE:
        return None  # the flag lives inside the compressed payload
    writable = _writable(records, batch)
    view = RecordBatchView(writable)
    if flagged:
        mark_tombstones_in_place(view, flagged)
    view.set_base_offset(next_offset)
    view.set_partition_leader_epoch(leader_epoch)
    max_ts = scan.max_timestamp
    if config.log_append_time:
        view.set_max_timestamp(now_ms, TimestampType.LOG_APPEND_TIME)
    elif max_ts != view.max_timestamp or flagged or view.timestamp_type == TimestampType.LOG_APPEND_TIME:
        view.set_max_timestamp(max_ts, TimestampType.CREATE_TIME)  # as Kafka, a claimed LogAppendTime too
    _check_total(view.size_in_bytes, config)
    return ValidatedRecords(
        data=writable, first_offset=next_offset, last_offset=next_offset + count - 1,
        max_timestamp=view.max_timestamp, log_append_time=now_ms if config.log_append_time else -1,
        records_count=count, converted_count=0,
    )  # fmt: skip


def _writable(records: memoryview, batch: RecordBatchView) -> memoryview:
    """The batch's bytes in a writable buffer (the request's own when it is writable)."""
    size = batch.size_in_bytes
    if not records.readonly:
        return records[:size]
    return memoryview(bytearray(records[:size]))


def _rebuild(batches, target, next_offset, now_ms, config, checks, leader_epoch) -> ValidatedRecords:
    first = batches[0]
    producer = (first.producer_id, first.producer_epoch, first.base_sequence, first.is_transactional)
    limit = max(config.max_message_bytes, 1) * 64
    if first.magic == 2 or first.compression is not Codec.NONE:  # one batch
        rows = _tuples(first, limit)
        claims = None if first.magic == 2 else [first.timestamp_type == TimestampType.LOG_APPEND_TIME] * len(rows)
        scan = check_records(rows, checks, claims)
    else:
        rows, claims, mixed = _plain_legacy_rows(batches, limit)
        scan = _check_messages(rows, checks, target, claims, mixed)
    return _build(rows, scan, producer, target, next_offset, now_ms, config, leader_epoch)


def _plain_legacy_rows(batches: list, limit: int) -> tuple[list, list[bool], bool]:
    """The rows of plain legacy messages up to the first of another magic than the first one's (and whether
    there is one), and whether each claims LogAppendTime (Kafka reads the v1 attribute bit per message;
    magic 0 has no timestamp type)."""
    rows: list = []
    claims: list[bool] = []
    for batch in batches:
        if batch.magic != batches[0].magic:
            return rows, claims, True
        rows += _tuples(batch, limit)
        claims.append(batch.timestamp_type == TimestampType.LOG_APPEND_TIME)
    return rows, claims, False


def _check_messages(rows: list, checks: RecordChecks, target: Codec, claims=None, mixed=False) -> RecordScan:
    """Kafka's checks of plain legacy messages, each a batch of its own, in turn: a magic other than the
    first one's fails the set (INVALID_RECORD, ``mixed`` past the last row), then the message's record checks
    (its error has index 0), then, when no codec is applied, the builder takes it (a timestamp below -1:
    UNKNOWN_SERVER_ERROR). So the first message that fails decides. Almost every set passes: all are
    checked at once first, and one by one only to find which fails first."""
    try:
        scan = check_records(rows, checks, claims)
    except ValidationError:
        scan = None
    if scan is not None and not mixed and (target is not Codec.NONE or scan.min_timestamp >= -1):
        return scan
    for i, row in enumerate(rows):
        check_records([row], checks, None if claims is None else claims[i : i + 1])
        if target is Codec.NONE and row[1] < -1:  # Kafka's builder refuses it before the next message is read
            raise ValidationError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Invalid negative timestamp {row[1]}")
    raise ValidationError(ErrorCode.INVALID_RECORD, "batches of different magic in one request")


def _build(rows, scan, producer, target, next_offset, now_ms, config, leader_epoch) -> ValidatedRecords:
    """Write decoded rows that passed their checks (``scan``) as one v2 batch from ``next_offset`` (a
    conversion)."""
    lat = config.log_append_time
    producer_id, producer_epoch, base_sequence, transactional = producer
    builder = RecordBatchBuilder(
        magic=2, compression=target, compression_level=config.compression_level,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        base_offset=next_offset, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, is_transactional=transactional,
        partition_leader_epoch=leader_epoch, log_append_time=now_ms if lat else None,
    )  # fmt: skip
    if scan.min_timestamp < -1:  # Kafka's MemoryRecordsBuilder: an IllegalArgumentException (no message sent)
        raise ValidationError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Invalid negative timestamp {scan.min_timestamp}")
    if scan.flagged:
        flagged = set(scan.flagged)
        rows = [(*row[:5], row[5] | TOMBSTONE_FLAG if i in flagged else row[5]) for i, row in enumerate(rows)]
    builder.extend_renumbered(rows, now_ms if lat else None)
    data = builder.build()
    if len(data) > config.max_message_bytes:
        raise ValidationError(ErrorCode.MESSAGE_TOO_LARGE, f"rebuilt batch of {len(data)} bytes is too large")
    _check_total(len(data), config)
    return ValidatedRecords(
        data=data, first_offset=next_offset, last_offset=next_offset + len(rows) - 1,
        max_timestamp=builder.max_timestamp, log_append_time=now_ms if lat else -1,
        records_count=len(rows), converted_count=len(rows),
    )  # fmt: skip


def _tuples(batch, limit: int) -> list[tuple]:
    if isinstance(batch, RecordBatchView):
        return list(batch.iter_tuples(max_decompressed_size=limit))
    return list(batch.iter_tuples())


def _check_total(size: int, config: ValidationConfig) -> None:
    if size > config.segment_bytes:
        raise ValidationError(
            ErrorCode.RECORD_LIST_TOO_LARGE, f"record set of {size} bytes exceeds segment.bytes {config.segment_bytes}"
        )
