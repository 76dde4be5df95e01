"""``__transaction_state`` writes that fail answer as Kafka's ``TransactionStateManager.appendTransactionToLog``
maps the append's error (``transactions.errors.txn_log_error``): a log dir gone offline
(KAFKA_STORAGE_ERROR) is NOT_COORDINATOR, a record over the topic's ``max.message.bytes`` (refused as the
log's append refuses it: MESSAGE_TOO_LARGE) UNKNOWN_SERVER_ERROR. They used to answer COORDINATOR_NOT_AVAILABLE
(InitProducerId fencing an open transaction: CONCURRENT_TRANSACTIONS), and no size was checked.

A real broker (``groups_broker``) takes InitProducerId, AddPartitionsToTxn and EndTxn through ``dispatch``.
"""

from __future__ import annotations

import pytest

from broker.transactions.coordinator import TXN_TOPIC
from protocol import ErrorCode

from ._admin_client import create_ok
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import TXN, add, end, init

LONG = "t" * 200  # two topics of such names make an Ongoing record of over 400 bytes


def take_offline(broker) -> None:
    """The log dir of the id's ``__transaction_state`` partition fails."""
    partition = broker.topics.partition(TXN_TOPIC, broker.transactions.topic.partition_of(TXN))
    broker.topics.manager.failures.fail_dir(partition.log.dir.parent, "injected")


async def ongoing(broker) -> tuple[int, int]:
    await create_ok(broker, "t", 1)
    error, pid, epoch = await init(broker)
    assert error == ErrorCode.NONE
    assert await add(broker, pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
    return pid, epoch


async def test_init_producer_id_answers_not_coordinator_when_the_log_dir_went_offline(groups_broker):
    await groups_broker.transactions.topic.ready()
    await groups_broker.transactions.producer_ids.allocate()  # a block in use: the dir here holds the metadata
    take_offline(groups_broker)  # too, and once it is offline no block is saved (producer_ids.py)
    assert (await init(groups_broker))[0] == ErrorCode.NOT_COORDINATOR


async def test_init_producer_id_fencing_an_open_transaction_answers_the_failed_write(groups_broker):
    """Kafka answers the error of the abort it starts (``sendRetriableErrorCallback``), not
    CONCURRENT_TRANSACTIONS, when writing that abort failed."""
    await ongoing(groups_broker)
    take_offline(groups_broker)
    assert (await init(groups_broker))[0] == ErrorCode.NOT_COORDINATOR


async def test_add_partitions_answers_not_coordinator_when_the_log_dir_went_offline(groups_broker):
    await create_ok(groups_broker, "u", 2)
    error, pid, epoch = await init(groups_broker)
    take_offline(groups_broker)
    answers = await add(groups_broker, pid, epoch, {"u": [0, 1]})
    assert answers == {("u", 0): ErrorCode.NOT_COORDINATOR, ("u", 1): ErrorCode.NOT_COORDINATOR}


async def test_end_txn_answers_not_coordinator_when_the_log_dir_went_offline(groups_broker):
    pid, epoch = await ongoing(groups_broker)
    take_offline(groups_broker)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NOT_COORDINATOR


@pytest.mark.parametrize("group_props", [{"message.max.bytes": "400"}])
async def test_add_partitions_whose_record_is_too_large_answers_unknown_server_error(groups_broker):
    """The transaction stays as it was: a smaller AddPartitionsToTxn afterwards still succeeds."""
    for name in (LONG, LONG + "u"):
        await create_ok(groups_broker, name, 1)
    await create_ok(groups_broker, "t", 1)
    error, pid, epoch = await init(groups_broker)
    assert error == ErrorCode.NONE
    answers = await add(groups_broker, pid, epoch, {LONG: [0], LONG + "u": [0]})
    assert answers == {(LONG, 0): ErrorCode.UNKNOWN_SERVER_ERROR, (LONG + "u", 0): ErrorCode.UNKNOWN_SERVER_ERROR}
    assert await add(groups_broker, pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
