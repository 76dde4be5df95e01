"""Produce's part in transactions (KIP-890): which batches are transactional, and the coordinator's say.

Kafka's ``handleProduceRequest`` asks whether the first batch of any partition is transactional
(``has_transactional_records``: the request then needs a transactional id it may write). From v12
the broker adds the partitions a transactional produce writes to to the producer's transaction
itself, as one AddPartitionsToTxn (``enroll``), and each transactional batch is checked against the
open transaction before its append (``transaction_check``). The coordinator's answers are turned
into errors producers handle, as Kafka's ReplicaManager turns them (``PRODUCE_ERRORS``,
``ENROL_ERRORS``). Batch headers are read in place: magic at byte 16, the attributes' low byte at
22, producer id and epoch at 43.
"""

from __future__ import annotations

import struct

from protocol import CorruptRecordError, ErrorCode
from protocol.records import RECORD_BATCH_OVERHEAD, iter_batches

from ..dispatch import RequestContext

TRANSACTIONAL = 0x10
PRODUCER, LENGTH = struct.Struct(">qh"), struct.Struct(">i")


def has_transactional_records(request) -> bool:
    """Kafka's ``RequestUtils.hasTransactionalRecords``: is the first batch of any partition transactional?"""
    return any(_first_batch_transactional(pd.records) for t in request.topic_data for pd in t.partition_data)


def _first_batch_transactional(records) -> bool:
    if records is None or len(records) < RECORD_BATCH_OVERHEAD:
        return False
    whole = len(records) >= 12 + LENGTH.unpack_from(records, 8)[0]
    return whole and records[16] == 2 and bool(records[22] & TRANSACTIONAL)


async def enroll(ctx: RequestContext, request, names: list[str | None], unwritable: set[str],
                 txn_id: str | None) -> dict:  # fmt: skip
    """v12+ (KIP-890 part 2): Kafka adds the partitions a transactional produce writes to to the producer's
    transaction itself, as one AddPartitionsToTxn, whatever ``transaction.partition.verification.enable``
    says, and before it looks at ``acks``; the topics the principal may not write are left out.
    ``{(topic, index): error}`` for the partitions that could not be added (nothing when all were)."""
    if ctx.version < 12 or txn_id is None:
        return {}
    wanted, producers = set(), set()
    for topic, name in zip(request.topic_data, names):
        for pd in topic.partition_data:
            producer = _single_transactional_batch(pd.records)
            # Every existing partition, an internal topic's too: Kafka refuses those only at the append.
            if name is None or name in unwritable or producer is None:
                continue
            if ctx.broker.topics.partition(name, pd.index):
                wanted.add((name, pd.index))
                producers.add(producer)
    if not wanted:
        return {}
    producer_id, epoch = next(iter(producers))  # Kafka's head of the set
    error = await ctx.broker.transactions.add_partitions(txn_id, producer_id, epoch, wanted)
    if error == ErrorCode.NONE:
        return {}
    return dict.fromkeys(wanted, ENROL_ERRORS.get(error, error))


def _single_transactional_batch(records) -> tuple[int, int] | None:
    """``(producer id, epoch)`` when ``records`` are what Kafka lets through to the append (one v2 batch) and
    that batch is transactional."""
    try:
        batches = list(iter_batches(memoryview(records or b"")))
    except CorruptRecordError:  # Kafka's validateRecords refuses it before any of this
        return None
    if len(batches) != 1 or batches[0].magic != 2:
        return None
    return _transactional_producer(records)


def transaction_check(broker, txn_id: str | None, topic: str, index: int, data) -> ErrorCode | None:
    """A transactional batch needs the request's transactional id and, with
    ``transaction.partition.verification.enable``, its partition in that open transaction (KIP-890)."""
    producer = _transactional_producer(data)
    if producer is None:
        return None
    error = broker.transactions.verify_produce(txn_id, producer[0], producer[1], topic, index)
    return PRODUCE_ERRORS.get(error, error)


def _transactional_producer(data) -> tuple[int, int] | None:
    """``(producer id, epoch)`` of the first transactional v2 batch of validated ``data``, from the batch
    headers alone (magic at byte 16, attributes' low byte at 22, producer id and epoch at 43)."""
    pos, end = 0, len(data)
    while end - pos >= RECORD_BATCH_OVERHEAD:
        if data[pos + 16] == 2 and data[pos + 22] & TRANSACTIONAL:
            return PRODUCER.unpack_from(data, pos + 43)
        pos += 12 + LENGTH.unpack_from(data, pos + 8)[0]
    return None


# Kafka's ReplicaManager turns the coordinator's answers into errors producers handle: a fenced epoch is
# INVALID_PRODUCER_EPOCH, and a transaction being ended NOT_ENOUGH_REPLICAS, which every client retries.
PRODUCE_ERRORS = {ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
                   ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS}  # fmt: skip

# What Kafka's ReplicaManager answers a producer whose partitions its AddPartitionsToTxn (v12+) could not add:
# retriable coordinator trouble as NOT_ENOUGH_REPLICAS, an unknown producer as OUT_OF_ORDER_SEQUENCE_NUMBER.
ENROL_ERRORS = {**PRODUCE_ERRORS, ErrorCode.UNKNOWN_PRODUCER_ID: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                 **dict.fromkeys((ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                  ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR),
                                 ErrorCode.NOT_ENOUGH_REPLICAS)}  # fmt: skip
