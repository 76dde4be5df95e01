"""``__consumer_offsets`` or ``__transaction_state`` deleted (DeleteTopics allows it, as Kafka's controller does).

Kafka's broker then resigns the topic's partitions: the coordinator unloads
their state, the writes waiting on them fail with NOT_COORDINATOR, parked
JoinGroups and SyncGroups answer NOT_COORDINATOR, and the topic, made again
by the next request that needs it, starts empty. Most tests hold a write's
wait for durability (``_deleted_during``: the records are in the log, not yet
acknowledged), deletes the topic, lets the write go on, and checks the answer
and that the coordinator works again afterwards. Found by
``test_handler_fuzz``: before, a group write after the deletion raised
``KeyError('__consumer_offsets')`` (the connection dropped), a write in flight
answered NONE for records in a deleted log, and the topic was never made again.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from broker.groups.store import OFFSETS_TOPIC
from broker.transactions import TXN_TOPIC
from protocol import ErrorCode

from ._admin_client import call, create_ok, req
from ._consumer_group_client import heartbeat
from ._group_client import (_open, clock, commit, fetch, group_props, groups_broker, join, join_new,  # noqa: F401
                            start_join, sync)
from .test_transactions import end, init, open_txn
from .test_txn_offsets import FakeTxns, txn_commit

NOT_COORDINATOR = ErrorCode.NOT_COORDINATOR


async def _delete(broker, topic: str) -> ErrorCode:
    resp = await call(broker, 20, 5, req(20, topic_names=[topic], timeout_ms=1000))
    return resp.responses[0].error_code


async def _deleted_during(broker, topic: str, op, nth: int = 1):
    """``op()`` run until its ``nth`` write waits to be durable, then ``topic`` deleted, then the wait let go;
    op's answer."""
    gate, entered, real, out = trio.Event(), [], broker.wait_durable, {}

    async def held() -> None:
        entered.append(True)
        if len(entered) == nth:
            await gate.wait()
        await real()

    async def run() -> None:
        out["answer"] = await op()

    broker.wait_durable = held
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await wait_all_tasks_blocked()
        assert len(entered) == nth, "the write did not reach its wait for durability"
        del broker.wait_durable  # the deletion's own writes are not held
        assert await _delete(broker, topic) == ErrorCode.NONE
        gate.set()
    return out["answer"]


async def _with_topic(b):
    await create_ok(b, "t", 2)
    await b.groups.store.ready()


async def test_a_commit_in_flight_answers_not_coordinator_and_commits_work_again(groups_broker):
    b = groups_broker
    await _with_topic(b)
    assert await commit(b, "g", {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    answer = await _deleted_during(b, OFFSETS_TOPIC, lambda: commit(b, "g", {("t", 0): 6}))
    assert answer == {("t", 0): NOT_COORDINATOR}
    assert b.groups.groups == {}  # unloaded: the deleted log held the group
    assert await fetch(b, "g", {"t": [0]}) == (ErrorCode.NONE, {("t", 0): (-1, "", ErrorCode.NONE)})
    assert await commit(b, "g", {("t", 0): 7}) == {("t", 0): ErrorCode.NONE}  # the topic is made again
    assert await fetch(b, "g", {"t": [0]}) == (ErrorCode.NONE, {("t", 0): (7, "m", ErrorCode.NONE)})
    assert b.topics.get(OFFSETS_TOPIC).num_partitions == 5


async def test_a_sync_storing_the_assignment_answers_not_coordinator_then_the_group_forms_again(groups_broker):
    b = groups_broker
    await _with_topic(b)
    joined = await join_new(b, "g")
    answer = await _deleted_during(b, OFFSETS_TOPIC, lambda: sync(b, "g", joined.generation_id, joined.member_id,
                                                                  {joined.member_id: b"x"}))  # fmt: skip
    assert answer.error_code == NOT_COORDINATOR
    again = await join_new(b, "g")  # a new group in the new topic
    assert (again.error_code, again.generation_id) == (ErrorCode.NONE, 1)
    synced = await sync(b, "g", again.generation_id, again.member_id, {again.member_id: b"y"})
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, b"y")


async def test_a_parked_join_answers_not_coordinator_when_the_topic_is_deleted(groups_broker):
    b = groups_broker
    await _with_topic(b)
    first = await join_new(b, "g")
    await sync(b, "g", first.generation_id, first.member_id, {first.member_id: b"x"})
    answers = {}

    async def second() -> None:
        answers["join"] = await join_new(b, "g")  # parked until the first member rejoins

    async with trio.open_nursery() as nursery:
        nursery.start_soon(second)
        await wait_all_tasks_blocked()
        assert "join" not in answers
        assert await _delete(b, OFFSETS_TOPIC) == ErrorCode.NONE
    assert answers["join"].error_code == NOT_COORDINATOR


async def test_a_delete_groups_in_flight_answers_not_coordinator_and_the_group_stays_gone(groups_broker):
    b = groups_broker
    await _with_topic(b)
    await commit(b, "g", {("t", 0): 5})

    async def delete_group():
        return (await call(b, 42, 2, req(42, groups_names=["g"]))).results[0].error_code

    assert await _deleted_during(b, OFFSETS_TOPIC, delete_group) == NOT_COORDINATOR
    assert "g" not in b.groups.groups
    assert await delete_group() == ErrorCode.GROUP_ID_NOT_FOUND


async def test_a_txn_offset_commit_in_flight_answers_not_coordinator(groups_broker):
    b = groups_broker
    b.transactions = FakeTxns()
    await _with_topic(b)
    answer = await _deleted_during(b, OFFSETS_TOPIC, lambda: txn_commit(b, "g", {("t", 1): 3}))
    assert answer == {("t", 1): NOT_COORDINATOR}
    assert b.groups.groups == {}
    again = await txn_commit(b, "g", {("t", 1): 4})  # the topic is being made again, as on a new broker
    assert again == {("t", 1): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    await b.groups.store.ready()
    assert await txn_commit(b, "g", {("t", 1): 4}) == {("t", 1): ErrorCode.NONE}


async def test_a_consumer_group_heartbeat_in_flight_answers_not_coordinator_then_joins_again(groups_broker):
    b = groups_broker
    await _with_topic(b)
    answer = await _deleted_during(b, OFFSETS_TOPIC, lambda: heartbeat(b, "m1"))
    assert answer.error_code == NOT_COORDINATOR
    assert b.groups.groups == {}
    first = await heartbeat(b, "m1")  # the topic is being made again, as on a new broker
    assert first.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    await b.groups.store.ready()
    joined = await heartbeat(b, "m1")
    assert (joined.error_code, joined.member_epoch) == (ErrorCode.NONE, 1)


async def test_offsets_of_the_deleted_topic_itself_are_not_written_to_it(groups_broker):
    """A group with offsets committed for ``__consumer_offsets`` (any topic may be committed): the deletion
    drops the group with the topic, and writes no tombstones into it (before, they raised KeyError)."""
    b = groups_broker
    await _with_topic(b)
    assert await commit(b, "g", {(OFFSETS_TOPIC, 0): 1}) == {(OFFSETS_TOPIC, 0): ErrorCode.NONE}
    assert await _delete(b, OFFSETS_TOPIC) == ErrorCode.NONE
    assert b.groups.groups == {}
    assert await commit(b, "g", {("t", 0): 2}) == {("t", 0): ErrorCode.NONE}


async def test_init_producer_id_in_flight_answers_not_coordinator_then_the_id_starts_afresh(groups_broker):
    b = groups_broker
    error, first_id, _epoch = await init(b, "tx")
    assert error == ErrorCode.NONE
    answer = await _deleted_during(b, TXN_TOPIC, lambda: init(b, "tx"))  # the epoch bump's write
    assert answer == (NOT_COORDINATOR, -1, -1)
    assert b.transactions.txns == {}
    error, producer_id, epoch = await init(b, "tx")  # the topic made again; the id unknown there: a new one
    assert (error, epoch, producer_id != first_id) == (ErrorCode.NONE, 0, True)
    assert b.topics.get(TXN_TOPIC).num_partitions == 3



async def test_a_write_nobody_waits_for_is_dropped_when_the_topic_goes_before_it_starts(groups_broker):
    """A group's record asked for (the group just became empty) before the deletion, written after it, would
    bring the group back into the new topic: it is dropped with the group."""
    b = groups_broker
    await _with_topic(b)
    await commit(b, "g", {("t", 0): 1})
    b.groups.store.write_group_soon(b.groups.groups["g"])
    b.topics.invalidate(OFFSETS_TOPIC)  # what DeleteTopics does (its saves in line), before the write's task runs
    b.topics.manager.delete_topic(OFFSETS_TOPIC)
    b.internal_topic_deleted(OFFSETS_TOPIC)
    await b.groups.store.ready()
    await wait_all_tasks_blocked()
    ends = [b.topics.partition(OFFSETS_TOPIC, i).log.log_end_offset for i in range(5)]
    assert ends == [0] * 5


async def test_the_topic_is_made_again_with_the_configured_partition_count(tmp_path, clock):
    """The deleted topic had 3 partitions (made under another config); the new one gets the broker's 5, as
    Kafka's ``AutoTopicCreationManager.creatableTopic`` reads ``offsets.topic.num.partitions``."""
    b = _open(tmp_path, clock, {"offsets.topic.num.partitions": "3"})
    await _with_topic(b)
    b.close()
    b = _open(tmp_path, clock, {})  # offsets.topic.num.partitions=5
    try:
        await b.groups.store.ready()
        assert b.topics.get(OFFSETS_TOPIC).num_partitions == 3  # an existing topic is used as it is
        assert await _delete(b, OFFSETS_TOPIC) == ErrorCode.NONE
        assert b.groups.store.num_partitions == 5  # where keys go until the topic is made again
        assert await commit(b, "g", {("t", 0): 1}) == {("t", 0): ErrorCode.NONE}
        assert b.topics.get(OFFSETS_TOPIC).num_partitions == 5
        assert await fetch(b, "g", {"t": [0]}) == (ErrorCode.NONE, {("t", 0): (1, "m", ErrorCode.NONE)})
    finally:
        b.close()


def _txn_ops(b, pid, epoch):
    async def timed_out():
        b.clock.now += 61_000  # past the transaction's 60 s timeout
        await b.transactions.abort_timed_out()

    return {"end": lambda: end(b, pid, epoch, True), "init": lambda: init(b), "timeout": timed_out}


@pytest.mark.parametrize("op, answer", [("end", ErrorCode.NONE), ("init", (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)),
                                        ("timeout", None)])  # fmt: skip
async def test_a_transaction_ended_across_the_deletion_writes_nothing_into_the_new_topic(groups_broker, op, answer):
    """EndTxn, InitProducerId's fence and the timeout's abort write their prepared state, then the deletion
    comes while their markers wait to be durable: the Complete* state is not written into the new topic and
    the id does not come back, as Kafka's ``appendTransactionToLog`` answers NOT_COORDINATOR once the
    coordinator epoch changed (``onResignation``). Before, ``_persist`` made the topic again and wrote it."""
    b = groups_broker
    pid, epoch = await open_txn(b)
    assert await _deleted_during(b, TXN_TOPIC, _txn_ops(b, pid, epoch)[op], nth=2) == answer  # 1st: prepared
    assert b.transactions.txns == {}
    await b.transactions.topic.ready()  # made again
    assert [b.topics.partition(TXN_TOPIC, i).log.log_end_offset for i in range(3)] == [0, 0, 0]
    error, new_pid, new_epoch = await init(b)  # unknown in the new topic: a new producer id
    assert (error, new_pid != pid, new_epoch) == (ErrorCode.NONE, True, 0)


def _offsets_ends(b) -> list[int]:
    return [b.topics.partition(OFFSETS_TOPIC, i).log.log_end_offset for i in range(5)]


@pytest.mark.parametrize("loop", ["expiry", "topic deleted"])
async def test_a_loop_over_the_groups_stops_when_the_topic_is_deleted_under_it(groups_broker, loop):
    """The offset expiry and a deleted topic's cleanup write group after group: the deletion comes while the
    first group's tombstones wait to be durable, and the other groups (gone with the topic) write nothing into
    the new one, as Kafka's unload cancels the shard's timers and fails later writes. Before, g2's tombstones
    went into the new topic and deleted a new g2's offset there."""
    b = groups_broker
    await _with_topic(b)
    for group in ("g1", "g2"):
        assert await commit(b, group, {("t", 0): 1}) == {("t", 0): ErrorCode.NONE}
    b.clock.now += 8 * 24 * 3600 * 1000  # past offsets.retention.minutes (7 days)
    ops = {"expiry": b.groups.expire_offsets, "topic deleted": lambda: b.groups.topic_deleted("t")}
    await _deleted_during(b, OFFSETS_TOPIC, ops[loop])
    await b.groups.store.ready()
    assert _offsets_ends(b) == [0] * 5


async def test_an_expired_consumer_group_deleted_after_the_topic_went_writes_nothing(groups_broker):
    """An empty consumer group's expiry waits for the store's lock; the topic is deleted meanwhile: its
    tombstones are not written into the new topic (``ConsumerStore.delete_group`` takes the epoch its caller
    read the group under). Before, it read the epoch once the topic was made again, and wrote."""
    b = groups_broker
    await _with_topic(b)
    joined = await heartbeat(b, "m1")
    assert (await heartbeat(b, "m1", -1)).error_code == ErrorCode.NONE  # left: the group is empty
    assert await commit(b, "cg", {("t", 0): 1}) == {("t", 0): ErrorCode.NONE}
    assert joined.error_code == ErrorCode.NONE
    b.clock.now += 8 * 24 * 3600 * 1000
    async with trio.open_nursery() as nursery, b.groups.consumer_store._writing:
        nursery.start_soon(b.groups.expire_offsets)
        await wait_all_tasks_blocked()  # the expiry waits for the lock
        assert await _delete(b, OFFSETS_TOPIC) == ErrorCode.NONE
        await b.groups.store.ready()
    await wait_all_tasks_blocked()
    assert _offsets_ends(b) == [0] * 5


async def test_a_static_members_replacement_stored_after_the_deletion_writes_nothing(groups_broker):
    """A static member rejoins a Stable group: its replacement is stored by a task that, as it happens, starts
    only after the deletion. The rejoin answers NOT_COORDINATOR (the group unloaded) and the task writes no
    record of the gone group into the new topic: it takes the store's epoch from when it was started."""
    b = groups_broker
    await _with_topic(b)
    first = await join(b, "g", instance="i1")
    await sync(b, "g", first.generation_id, first.member_id, {first.member_id: b"x"}, instance="i1")
    coordinator, gate, answers = b.groups.coordinator, trio.Event(), {}
    store_replacement = coordinator._store_replacement

    async def late(*args):
        await gate.wait()
        await store_replacement(*args)

    coordinator._store_replacement = late
    async with trio.open_nursery() as nursery:
        start_join(nursery, answers, "rejoin", join, b, "g", instance="i1")
        await wait_all_tasks_blocked()
        assert await _delete(b, OFFSETS_TOPIC) == ErrorCode.NONE
        gate.set()
    await wait_all_tasks_blocked()
    assert answers["rejoin"].error_code == NOT_COORDINATOR
    await b.groups.store.ready()
    assert _offsets_ends(b) == [0] * 5


async def test_a_consumer_group_write_nobody_waits_for_is_not_queued_again_after_the_deletion(groups_broker):
    """A consumer group's records written with no request waiting (as a timer round writes them) fail to become
    durable because the topic was deleted meanwhile: they are not put back into the queues the unload
    cleared, so nothing of the gone group is written later. Before, they were queued again."""
    b = groups_broker
    await _with_topic(b)
    assert (await heartbeat(b, "m1")).error_code == ErrorCode.NONE
    b.groups.groups["cg"].stored.clear()  # every record of the group to be written again
    b.groups.consumer.dirty.add(("cg", None))
    assert await _deleted_during(b, OFFSETS_TOPIC, b.groups.store_consumer_groups) == NOT_COORDINATOR
    consumer = b.groups.consumer
    assert (consumer.dirty, consumer.converted, consumer.downgraded) == (set(), set(), {})
