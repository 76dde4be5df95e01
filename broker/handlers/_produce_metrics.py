"""Produce's BrokerTopicMetrics, marked where Kafka marks them.

Kafka's ``KafkaApis.handleProduceRequest`` first sets aside the partitions it
will not try: refused topics, unknown partitions, and (v3+) records whose
shape ``ProduceRequest.validateRecords`` refuses (no batch, a first batch
not of magic 2, zstd below v7, more than one batch). None of those is
counted anywhere. ``ReplicaManager.appendToLocalLog`` then marks, for every
partition it is given:

* ``TotalProduceRequestsPerSec`` before anything else (an internal topic's
  partition too, which it then refuses);
* ``FailedProduceRequestsPerSec`` when the append fails, except for the
  errors it calls expected (unknown partition, not leader, record or batch
  too large, corrupt record, storage error): the meter is meant to show the
  broker's unexpected failures, so bad records, sequence and epoch errors
  count and a too-large message does not;
* ``BytesRejectedPerSec``, from the log, with the request's bytes when a
  batch is over ``max.message.bytes`` (only then);
* ``BytesInPerSec`` with the request's record bytes (before up-conversion
  or recompression) and ``MessagesInPerSec`` with the offsets the append
  covers, for every append that returns: a retried idempotent batch the log
  answers as a duplicate is counted again;
* ``ProduceMessageConversionsPerSec`` from the append's validation stats, so
  only for appends that return (a duplicate's included); their conversion
  time is the request's ``MessageConversionsTimeMs`` (``request_metrics``).
"""

from __future__ import annotations

from protocol import CorruptRecordError, ErrorCode, KafkaProtocolError
from protocol.records import Codec, is_single_v2_batch, iter_batches

_ATTRIBUTES_LOW, _CODEC_BITS = 22, 0x07  # a v2 batch's attributes: their low byte, and its codec id bits

# The append errors Kafka's appendToLocalLog does not count as failed produce requests.
EXPECTED_FAILURES = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
})  # fmt: skip


def refused_before_append(version: int, records) -> bool:
    """Would Kafka's ``ProduceRequest.validateRecords`` refuse these records (so no meter sees them)?"""
    if version < 3 or records is None:
        return False
    if is_single_v2_batch(records):  # the usual shape, from its prefix: only its codec can refuse it
        return version < 7 and records[_ATTRIBUTES_LOW] & _CODEC_BITS >= Codec.ZSTD.value  # 5-7: no codec at all
    return refused_by_walk(version, records)


def refused_by_walk(version: int, records) -> bool:
    """``refused_before_append`` for any shape, by walking the batches as Kafka's validation does."""
    try:
        batches = iter_batches(memoryview(records))
        first = next(batches, None)
        if first is None or first.magic != 2:
            return True
        if version < 7 and first.compression is Codec.ZSTD:
            return True
        return next(batches, None) is not None
    except (CorruptRecordError, KafkaProtocolError):  # Kafka's batch iterator throws: refused the same way
        return True


def count_attempt(metrics, topic: str) -> None:
    metrics.total_produce.labels(topic).inc()


def count_failure(metrics, topic: str, error: ErrorCode, request_bytes: int) -> None:
    if error not in EXPECTED_FAILURES:
        metrics.failed_produce.labels(topic).inc()
    if error == ErrorCode.MESSAGE_TOO_LARGE:
        metrics.bytes_rejected.labels(topic).inc(request_bytes)


def count_append(ctx, topic: str, request_bytes: int, first_offset: int, last_offset: int,
                 conversion: tuple[int, float]) -> None:
    """An append that returned: ``conversion`` is (records up-converted, seconds the validation took), which
    add to the request's ``MessageConversionsTimeMs``."""
    metrics = ctx.broker.metrics
    metrics.messages_in.labels(topic).inc(last_offset - first_offset + 1)
    metrics.bytes_in.labels(topic).inc(request_bytes)
    converted, seconds = conversion
    if converted:
        metrics.produce_conversions.labels(topic).inc(converted)
        ctx.converted(seconds)
