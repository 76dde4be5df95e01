"""Reading one partition for Fetch: limits, errors, zero-copy regions, down-conversion.

``read_partition`` turns one requested partition into a ``PartitionRead``:
the error code, offsets for the answer, and the records value to put in the
response. For Fetch v4+ that value is a ``FileRegion`` over the segment file
(sent with ``sendfile``); for v0-3 it is a ``ConvertedRecords`` (message
format 0 for v0-1, 1 for v2-3): its first batches are converted here, which
fixes its size (KIP-283), and the rest while it is sent; what a read-ahead
began after the connection's previous answer is taken over when it is of this
very slice (``read_ahead``): the whole conversion when it was made for this
fetch offset, else its chunks. A slice that old formats cannot
carry at all (only markers or emptied batches) is read past.

A read_committed Fetch (v4+ ``isolation_level`` 1) stops at the last stable
offset, below the first open transaction, and carries the aborted
transactions that overlap what it may return (Kafka's
``collectAbortedTransactions`` up to that offset), so the consumer drops
their records.

Limits: the slice is cut at ``min(partition_max_bytes, budget)``; with
``min_one`` (v3+, first non-empty partition) the first batch is included whole
even if it is larger, as Kafka's ``minOneMessage`` does. For a later
partition whose first batch the limit cuts, v3+ sends no records at all, as
Kafka's ``readFromLocalLog`` does (a client cannot use a partial first batch
and would stop; it gets the batch whole in a later fetch, where that
partition comes first); v0-2 keep the hard cut. The empty answer counts for
no bytes, so ``min_one`` stays on for the next partition. Down-conversion
(v3) thus starts from a whole first batch too.

A partition in error is answered with no records and high watermark, last
stable offset and log start offset -1, as Kafka's ``createLogReadResult(e)``
and ``FetchResponse.partitionResponse`` answer it (an offset out of range
included); a fetch session then caches those -1s, so the partition is
answered again once the error clears.

From v9 a ``current_leader_epoch`` above ours (0) is UNKNOWN_LEADER_EPOCH,
checked after the partition is found and before it is read, as Kafka's
``Partition.localLogWithEpochOrThrow``. Any negative epoch asks for no check:
Kafka's ``FetchRequest.fetchData`` reads every epoch below 0 as "not given"
(ListOffsets and OffsetForLeaderEpoch only -1). So, our epoch being 0, a
Fetch is never FENCED_LEADER_EPOCH (nor, from v16, NOT_LEADER_OR_FOLLOWER); the
answer's KIP-951 ``current_leader`` and ``node_endpoints`` (v16+, filled by
Kafka only for those two errors) stay empty, as Kafka leaves them here.

A read that fails on what is stored (a corrupt batch met while converting) is
answered with its error and counted in ``failedfetchrequests``, which Kafka
marks only for such unexpected failures: not for an unknown partition, an
offset out of range, a storage error, or a zstd batch an old client cannot
take.
"""

from __future__ import annotations

import time

import attrs

from protocol import ErrorCode, KafkaProtocolError
from protocol.records.lazy_convert import start_down_conversion

from . import read_ahead
from .connection import FileRegion
from .converted_send import ConvertedRecords
from .handlers._admin import leader_epoch_error

READS_PAST_EMPTY = 16


@attrs.define
class PartitionRead:
    partition: int
    error: int = ErrorCode.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted: list | None = None  # read_committed: (producer id, first offset) of aborted transactions in range
    records: object = b""
    size: int = 0  # the records' bytes as sent (down-converted for v0-3)
    read_size: int = 0  # as read from the log, before any down-conversion: what Kafka's fetch quota counts


def read_partition(ctx, topic: str, p, budget: int, min_one: bool, committed: bool = False) -> PartitionRead:
    broker = ctx.broker
    partition = broker.partition_for_fetch(topic, p.partition)
    if partition == ErrorCode.KAFKA_STORAGE_ERROR:
        return PartitionRead(p.partition, error=_storage_error(ctx.version))
    if isinstance(partition, ErrorCode):
        return PartitionRead(p.partition, error=partition)
    error = _version_error(ctx.version, partition.config)
    if error is None and ctx.version >= 9 and p.current_leader_epoch >= 0:  # below 0: not given (optionalEpoch)
        error = leader_epoch_error(p.current_leader_epoch)  # Kafka's localLogWithEpochOrThrow, before the read
    log = partition.log
    if error is None and not log.log_start_offset <= p.fetch_offset <= log.log_end_offset:
        error = ErrorCode.OFFSET_OUT_OF_RANGE
    if error is not None:
        return PartitionRead(p.partition, error=error)
    result = PartitionRead(p.partition, high_watermark=log.high_watermark, log_start_offset=log.log_start_offset,
                           last_stable_offset=log.last_stable_offset)  # fmt: skip
    limit = min(p.partition_max_bytes, budget)
    if limit <= 0 and not min_one:
        return result
    try:
        _fill(ctx, topic, log, p.fetch_offset, limit, min_one, result, committed)
    except OSError:
        return PartitionRead(p.partition, error=_storage_error(ctx.version))
    except KafkaProtocolError as exc:
        if exc.error_code != ErrorCode.UNSUPPORTED_COMPRESSION_TYPE:  # Kafka's "unexpected" read failures
            broker.metrics.failed_fetch.labels(topic).inc()
        return PartitionRead(p.partition, error=exc.error_code)
    return result


def _storage_error(version: int) -> ErrorCode:
    """Kafka's ``maybeDownConvertStorageError``: clients of v0-5 may not know KAFKA_STORAGE_ERROR."""
    return ErrorCode.KAFKA_STORAGE_ERROR if version > 5 else ErrorCode.NOT_LEADER_OR_FOLLOWER


def _version_error(version: int, config) -> ErrorCode | None:
    """Kafka's ``maybeConvertFetchedData``, which overrides whatever the read gave: a topic whose
    ``compression.type`` is zstd is refused below v10; only the topic config counts, so zstd batches
    in a ``producer`` topic go out to v4-v9 as stored (v0-3 meet them while converting). Then
    down-conversion (v0-3) disabled. Kafka reads the partition first and counts its bytes toward
    min_bytes and the quota; we do not read it."""
    if version < 10 and config.compression_type == "zstd":
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if version <= 3 and not config.message_downconversion_enable:
        return ErrorCode.UNSUPPORTED_VERSION
    return None


def _fill(ctx, topic: str, log, offset: int, limit: int, min_one: bool, result: PartitionRead,
          committed: bool = False) -> None:  # fmt: skip
    # min_one keeps the v3+ rule: the first batch goes out whole even above the limit.
    upper = result.last_stable_offset if committed else None
    piece = log.read(offset, max(limit, 0), min_one_message=min_one, max_offset=upper)
    if piece is None or piece.size == 0:
        result.aborted = [] if committed else None  # Kafka's LocalLog.read: nothing to read, an empty list
        return
    if ctx.version >= 3 and piece.first_entry_incomplete:
        return  # v3+: a first batch the limit cuts is not sent at all (a later fetch takes it whole)
    if committed:
        result.aborted = [(t.producer_id, t.first_offset) for t in log.aborted_transactions(offset, upper)]
    if ctx.version >= 4:
        result.records = FileRegion(piece.fileno, piece.position, piece.size, keepalive=piece)
        result.size = result.read_size = piece.size
        return
    started, magic, key = time.perf_counter(), 0 if ctx.version <= 1 else 1, (topic, result.partition)
    conversion = read_ahead.ready(ctx, key, piece, offset, magic)
    if conversion is None:
        if (found := _start_conversion(log, piece, offset, limit, min_one, magic)) is None:
            return
        piece, conversion = found
        read_ahead.take(ctx, key, piece, conversion)
    metrics = ctx.broker.metrics
    result.records = ConvertedRecords(
        conversion, metrics.fetch_conversions.labels(topic).inc,
        ctx.converted,  # the request's MessageConversionsTimeMs
        first_seconds=time.perf_counter() - started,
        on_sent=read_ahead.preparer(ctx, key, log, limit, min_one, magic),
    )  # fmt: skip
    result.size, result.read_size = conversion.size, piece.size


def _start_conversion(log, piece, offset: int, limit: int, min_one: bool, target_magic: int):
    """``(slice, its down-conversion)`` from ``piece``, reading on past batches old formats cannot carry.

    Transaction markers and batches the cleaner emptied convert to nothing, and an old client
    cannot step over offsets it is never sent; so while a slice yields nothing, the next one
    is read (up to ``READS_PAST_EMPTY`` slices). None when nothing follows.
    """
    for _ in range(READS_PAST_EMPTY):
        conversion = start_down_conversion(piece, target_magic=target_magic, fetch_offset=offset)
        if conversion.first.records:
            return piece, conversion
        if conversion.next_offset is None:  # only a partial batch: the client must ask for more bytes
            return None
        piece = log.read(conversion.next_offset, max(limit, 0), min_one_message=min_one)
        if piece is None or piece.size == 0:
            return None
    return None
