"""KIP-848 consumer-group writes that fail: a request's change is undone, the timer's runs again, none dropped.

The coordinator changes groups in memory and queues what to write (``dirty`` groups and members,
``converted`` classic groups, ``downgraded`` consumer groups); ``GroupManager.store_consumer_groups`` writes
them. A failed write undoes the change it carried (``consumer_rollback``, as Kafka's coordinator reverts its
state): a fencing by the timer task is done again at its next round, a heartbeat's conversion is undone. Here
``store.write`` answers KAFKA_STORAGE_ERROR for the first writes of one group, then the next round runs and
what ``__consumer_offsets`` holds is read back (the records in log order, or the groups a reopened broker
rebuilds). The old code dropped the groups changed in the round of a failed downgrade, the downgrade itself,
and a converted group's classic tombstone (then, until the rollback, it kept the failed change in memory and
wrote it again). Store calls also run one at a time, so one cannot answer a heartbeat whose change another is
still writing. A real broker with a hand-driven clock (``groups_broker``); classic members through
JoinGroup/SyncGroup.
"""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from broker.groups import records as r
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.consumer_records import ConsumerKey
from broker.groups.group import Group
from broker.groups.store import Loaded
from protocol import ErrorCode

from ._admin_client import create_ok
from ._consumer_group_client import heartbeat
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from ._group_client import heartbeat as classic_heartbeat
from .test_consumer_group_migration import classic_pair, mig, rejoin, tick, upgraded  # noqa: F401


def fail_first_write(broker, group: str, times: int = 1) -> list:
    """``store.write`` answers KAFKA_STORAGE_ERROR for the first ``times`` writes of ``group``; the rows of
    each write it refused are recorded."""
    real, refused = broker.groups.store.write, []

    async def write(group_id, rows, *args, **kwargs):
        if group_id == group and len(refused) < times:
            refused.append(rows)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return await real(group_id, rows, *args, **kwargs)

    broker.groups.store.write = write
    return refused


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


async def test_store_calls_write_one_at_a_time(groups_broker):
    """Member m1's join is being written (its write held) when m2 joins the same group: m2's heartbeat waits for
    that write, and m2's batch follows m1's in the log. Before, m2's batch was written and m2 answered while
    m1's write was still in flight (its batch then landed after m2's)."""
    b = groups_broker
    await create_ok(b, "t", 2)
    await b.groups.store.ready()
    real, events, held = b.groups.store.write, [], trio.Event()

    async def write(group_id, rows, *args, **kwargs):
        n = len(events) // 2
        events.append(("start", n))
        if n == 0:
            await held.wait()
        try:
            return await real(group_id, rows, *args, **kwargs)
        finally:
            events.append(("end", n))

    b.groups.store.write = write
    answered = []

    async def join(member_id: str) -> None:
        answered.append(((await heartbeat(b, member_id, group="g")).error_code, member_id, list(events)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(join, "m1")
        await wait_all_tasks_blocked()
        nursery.start_soon(join, "m2")
        await wait_all_tasks_blocked()
        assert answered == [] and events == [("start", 0)]  # m2 waits for m1's write
        held.set()
    assert events == [("start", 0), ("end", 0), ("start", 1), ("end", 1)]
    assert [a[:2] for a in answered] == [(0, "m1"), (0, "m2")]


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
