"""DeleteGroups forgets the group as its tombstones go in, not once they are durable.

Kafka's DeleteGroups makes the tombstones in one write operation of the coordinator and replays them as
they are appended: the group is gone at once, and a request after it (a heartbeat of a new member, a
JoinGroup) makes a new group whose records follow the tombstones in the log. The old delete forgot the
group only after its fsync round: a member that joined in between joined the group about to be forgotten,
was answered OK, then the delete dropped the group with it, while the log (its records after the
tombstones) held the group live and a restart brought it back with a member nobody knew. When the
tombstones do not become durable the delete fails and the group is back (Kafka reverts to the state before
the delete's batch, and with it a group made since). A real broker (``groups_broker``), the fsync round held.
"""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from protocol import ErrorCode

from ._admin_client import create_ok
from ._consumer_group_client import heartbeat
from ._group_client import clock, commit, group_props, groups_broker, join  # noqa: F401  (fixtures)
from .test_consumer_group_delete_order import delete_group
from .test_consumer_group_store_retry import hold_durability, one_then_other


async def _empty_consumer_group(b) -> None:
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert (await heartbeat(b, "m1")).error_code == 0
    assert (await heartbeat(b, "m1", -1, topics=None, owned_partitions=None)).error_code == 0


async def _delete_and(b, gate: trio.Event, request) -> dict:
    """DeleteGroups of ``cg``, then ``request`` while the delete waits for its fsync round; their answers."""
    answers = {}

    async def delete() -> None:
        answers["delete"] = await delete_group(b, "cg")

    async def other() -> None:
        answers["other"] = await request()

    await one_then_other(gate, delete, other)
    return answers


async def test_a_member_joining_while_the_delete_waits_makes_a_new_group(groups_broker):
    b = groups_broker
    await _empty_consumer_group(b)
    answers = await _delete_and(b, hold_durability(b), lambda: heartbeat(b, "m2"))
    assert answers["delete"] == 0 and answers["other"].error_code == 0
    group = b.groups.groups.get("cg")  # the old code: none (the delete forgot the group m2 had joined)
    assert group is not None and sorted(group.members) == ["m2"] and group.group_epoch == 1
    again = b.reopen()
    assert sorted(again.groups.groups["cg"].members) == ["m2"]
    assert (await heartbeat(again, "m2", answers["other"].member_epoch, topics=None,
                            owned_partitions=None)).error_code == 0  # fmt: skip (old code: FENCED_MEMBER_EPOCH)


async def test_a_classic_join_while_the_delete_waits_makes_a_new_group(groups_broker):
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): 0}
    answers = await _delete_and(b, hold_durability(b), lambda: join(b, "cg", version=3))
    assert answers["delete"] == 0 and answers["other"].error_code == 0
    group = b.groups.groups.get("cg")  # the old code: none (the member joined the group the delete dropped)
    assert group is not None and list(group.members) == [answers["other"].member_id] and not group.offsets
    assert group.state != "Dead"


def _fail_durability(b) -> trio.Event:
    """The held fsync round fails (OSError) once the returned event is set."""
    gate = trio.Event()

    async def failing() -> None:
        await gate.wait()
        raise OSError("fsync failed")

    b.wait_durable = failing
    return gate


async def test_a_delete_whose_tombstones_are_not_durable_fails_and_the_group_is_back(groups_broker):
    b = groups_broker
    await _empty_consumer_group(b)
    group = b.groups.groups["cg"]
    answers = await _delete_and(b, _fail_durability(b), lambda: heartbeat(b, "m2"))
    assert answers["delete"] == ErrorCode.NOT_COORDINATOR  # a storage error, as Kafka's coordinator maps it
    assert answers["other"].error_code == ErrorCode.NOT_COORDINATOR  # the new group's write failed with it
    assert b.groups.groups["cg"] is group and not group.members  # the group made since is undone


async def test_an_offset_committed_while_the_delete_waits_for_the_store_is_deleted_too(groups_broker):
    """Kafka picks the offsets to tombstone inside the delete's write operation: one committed while the
    delete waited for the store is deleted with the group, not left live in the log to bring it back."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 2)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): 0}
    answers = {}

    async def delete() -> None:
        answers["delete"] = await delete_group(b, "cg")

    async with trio.open_nursery() as nursery:
        async with b.groups.consumer_store._writing:  # a store call under way: the delete waits for it
            nursery.start_soon(delete)
            await wait_all_tasks_blocked()
            assert await commit(b, "cg", {("t", 1): 7}) == {("t", 1): 0}
    assert answers["delete"] == 0 and "cg" not in b.groups.groups
    assert "cg" not in b.reopen().groups.groups  # the old code: back with the offset of t-1


async def test_a_leave_whose_fsync_fails_after_a_delete_forgot_it_answers_the_error(groups_broker):
    """The last member's leave is in the log, waiting for its fsync round, when DeleteGroups deletes the group
    (now empty) and forgets the leave's pending change; the round fails. Both requests answer the failure, as
    Kafka fails every write of a failed batch. Before, the leave, its pending gone, was answered NONE."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert (await heartbeat(b, "m1")).error_code == 0
    gate, answers = trio.Event(), {}

    async def failing() -> None:
        await gate.wait()
        raise OSError("fsync failed")

    async def leave() -> None:
        answers["leave"] = (await heartbeat(b, "m1", -1, topics=None, owned_partitions=None)).error_code

    async def delete() -> None:
        answers["delete"] = await delete_group(b, "cg")

    b.wait_durable = failing
    await one_then_other(gate, leave, delete)  # the leave's records in the log, its fsync round held
    assert answers == {"leave": ErrorCode.NOT_COORDINATOR, "delete": ErrorCode.NOT_COORDINATOR}
