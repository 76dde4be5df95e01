"""InitProducerId's epoch bookkeeping (KIP-360), as Kafka's TransactionMetadata keeps it.

The coordinator remembers the epoch it bumped from (``last_producer_epoch``)
only when the producer named its current id and epoch: that lets the same
producer retry a bump whose answer it lost.  A fresh instance (no expected
id/epoch) clears it, so an older instance's KIP-360 retry is fenced rather than
handed the new instance's epoch.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import create_ok
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import TXN, init


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

