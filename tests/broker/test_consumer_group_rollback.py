"""A consumer-group request whose write fails leaves the group as it was (``consumer_rollback``).

Kafka's coordinator runtime refuses a batch over ``max.message.bytes`` before the log, or fails it in the
log (a storage error), and reverts its in-memory state to before that batch (``CoordinatorRuntime``'s
``failCurrentBatch``, the ``SnapshotRegistry`` revert): only that request fails, with the requests whose
changes were made on top of it, and the group is as it was. The old code kept the refused change in memory
and wrote it again with every later batch of the group: a join refused as too large made every other
member's heartbeat fail (UNKNOWN_SERVER_ERROR, fatal for the Java consumer) until the healthy member was
fenced. A real broker with a hand-driven clock (``groups_broker``); ConsumerGroupHeartbeat, JoinGroup,
SyncGroup and LeaveGroup through ``dispatch``; a failing write injected in ``GroupStore.write`` or made real
(a record over ``max.message.bytes``, the log dir of the group's partition gone offline).
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from broker.groups import consumer_protocol as cp
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.consumer_records import ConsumerKey
from broker.groups.store import OFFSETS_TOPIC, Loaded
from protocol import ErrorCode

from ._admin_client import call, create_ok, req, sub
from ._consumer_group_client import describe, heartbeat, owned
from ._group_client import clock, group_props, groups_broker, join, protocols, sync  # noqa: F401  (fixtures)
from ._group_client import heartbeat as classic_heartbeat
from .test_consumer_group_migration import mig, subscribed, upgraded  # noqa: F401  (fixture)
from .test_consumer_group_store_retry import fail_first_write, hold_durability, retried
from .test_group_write_errors import take_offline

SMALL = {"message.max.bytes": "4000"}  # __consumer_offsets' max.message.bytes follows it
LONG_NAMES = [f"topic-with-a-rather-long-name-{i:03}" for i in range(200)]  # a member record over 4000 bytes


def member_records(broker, group: str = "cg") -> set[str]:
    """The member ids with a live consumer-group record of ``group`` in the log (the last record per key wins)."""
    last: dict = {}
    for e in broker.groups.store.load():
        if isinstance(e, Loaded) and isinstance(e.key, ConsumerKey) and e.key.group == group:
            last[e.key] = e.value is not None
    return {k.member_id for k, live in last.items() if live and k.member_id is not None}


async def nothing_left_to_write(broker, group: str = "cg") -> bool:
    """A store round (the timer task's next) writes no record of ``group``: nothing of the undone change is left."""
    partition = broker.topics.partition(OFFSETS_TOPIC, broker.groups.store.partition_of(group))
    end = partition.log.log_end_offset
    assert await broker.groups.store_consumer_groups() is None
    return partition.log.log_end_offset == end


def snapshot(group: ConsumerGroup) -> tuple:
    return (group.group_epoch, group.assignment_epoch, dict(group.members), dict(group.target),
            dict(group.partition_epochs))  # fmt: skip


async def joined_b(b):
    await b.groups.store.ready()
    await create_ok(b, "t", 2)
    first = await heartbeat(b, "member-b")
    assert first.error_code == ErrorCode.NONE and first.member_epoch == 1
    return first


def first_assigned(b, first) -> dict:
    tid = b.topics.get("t").topic_id
    assert [(t.topic_id, sorted(t.partitions)) for t in first.assignment.topic_partitions] == [(tid, [0, 1])]
    return {tid: frozenset({0, 1})}


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_join_refused_as_too_large_leaves_the_group_as_it_was(groups_broker):
    """The reviewer's scenario: member-a's join (its subscription of 200 long names) is refused; member-b keeps
    heartbeating with its two partitions for 40 s, member-a is in no description and no record."""
    b = groups_broker
    first = await joined_b(b)
    before = snapshot(b.groups.groups["cg"])
    refused = await heartbeat(b, "member-a", topics=["t", *LONG_NAMES])
    assert refused.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    group = b.groups.groups["cg"]
    assert snapshot(group) == before and sorted(group.members) == ["member-b"]  # the old code: member-a, epoch 2
    assert await nothing_left_to_write(b)
    answers = []
    for _ in range(4):
        b.clock.now += 10_000
        b.groups.consumer.tick()
        again = await heartbeat(b, "member-b", epoch=first.member_epoch, topics=None,
                                owned_partitions=owned(first.assignment))  # fmt: skip
        answers.append(again.error_code)
    assert answers == [ErrorCode.NONE] * 4  # the old code: UNKNOWN_SERVER_ERROR, then UNKNOWN_MEMBER_ID
    assert group.members["member-b"].assigned == first_assigned(b, first)
    (described,) = await describe(b, "cg")
    assert [m.member_id for m in described.members] == ["member-b"] and described.group_epoch == 1
    assert member_records(b.reopen()) == {"member-b"}


async def test_a_leave_whose_log_dir_went_offline_leaves_the_member_in_the_group(groups_broker):
    """member-a's leave is answered NOT_COORDINATOR (KAFKA_STORAGE_ERROR from the log): member-a is still in the
    group with its epoch and partitions, and the group epoch did not move (the old code removed it)."""
    b = groups_broker
    await joined_b(b)
    assert (await heartbeat(b, "member-a")).error_code == ErrorCode.NONE
    before = snapshot(b.groups.groups["cg"])
    take_offline(b, "cg")
    left = await heartbeat(b, "member-a", -1, topics=None, owned_partitions=None)
    assert left.error_code == ErrorCode.NOT_COORDINATOR
    assert snapshot(b.groups.groups["cg"]) == before
    assert not b.groups.consumer.converted and not b.groups.consumer.downgraded


async def test_a_session_fencing_whose_write_fails_is_done_again_at_the_next_round(groups_broker):
    """member-a's session ran out; the timer's fencing write fails: member-a is back (its session still
    expired, as Kafka's timer runs again after a failed write), and the next round fences it for good."""
    b = groups_broker
    await joined_b(b)
    assert (await heartbeat(b, "member-a")).error_code == ErrorCode.NONE
    b.clock.now += 40_000
    assert (await heartbeat(b, "member-b", 1, topics=None, owned_partitions=None)).error_code == ErrorCode.NONE
    before = snapshot(b.groups.groups["cg"])
    fail_first_write(b, "cg")
    b.clock.now += 10_000
    b.groups.consumer.tick()
    assert "member-a" not in b.groups.groups["cg"].members
    assert await b.groups.store_consumer_groups() == ErrorCode.KAFKA_STORAGE_ERROR
    assert snapshot(b.groups.groups["cg"]) == before  # the old code: fenced in memory, written again later
    assert b.groups.consumer.next_deadline() <= b.clock.now
    await retried()  # the failing group's pause
    b.groups.consumer.tick()
    assert await b.groups.store_consumer_groups() is None
    assert sorted(b.groups.groups["cg"].members) == ["member-b"]
    assert member_records(b.reopen()) == {"member-b"}


async def test_a_change_made_on_top_of_a_failed_write_is_undone_with_it(groups_broker):
    """member-a's join is being written (held) when member-c joins: member-c's change is made on top of
    member-a's. member-a's write fails: both are answered the error and the group is as before member-a (Kafka
    reverts to before the failed batch, failing what came after it). member-c's next join works. The old code
    answered member-c NONE and kept member-a in the group."""
    b = groups_broker
    await joined_b(b)
    before = snapshot(b.groups.groups["cg"])
    real, held, calls = b.groups.store.append_rows, trio.Event(), []

    async def append_rows(group_id, rows, *args, **kwargs):
        calls.append(rows)
        if len(calls) == 1:
            await held.wait()
            return ErrorCode.NOT_COORDINATOR
        return await real(group_id, rows, *args, **kwargs)

    b.groups.store.append_rows = append_rows
    answers = {}

    async def join_as(member_id: str) -> None:
        answers[member_id] = (await heartbeat(b, member_id)).error_code

    async with trio.open_nursery() as nursery:
        nursery.start_soon(join_as, "member-a")
        await wait_all_tasks_blocked()
        nursery.start_soon(join_as, "member-c")
        await wait_all_tasks_blocked()
        assert sorted(b.groups.groups["cg"].members) == ["member-a", "member-b", "member-c"]
        held.set()
    assert answers == {"member-a": ErrorCode.NOT_COORDINATOR, "member-c": ErrorCode.NOT_COORDINATOR}
    assert snapshot(b.groups.groups["cg"]) == before and len([rows for rows in calls if rows]) == 1
    assert await nothing_left_to_write(b)
    assert (await heartbeat(b, "member-c")).error_code == ErrorCode.NONE
    assert sorted(b.groups.groups["cg"].members) == ["member-b", "member-c"]
    assert b.groups.groups["cg"].group_epoch == 2
    assert member_records(b.reopen()) == {"member-b", "member-c"}


async def test_a_join_whose_batch_does_not_become_durable_is_undone(groups_broker):
    """member-a's batch is in the log, waiting for its fsync round, when the log goes offline: the join is
    answered NOT_COORDINATOR and undone (the group, and what it says the log holds, as before member-a)."""
    b = groups_broker
    await joined_b(b)
    group = b.groups.groups["cg"]
    before, stored = snapshot(group), dict(group.stored)
    gate, answers = hold_durability(b), []

    async def join_a() -> None:
        answers.append((await heartbeat(b, "member-a")).error_code)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(join_a)
        await wait_all_tasks_blocked()
        assert "member-a" in group.members and group.stored != stored  # appended, not durable
        b.topics.partition(OFFSETS_TOPIC, b.groups.store.partition_of("cg")).log.offline = True
        gate.set()
    assert answers == [ErrorCode.NOT_COORDINATOR]
    assert snapshot(group) == before and group.stored == stored  # the old code: member-a kept, written again


async def test_a_classic_join_and_leave_whose_write_fails_are_undone(mig):
    """In the upgraded group (classic members a and other, consumer member c), a new classic member's
    JoinGroup and a's LeaveGroup are refused by the log: neither changes the group."""
    a, other, _c = await upgraded(mig)
    before = snapshot(mig.groups.groups["cg"])
    fail_first_write(mig, "cg", times=2)
    joined = await join(mig, "cg", "x", protos=subscribed())
    assert joined.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    group = mig.groups.groups["cg"]
    assert snapshot(group) == before  # the old code: x in the group, epoch 4
    assert "x" not in group.session_deadlines and "x" not in group.sync_deadlines  # the timers it armed: gone
    Member = sub(13, "MemberIdentity")
    resp = await call(mig, 13, 3, req(13, group_id="cg", members=[Member(member_id=a, group_instance_id=None)]))
    assert resp.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert snapshot(mig.groups.groups["cg"]) == before  # the old code: a fenced
    assert sorted(mig.groups.groups["cg"].members) == sorted([a, other, "c"])
    assert await nothing_left_to_write(mig)


def big_subscription(owned=()) -> list:
    """A subscription of ``t`` with 1500 bytes of user data: one member's record is well under 4000 bytes, the
    classic group record of three such members is over."""
    plain = cp.encode_subscription(["t"], list(owned), 1)
    head = 2 + 4 + 2 + len("t")  # version, topic count, the topic; then the (null) user data
    assert plain[head:head + 4] == b"\xff\xff\xff\xff"
    data = b"u" * 1500
    return protocols(("range", plain[:head] + len(data).to_bytes(4, "big") + data + plain[head + 4:]))


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_downgrade_over_the_limit_keeps_the_consumer_group(mig):
    """Three classic members (each record written on its own, under the limit) and c; c leaves: the downgrade's
    batch (the classic group record carries the three subscriptions) is over max.message.bytes. Kafka fails the
    conversion (its batch is refused before anything changes): c's leave is answered UNKNOWN_SERVER_ERROR and
    the consumer group stays, c in it. The old code answered the error but had turned the group classic in
    memory, and queued the refused downgrade to be written again and again."""
    a, other, _c = await upgraded(mig)
    x = await join(mig, "cg", "x", protos=big_subscription())
    assert x.error_code == ErrorCode.NONE
    for member_id, owned_now in ((a, [0, 1]), (other, [2, 3])):
        again = await join(mig, "cg", member_id, protos=big_subscription([("t", owned_now)]))
        assert again.error_code == ErrorCode.NONE, again
    before = snapshot(mig.groups.groups["cg"])
    left = await heartbeat(mig, "c", -1, topics=None, owned_partitions=None)
    assert left.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    group = mig.groups.groups["cg"]
    assert isinstance(group, ConsumerGroup) and snapshot(group) == before
    assert not mig.groups.consumer.downgraded
    assert await nothing_left_to_write(mig)
    restored = mig.reopen().groups.groups["cg"]
    assert isinstance(restored, ConsumerGroup) and sorted(restored.members) == sorted([a, other, "c", "x"])


async def _synced_during_a_failed_write(b, fail) -> tuple[str, int, dict]:
    """In the upgraded group, classic member a rejoins (it must sync within its rebalance timeout, 10 s) and c
    changes its rack (a write of c's member record, which the group epoch does not follow); a's SyncGroup comes
    while that write is under way, then the write fails (``fail``: set up the failure, give the event that
    lets it happen). a's member id, generation and the answers."""
    a, _other, c = await upgraded(b)
    joined = await join(b, "cg", a, protos=subscribed([("t", [0, 1])]))
    assert joined.error_code == ErrorCode.NONE and a in b.groups.groups["cg"].sync_deadlines
    gate, answers = fail(b), {}

    async def rack() -> None:
        hb = await heartbeat(b, "c", c.member_epoch, topics=None, owned_partitions=None, rack="r1")
        answers["c"] = hb.error_code

    async def sync_a() -> None:
        answers["a"] = (await sync(b, "cg", joined.generation_id, a)).error_code

    async with trio.open_nursery() as nursery:
        nursery.start_soon(rack)
        await wait_all_tasks_blocked()  # c's write under way
        nursery.start_soon(sync_a)
        await wait_all_tasks_blocked()
        gate.set()
    return a, joined.generation_id, answers


def _fail_held_append(b) -> trio.Event:
    """The next write's append waits for the event, then fails as an append to a failed log dir does."""
    real, gate = b.groups.store.append_rows, trio.Event()

    async def append_rows(group_id, rows, *args, **kwargs):
        if rows and b.groups.store.append_rows is append_rows:
            b.groups.store.append_rows = real
            await gate.wait()
            return ErrorCode.NOT_COORDINATOR  # as a storage error is answered
        return await real(group_id, rows, *args, **kwargs)

    b.groups.store.append_rows = append_rows
    return gate


async def test_a_classic_sync_during_a_write_refused_is_not_undone_with_it(mig):
    """c's write is refused by the log and undone; a's SyncGroup, waiting for it, is answered once the group is
    as before c's change, and a, which synced, keeps heartbeating past its old sync deadline. Before, the sync
    cleared a's deadline at once, the undo put it back from the copy it made before c's change, and the timer
    fenced a 10 s later although it had synced and heartbeated (Kafka clears the sync timeout when the sync's
    write completes, ``classicGroupSyncToConsumerGroup``, and a revert does not touch timers)."""
    b = mig
    a, generation, answers = await _synced_during_a_failed_write(b, _fail_held_append)
    assert answers == {"c": ErrorCode.NOT_COORDINATOR, "a": ErrorCode.NONE}
    assert a not in b.groups.groups["cg"].sync_deadlines
    for _ in range(3):  # to 12 s: a's sync deadline (10 s) has passed
        b.clock.now += 4_000
        assert await classic_heartbeat(b, "cg", generation, a) == ErrorCode.NONE
        b.groups.consumer.tick()
        assert await b.groups.store_consumer_groups() is None
        assert a in b.groups.groups["cg"].members


async def test_a_classic_sync_waiting_for_a_write_not_durable_answers_its_error(mig):
    """c's batch is in the log when the log goes offline: a's SyncGroup, which waited for that batch, answers
    its error (as Kafka fails the requests waiting on a failed batch) and a's sync deadline stays, not cleared
    by a sync that failed. Before, the sync was answered NONE before c's batch was durable."""

    def offline_after(b) -> trio.Event:
        gate, real = hold_durability(b), b.groups.store.durable_for

        async def durable_for(group_ids, *args):
            b.topics.partition(OFFSETS_TOPIC, b.groups.store.partition_of("cg")).log.offline = True
            return await real(group_ids, *args)

        b.groups.store.durable_for = durable_for
        return gate

    a, _generation, answers = await _synced_during_a_failed_write(mig, offline_after)
    assert answers == {"c": ErrorCode.NOT_COORDINATOR, "a": ErrorCode.NOT_COORDINATOR}
    assert a in mig.groups.groups["cg"].sync_deadlines


async def test_a_classic_sync_is_not_undone_by_a_later_write_that_fails(mig):
    """c's rack change (r1) waits for its fsync round; a's SyncGroup waits for it; c's next change (r2) is
    appended meanwhile, its copy made while a still had its sync deadline. r1 becomes durable and a's sync is
    answered, then r2's round fails and r2 is undone: a's deadline stays cleared (a revert leaves timers, as
    Kafka's), and a, which synced, is not fenced. Before, the undo put back every join and sync deadline from
    r2's copy."""
    b = mig
    a, _other, c = await upgraded(b)
    joined = await join(b, "cg", a, protos=subscribed([("t", [0, 1])]))
    assert joined.error_code == ErrorCode.NONE
    real, calls, gate, synced = b.wait_durable, [], trio.Event(), trio.Event()

    async def durable() -> None:  # the first round succeeds once the gate opens, the second fails after a's sync
        calls.append(None)
        if len(calls) == 1:
            await gate.wait()
            return await real()
        await synced.wait()
        raise OSError("fsync failed")

    b.wait_durable = durable
    answers = {}

    async def rack(name: str) -> None:
        hb = await heartbeat(b, "c", c.member_epoch, topics=None, owned_partitions=None, rack=name)
        answers[name] = hb.error_code

    async def sync_a() -> None:
        answers["a"] = (await sync(b, "cg", joined.generation_id, a)).error_code
        synced.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(rack, "r1")
        await wait_all_tasks_blocked()
        nursery.start_soon(sync_a)
        await wait_all_tasks_blocked()
        nursery.start_soon(rack, "r2")
        await wait_all_tasks_blocked()
        gate.set()
    b.wait_durable = real
    assert answers == {"r1": ErrorCode.NONE, "a": ErrorCode.NONE, "r2": ErrorCode.NOT_COORDINATOR}
    assert a not in b.groups.groups["cg"].sync_deadlines
    for _ in range(3):  # to 12 s: a's sync deadline (10 s) has passed
        b.clock.now += 4_000
        assert await classic_heartbeat(b, "cg", joined.generation_id, a) == ErrorCode.NONE
        b.groups.consumer.tick()
        assert await b.groups.store_consumer_groups() is None
        assert a in b.groups.groups["cg"].members
