"""KIP-848 consumer-group writes that fail: a request's change is undone, the timer's runs again, none dropped.

The coordinator changes groups in memory and queues what to write (``dirty`` groups and members,
``converted`` classic groups, ``downgraded`` consumer groups); ``GroupManager.store_consumer_groups`` writes
them. A failed write undoes the change it carried (``consumer_rollback``, as Kafka's coordinator reverts its
state): a fencing by the timer task is done again at its next round, a heartbeat's conversion is undone; what
no request changed is queued again. Here ``store.append_rows`` answers KAFKA_STORAGE_ERROR for the first
writes of one group, then the next round runs and what ``__consumer_offsets`` holds is read back (the records
in log order, or the groups a reopened broker rebuilds). The old code dropped the groups changed in the round
of a failed downgrade, the downgrade itself, and a converted group's classic tombstone (then, until the
rollback, it kept the failed change in memory and wrote it again). Store calls append one at a time, so one
cannot answer a heartbeat whose change another is still writing. A real broker with a hand-driven clock
(``groups_broker``); classic members through JoinGroup/SyncGroup.
"""

from __future__ import annotations

import attrs
import trio
from trio.testing import wait_all_tasks_blocked

from broker.groups import records as r
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.consumer_records import ConsumerKey
from broker.groups.group import Group
from broker.groups.store import Loaded
from broker.groups.timers import ROUND_S
from protocol import ErrorCode

from ._admin_client import create_ok
from ._consumer_group_client import heartbeat
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from ._group_client import heartbeat as classic_heartbeat
from .test_consumer_group_migration import classic_pair, mig, rejoin, tick, upgraded  # noqa: F401


def fail_first_write(broker, group: str, times: int = 1) -> list:
    """``store.append_rows`` answers KAFKA_STORAGE_ERROR for the first ``times`` writes of ``group``; the rows
    of each write it refused are recorded."""
    real, refused = broker.groups.store.append_rows, []

    async def append_rows(group_id, rows, *args, **kwargs):
        if group_id == group and len(refused) < times:
            refused.append(rows)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return await real(group_id, rows, *args, **kwargs)

    broker.groups.store.append_rows = append_rows
    return refused


async def retried() -> None:
    """Wait out a failed group's first pause (``ROUND_S``): before it, another call does not try it again."""
    await trio.sleep(ROUND_S)


def group_records(broker, group: str) -> list[tuple[str, bool]]:
    """The classic group record of ``group`` in the log, in order: ("classic", has a value)."""
    return [("classic", e.value is not None) for e in broker.groups.store.load()
            if isinstance(e, Loaded) and isinstance(e.key, r.GroupKey) and e.key.group == group]  # fmt: skip


async def expire_the_consumer_member(b, classic_members) -> None:
    """``c`` (the only consumer-protocol member of cg) stays silent while the classic members heartbeat: its
    session (45 s) ends and the group goes back to being a classic group, in a tick."""
    for _ in range(8):
        await tick(b, 5_000)
        assert [await classic_heartbeat(b, "cg", 3, m) for m in classic_members] == [0, 0]


async def stable_upgraded(b):
    a, other, _c = await upgraded(b)
    assert await rejoin(b, a, [0, 1]) == (3, [0, 1])
    assert await rejoin(b, other, [2, 3]) == (2, [2])
    assert await rejoin(b, other, [2]) == (3, [2])
    return a, other


async def test_a_failed_downgrade_is_undone_and_done_again_at_the_next_timer_round(mig):
    """c's session ran out: the tick fences it and downgrades cg, whose write fails. The consumer group is back with
    c in it (Kafka reverts; its session timer then fires again), and the next round writes the downgrade."""
    a, other = await stable_upgraded(mig)
    await expire_the_consumer_member(mig, (a, other))
    refused = fail_first_write(mig, "cg")
    mig.clock.now += 5_000
    mig.groups.consumer.tick()
    assert isinstance(mig.groups.groups["cg"], Group)
    assert await mig.groups.store_consumer_groups() == ErrorCode.KAFKA_STORAGE_ERROR
    assert len(refused) == 1  # the downgrade's write
    group = mig.groups.groups["cg"]
    assert isinstance(group, ConsumerGroup) and "c" in group.members and not mig.groups.consumer.downgraded
    await retried()
    mig.groups.consumer.tick()
    assert await mig.groups.store_consumer_groups() is None
    restored = mig.reopen().groups.groups["cg"]
    assert isinstance(restored, Group) and sorted(restored.members) == sorted([a, other])  # not c's group


async def test_groups_changed_in_the_round_of_a_failed_downgrade_are_still_written(mig):
    """``o`` in group ``solo`` joined with c: it is fenced in the same tick as cg is downgraded, whose write
    fails."""
    a, other = await stable_upgraded(mig)
    assert (await heartbeat(mig, "o", group="solo")).error_code == 0
    await expire_the_consumer_member(mig, (a, other))
    mig.clock.now += 5_000
    fail_first_write(mig, "cg")
    mig.groups.consumer.tick()
    assert "o" not in mig.groups.groups["solo"].members
    assert await mig.groups.store_consumer_groups("solo") is None  # cg's error is not solo's
    assert isinstance(mig.groups.groups["cg"], ConsumerGroup)  # undone: done again at the next round
    await retried()
    mig.groups.consumer.tick()
    assert await mig.groups.store_consumer_groups() is None
    broker = mig.reopen()
    assert broker.groups.groups["solo"].members == {}  # the old code: o's records never tombstoned
    assert isinstance(broker.groups.groups["cg"], Group)


async def test_a_conversion_whose_write_failed_is_undone(mig):
    """c's heartbeat upgrades the classic group; the batch (the classic record's tombstone first, then the
    consumer group's records) is refused: c is answered the error and the classic group is back, Stable at
    generation 2 with its two members, its record live. c's next heartbeat converts it again, and that is
    written (the tombstone with it)."""
    a, other = await classic_pair(mig)
    assert group_records(mig, "cg")[-1] == ("classic", True)
    refused = fail_first_write(mig, "cg")
    answer = await heartbeat(mig, "c")
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert refused[0][0] == (r.group_key("cg"), None)  # the tombstone first in the batch
    group = mig.groups.groups["cg"]
    assert isinstance(group, Group) and group.state == "Stable" and sorted(group.members) == sorted([a, other])
    assert not mig.groups.consumer.converted and not mig.groups.consumer.dirty
    assert [await classic_heartbeat(mig, "cg", 2, m) for m in (a, other)] == [0, 0]
    assert await mig.groups.store_consumer_groups() is None
    assert group_records(mig, "cg")[-1] == ("classic", True)
    assert (await heartbeat(mig, "c")).error_code == ErrorCode.NONE
    assert group_records(mig, "cg")[-1] == ("classic", False)
    assert isinstance(mig.reopen().groups.groups["cg"], ConsumerGroup)


def hold_durability(broker) -> trio.Event:
    """``wait_durable`` (the fsync round) waits until the returned event is set."""
    gate, real = trio.Event(), broker.wait_durable

    async def held() -> None:
        await gate.wait()
        await real()

    broker.wait_durable = held
    return gate


async def one_then_other(gate: trio.Event, first, then) -> None:
    """Run ``first()`` until it waits (for the held fsync round: its records are in the log), then ``then()`` until
    it waits too, then open ``gate``, and wait for both to finish."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await wait_all_tasks_blocked()
        nursery.start_soon(then)
        await wait_all_tasks_blocked()
        gate.set()


def batches_of(broker, group: str) -> list[list[bytes]]:
    """The batches in ``group``'s ``__consumer_offsets`` partition: their record keys."""
    store = broker.groups.store
    return [[bytes(x.key) for x in batch.iter_records()] for batch, _start in store.batches(store.partition_of(group))]


async def test_appends_do_not_wait_for_an_earlier_batch_to_be_durable(groups_broker):
    """m1's join is in the log, waiting for its fsync round, when m2 joins the same group: m2's batch goes in
    after m1's at once (Kafka appends a partition's batches in turn, not waiting for the commit of the one
    before); neither is answered before the round, and a store call for the group with nothing queued (a
    heartbeat whose change a timer round took) waits for it too. Before, the store lock was held across the
    fsync wait: m2's batch went in only after m1's was durable (one fsync round per group, in turn)."""
    b = groups_broker
    await create_ok(b, "t", 2)
    await b.groups.store.ready()
    gate, answered = hold_durability(b), []

    async def join(member_id: str) -> None:
        answered.append(((await heartbeat(b, member_id, group="g")).error_code, member_id))

    async def nothing_queued() -> None:
        answered.append((await b.groups.store_consumer_groups("g"), "g"))

    async with trio.open_nursery() as nursery:
        for task, arg in ((join, "m1"), (join, "m2"), (nothing_queued, None)):
            nursery.start_soon(task, *([arg] if arg else []))
            await wait_all_tasks_blocked()
        assert len(batches_of(b, "g")) == 2  # the old code: 1 (m2's waited for m1's fsync round)
        assert answered == []
        gate.set()
    assert sorted(answered, key=str) == [(0, "m1"), (0, "m2"), (None, "g")]
    members = [{m for m in ("m1", "m2") if any(m.encode() in k for k in batch)} for batch in batches_of(b, "g")]
    assert members[0] == {"m1"} and "m2" in members[1]


async def test_a_call_answers_the_error_of_an_earlier_batch_of_its_group_that_did_not_become_durable(
        groups_broker):  # fmt: skip
    """A timer round's batch of group g goes in, then its log goes offline before the fsync round: a store call
    for g that found nothing queued answers that batch's error, not NONE, and g's change is queued again."""
    b = groups_broker
    await create_ok(b, "t", 2)
    await b.groups.store.ready()
    assert (await heartbeat(b, "m1", group="g")).error_code == 0
    gate, answers = hold_durability(b), []
    b.groups.consumer.dirty.add(("g", "m1"))
    b.groups.groups["g"].stored.clear()  # so m1's records are written again

    async def call(group_id) -> None:
        answers.append(await b.groups.store_consumer_groups(group_id))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, None)  # the round: takes and appends g's change
        await wait_all_tasks_blocked()
        nursery.start_soon(call, "g")
        await wait_all_tasks_blocked()
        b.topics.partition("__consumer_offsets", b.groups.store.partition_of("g")).log.offline = True
        gate.set()
    assert answers == [ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR]
    assert ("g", "m1") in b.groups.consumer.dirty and b.groups.groups["g"].stored == {}  # written again later


async def test_groups_changed_at_once_share_their_fsync_rounds(groups_broker, autojump_clock):
    """30 groups' members join at once with 10 ms fsync rounds: each heartbeat waits about one round. Before, each
    group's write held the store lock through its own round: the last answered after 30 of them (0.3 s)."""
    b = groups_broker
    await create_ok(b, "t", 1)
    await b.groups.store.ready()

    async def slow_durable() -> None:
        await trio.sleep(0.01)

    b.wait_durable, took = slow_durable, []

    async def join(group: str) -> None:
        start = trio.current_time()
        assert (await heartbeat(b, f"{group}-1", group=group)).error_code == 0
        took.append(trio.current_time() - start)

    async with trio.open_nursery() as nursery:
        for i in range(30):
            nursery.start_soon(join, f"g{i:02}")
    assert max(took) < 0.03, max(took)


def consumer_keys(broker, group: str) -> dict[ConsumerKey, bool]:
    """Every consumer-group record key of ``group`` the log holds, with whether its last record has a value."""
    last: dict[ConsumerKey, bool] = {}
    for e in broker.groups.store.load():
        if isinstance(e, Loaded) and isinstance(e.key, ConsumerKey) and e.key.group == group:
            last[e.key] = e.value is not None
    return last


async def test_a_downgrade_undone_then_done_later_tombstones_every_record_stored_meanwhile(mig):
    """cg's downgrade fails and is undone; d joins the consumer group and leaves again meanwhile; the next timer
    round downgrades cg: every consumer record it ever stored (a's, other's, c's and d's) ends with a
    tombstone, and the reopened broker has the classic group of a and other."""
    a, other = await stable_upgraded(mig)
    await expire_the_consumer_member(mig, (a, other))
    written = consumer_keys(mig, "cg")
    assert written and all(written.values())
    fail_first_write(mig, "cg")
    mig.clock.now += 5_000
    mig.groups.consumer.tick()
    assert await mig.groups.store_consumer_groups() == ErrorCode.KAFKA_STORAGE_ERROR
    assert isinstance(mig.groups.groups["cg"], ConsumerGroup)
    assert (await heartbeat(mig, "d")).error_code == ErrorCode.NONE
    assert (await heartbeat(mig, "d", -1, topics=None, owned_partitions=None)).error_code == ErrorCode.NONE
    assert isinstance(mig.groups.groups["cg"], ConsumerGroup) and "d" not in mig.groups.groups["cg"].members
    mig.groups.consumer.tick()
    assert await mig.groups.store_consumer_groups() is None
    after = consumer_keys(mig, "cg")
    assert set(written) < set(after) and not any(after.values())  # every key ends with a tombstone
    restored = mig.reopen().groups.groups["cg"]
    assert isinstance(restored, Group) and sorted(restored.members) == sorted([a, other])


async def test_a_store_call_with_nothing_new_for_its_group_waits_for_the_earlier_batch(groups_broker):
    """A timer round appended m1's change and waits for its fsync round; a store call for the group whose
    own take gives no row (the entry queued again, nothing changed since) must not answer before that batch is
    durable (Kafka's write with no records completes at the partition's highest pending offset). The old
    check skipped the earlier batch whenever the call had tried the group at all (an empty batch counted)."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert (await heartbeat(b, "m1")).error_code == 0
    g, c, cs = b.groups.groups["cg"], b.groups.consumer, b.groups.consumer_store
    gate, answers = hold_durability(b), {}
    g.members["m1"] = attrs.evolve(g.members["m1"], client_host="/10.0.0.9")  # a change the timer round takes
    c.dirty.add(("cg", "m1"))

    async def timer_round() -> None:
        answers["timer"] = await cs.store_groups(None)

    async def request() -> None:
        c.dirty.add(("cg", "m1"))  # queued again with nothing new: this call's batch for the group is empty
        answers["request"] = await cs.store_groups("cg")
        answers["request before the round"] = not gate.is_set()

    await one_then_other(gate, timer_round, request)
    assert answers == {"timer": None, "request": None, "request before the round": False}  # the old code: True
