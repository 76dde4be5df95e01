"""InitProducerId's epoch bookkeeping (KIP-360), as Kafka's TransactionMetadata keeps it.

The coordinator remembers the epoch it bumped from (``last_producer_epoch``)
only when the producer named its current id and epoch: that lets the same
producer retry a bump whose answer it lost.  A fresh instance (no expected
id/epoch) clears it, so an older instance's KIP-360 retry is fenced rather than
handed the new instance's epoch.  A producer-id rotation (epoch exhausted)
follows the same rule.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import create_ok
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import TXN, init

EXHAUSTED = 32766  # Short.MAX_VALUE - 1: the next bump rotates the producer id


async def test_a_new_instance_clears_the_last_epoch_so_the_old_ones_bump_is_fenced(groups_broker):
    await create_ok(groups_broker, "t", 1)
    error, pid, old_epoch = await init(groups_broker)
    assert error == ErrorCode.NONE
    assert await init(groups_broker) == (ErrorCode.NONE, pid, old_epoch + 1)  # a new instance
    assert groups_broker.transactions.txns[TXN].last_producer_epoch == -1
    assert await init(groups_broker, pid=pid, epoch=old_epoch) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert groups_broker.transactions.txns[TXN].producer_epoch == old_epoch + 1  # nothing bumped


async def test_a_bump_with_the_expected_epoch_records_it_for_a_retry(groups_broker):
    error, pid, epoch = await init(groups_broker)
    assert await init(groups_broker, pid=pid, epoch=epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert groups_broker.transactions.txns[TXN].last_producer_epoch == epoch
    assert await init(groups_broker, pid=pid, epoch=epoch) == (ErrorCode.NONE, pid, epoch + 1)  # the retry


async def test_a_retry_of_a_bump_that_rotated_the_producer_id_gets_the_same_answer(groups_broker):
    error, pid, _epoch = await init(groups_broker)
    groups_broker.transactions.txns[TXN].producer_epoch = EXHAUSTED
    error, new_pid, epoch = first = await init(groups_broker, pid=pid, epoch=EXHAUSTED)
    assert (error, epoch) == (ErrorCode.NONE, 0) and new_pid != pid
    meta = groups_broker.transactions.txns[TXN]
    assert (meta.previous_producer_id, meta.last_producer_epoch) == (pid, EXHAUSTED)
    assert await init(groups_broker, pid=pid, epoch=EXHAUSTED) == first  # the producer lost the answer


async def test_a_rotation_for_a_new_instance_records_no_last_epoch(groups_broker):
    error, pid, _epoch = await init(groups_broker)
    groups_broker.transactions.txns[TXN].producer_epoch = EXHAUSTED
    error, new_pid, epoch = await init(groups_broker)
    assert (error, epoch) == (ErrorCode.NONE, 0) and new_pid != pid
    assert groups_broker.transactions.txns[TXN].last_producer_epoch == -1
    assert await init(groups_broker, pid=pid, epoch=EXHAUSTED) == (ErrorCode.PRODUCER_FENCED, -1, -1)
