"""``producer.id.expiration.ms`` through the broker: idle producer ids are forgotten, as Kafka forgets them.

A real broker (``groups_broker``: real storage, a hand-driven clock) takes
Produce frames through ``dispatch``; ``Broker.tick`` runs the periodic check
every ``producer.id.expiration.check.interval.ms`` (Kafka's
``removeExpiredProducers``), and a log loaded after a restart leaves the
expired producers of its snapshot out (Kafka's ``loadFromSnapshot``). A
forgotten producer is unknown to the partition: its next batch may start at
any sequence. A producer with an open transaction is never forgotten.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import create_ok
from ._group_client import clock, groups_broker  # noqa: F401  (fixtures)
from .test_produce_idempotence import NOW, produce
from .test_transactions import open_txn

EXPIRATION, INTERVAL = 60_000, 120_000


@pytest.fixture
def group_props():
    return {"producer.id.expiration.ms": str(EXPIRATION), "producer.id.expiration.check.interval.ms": str(INTERVAL)}


def producers(broker) -> set[int]:
    return set(broker.topics.partition("t", 0).log.producer_state.producers)


def tick_at(broker, ms_after_start: int) -> None:
    broker.clock.now = NOW + ms_after_start
    broker.tick()


async def test_the_periodic_check_forgets_an_idle_producer(groups_broker):
    await create_ok(groups_broker, "t", 1)
    assert await produce(groups_broker, "t", pid=9, seq=0) == (ErrorCode.NONE, 0, -1)
    tick_at(groups_broker, 0)  # the check's timer starts
    tick_at(groups_broker, INTERVAL - 1)  # expired, but the check is not due yet
    assert producers(groups_broker) == {9}
    error = await produce(groups_broker, "t", pid=9, seq=5, ts=groups_broker.clock.now)
    assert error[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    tick_at(groups_broker, INTERVAL)
    assert producers(groups_broker) == set()
    assert await produce(groups_broker, "t", pid=9, seq=5, ts=groups_broker.clock.now) == (ErrorCode.NONE, 1, -1)


async def test_a_producer_idle_for_less_than_the_expiration_is_kept(groups_broker):
    await create_ok(groups_broker, "t", 1)
    tick_at(groups_broker, 0)
    assert (await produce(groups_broker, "t", pid=9, seq=0, ts=NOW + INTERVAL - EXPIRATION + 1))[0] == ErrorCode.NONE
    tick_at(groups_broker, INTERVAL)  # idle for EXPIRATION - 1
    assert producers(groups_broker) == {9}


async def test_a_producer_with_an_open_transaction_is_never_forgotten(groups_broker):
    pid, _epoch = await open_txn(groups_broker)
    tick_at(groups_broker, 0)
    tick_at(groups_broker, 10 * INTERVAL)
    assert producers(groups_broker) == {pid}


@pytest.mark.parametrize(("idle", "kept"), [(EXPIRATION, set()), (EXPIRATION - 1, {9})])
async def test_a_restart_leaves_the_expired_producers_of_the_snapshot_out(groups_broker, idle, kept):
    await create_ok(groups_broker, "t", 1)
    assert (await produce(groups_broker, "t", pid=9, seq=0))[0] == ErrorCode.NONE
    groups_broker.clock.now = NOW + idle
    broker = groups_broker.reopen()  # a clean stop: the snapshot holds producer 9
    assert producers(broker) == kept
