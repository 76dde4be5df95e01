"""DeleteGroups (and a group's expiry) tombstone a consumer group's records in the order of its other writes.

The consumer store appends under its lock and marks what it wrote in ``group.stored``; a delete appends its
tombstones under the same lock, from ``group.stored`` as the store left it, and takes the group's queued
changes out (a queued ``converted`` mark: the classic group's record is tombstoned too). The old delete did not
take the lock: while a join's batch waited for its fsync round, the member left and the admin deleted the empty
group, whose tombstones missed the join's records (``group.stored`` did not list them yet); and a consumer
group deleted with its ``converted`` mark still queued left the classic group's record live. A restart then
brought the deleted group back. A real broker (``groups_broker``); what the log holds is read back.
"""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from broker.groups import records as r
from broker.groups.consumer_records import ConsumerKey
from broker.groups.consumer_requests import Heartbeat
from broker.groups.store import Loaded

from ._admin_client import call, create_ok, req
from ._consumer_group_client import heartbeat
from ._group_client import clock, group_props, groups_broker, join_new, sync, tick  # noqa: F401  (fixtures)
from .test_consumer_group_store_retry import hold_durability


def live_keys(broker, group: str) -> list:
    """The keys of ``group`` (classic or consumer records) whose last record in the log has a value."""
    last = {}
    for e in broker.groups.store.load():
        if isinstance(e, Loaded) and isinstance(e.key, (ConsumerKey, r.GroupKey)) and e.key.group == group:
            last[e.key] = e.value is not None
    return [k for k, alive in last.items() if alive]


async def delete_group(broker, group: str) -> int:
    return (await call(broker, 42, 2, req(42, groups_names=[group]))).results[0].error_code


async def test_a_delete_while_a_join_waits_for_its_fsync_tombstones_the_join_s_records(groups_broker):
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    gate, answers = hold_durability(b), {}

    async def join() -> None:
        answers["join"] = (await heartbeat(b, "m1")).error_code

    async def leave() -> None:
        answers["leave"] = (await heartbeat(b, "m1", -1, topics=None, owned_partitions=None)).error_code

    async def delete() -> None:
        answers["delete"] = await delete_group(b, "cg")

    async with trio.open_nursery() as nursery:
        for task in (join, leave, delete):
            nursery.start_soon(task)
            await wait_all_tasks_blocked()
        gate.set()
    assert answers == {"join": 0, "leave": 0, "delete": 0}
    assert live_keys(b, "cg") == []  # the old code: m1's member, target and current assignment records
    assert "cg" not in b.reopen().groups.groups


async def test_a_delete_while_the_converted_mark_is_queued_tombstones_the_classic_record(groups_broker):
    """Classic group cg (its record in the log) is empty when consumer member c joins (cg becomes a consumer
    group) and leaves, neither change written yet (in the coordinator's queues, as a request leaves them for its
    store call; a failed write now undoes them instead of leaving them queued) when cg is deleted."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    first = await join_new(b, "cg")
    assert (await sync(b, "cg", first.generation_id, first.member_id, {first.member_id: b""})).error_code == 0
    tick(b, 11_000)  # its session ends: an empty classic group, its record written
    await wait_all_tasks_blocked()
    assert live_keys(b, "cg") == [r.GroupKey("cg")]
    b.groups.consumer.heartbeat(Heartbeat("cg", "c", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["t"],
                                          owned=[]))  # fmt: skip
    b.groups.consumer.heartbeat(Heartbeat("cg", "c", -1))
    assert "cg" in b.groups.consumer.converted
    assert await delete_group(b, "cg") == 0
    assert "cg" not in b.groups.consumer.converted
    assert live_keys(b, "cg") == []  # the old code: the classic group's record
    assert "cg" not in b.reopen().groups.groups
