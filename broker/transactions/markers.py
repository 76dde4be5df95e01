"""Writing transaction markers.

``write(broker, meta, commit, groups)`` ends a prepared transaction on every
partition it holds, as Kafka's TransactionMarkerChannelManager does through
WriteTxnMarkers, but in-process: each data partition gets a control batch
(``internal_topic.marker_batch``: producer id, the transaction's epoch,
COMMIT or ABORT, coordinator epoch 0 on a single node) appended at its log
end offset, which ends the producer's open transaction
in that log (``storage.producer_state``: the last stable offset moves on; an
abort is indexed in ``.txnindex``). The group's ``__consumer_offsets``
partitions are left to the group coordinator (``GroupManager.complete_transaction``),
which writes its marker and makes the transaction's offsets visible or drops
them. A partition deleted meanwhile is skipped, as Kafka skips it (also one
deleted while its marker waits to be durable: Kafka's coordinator retries its
UNKNOWN_TOPIC_OR_PARTITION, finds no leader for it and drops it). Returns
False when a log refused a write, or is offline once the markers should be
durable (the transaction then stays prepared and is retried). These markers
skip the checks WriteTxnMarkers makes (``ProducerStateManager.check_marker``):
this coordinator's decision is the one that stands. ``append_marker`` writes one marker, for both.
"""

from __future__ import annotations

import logging
from typing import Any

from protocol import ErrorCode

from ..groups.store import OFFSETS_TOPIC
from ..internal_topic import marker_batch
from ..log_validator import ValidatedRecords
from .state import TxnMetadata

log = logging.getLogger("minibroker.transactions")
COORDINATOR_EPOCH = 0


async def write(broker: Any, meta: TxnMetadata, commit: bool, groups: set[str]) -> bool:
    ok, appended = True, []
    for topic, index in sorted(meta.partitions):
        if topic != OFFSETS_TOPIC:
            ok &= _write_one(broker, meta, commit, topic, index)
            appended.append(((topic, index), broker.topics.partition(topic, index)))  # before any wait
    if any(topic == OFFSETS_TOPIC for topic, _ in meta.partitions):
        ok &= await _write_groups(broker, meta, commit, groups)
    lost = await broker.not_durable(appended, "transaction markers")  # a deleted partition is skipped, as above
    return ok and all(error in (None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for error in lost)


def _write_one(broker: Any, meta: TxnMetadata, commit: bool, topic: str, index: int) -> bool:
    partition = broker.topics.partition(topic, index)
    if partition is None:
        log.info("transaction %s: %s-%d no longer exists, no marker written", meta.transactional_id, topic, index)
        return True
    return append_marker(broker, partition, meta.producer_id, meta.producer_epoch, commit, COORDINATOR_EPOCH) is None


def append_marker(broker: Any, partition: Any, producer_id: int, epoch: int, commit: bool,
                  coordinator_epoch: int) -> ErrorCode | None:  # fmt: skip
    """Append one COMMIT/ABORT control batch at ``partition``'s log end offset (no wait for durability);
    the storage error, or None. Also the write of ``handlers.write_txn_markers``, after its checks."""
    base = partition.log.log_end_offset
    data, count, now = marker_batch(producer_id, epoch, commit, coordinator_epoch, broker.clock())(base)
    return broker.append_own(partition, ValidatedRecords(data, base, base, now, -1, count, 0))


async def _write_groups(broker: Any, meta: TxnMetadata, commit: bool, groups: set[str]) -> bool:
    offsets_partitions = {index for topic, index in meta.partitions if topic == OFFSETS_TOPIC}
    try:
        await broker.groups.complete_transaction(meta.producer_id, meta.producer_epoch, commit, COORDINATOR_EPOCH,
                                                 groups, offsets_partitions)  # fmt: skip
    except OSError:
        log.exception("transaction %s: the group offsets marker could not be written", meta.transactional_id)
        return False
    return True
