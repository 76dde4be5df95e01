"""An OffsetCommit in the log but not yet durable counts for deletes and expiry (``Group.committing``).

Kafka's coordinator replays a commit's records into its state as they are appended (``OffsetMetadataManager
.replay``), and DeleteGroups (``deleteAllOffsets``), OffsetDelete and offset expiry (``cleanupExpiredOffsets``)
read that state: a commit still waiting for its write to complete is tombstoned by a delete after it, and an
expiry sees its fresh timestamp and leaves it alone. Reads (OffsetFetch) see only what is committed. Here a
commit is applied to ``group.offsets`` once durable; before, the deletes and the expiry looked only at that,
so a commit in its fsync window outlived a delete (the group came back after a restart) or was expired
behind its back (answered NONE, yet gone). And a tombstone forgets by place in the log, as a replay does: a
commit in flight before it stays deleted when it becomes durable after it, an offset staged after it stays.
A real broker (``groups_broker``), the fsync round held.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from protocol import ErrorCode

from ._admin_client import create_ok
from ._group_client import clock, commit, fetch, group_props, groups_broker, stable, tick  # noqa: F401  (fixtures)
from .test_consumer_group_delete_order import delete_group
from .test_consumer_group_store_retry import hold_durability, one_then_other
from .test_group_offsets import _offset_delete
from .test_txn_offsets import FakeTxns, end, txn_commit

NONE = ErrorCode.NONE


async def _while_commit_waits(b, offsets: dict, request, hold: bool = True) -> dict:
    """Commit ``offsets`` to ``cg``, then run ``request`` while the commit waits for its fsync round (``hold``:
    held until both wait); their answers."""
    answers: dict = {}
    gate = hold_durability(b) if hold else trio.Event()

    async def commit_it() -> None:
        answers["commit"] = await commit(b, "cg", offsets)

    async def other() -> None:
        answers["other"] = await request()

    await one_then_other(gate, commit_it, other)  # the commit's record in the log, its fsync round held
    return answers


async def test_a_delete_tombstones_an_offset_whose_commit_waits_for_its_fsync(groups_broker):
    """The delete's tombstones follow the commit's record: after a restart the group stays deleted. Before, the
    commit's offset was not tombstoned and the group came back with it."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 2)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): NONE}
    answers = await _while_commit_waits(b, {("t", 1): 7}, lambda: delete_group(b, "cg"))
    assert answers == {"commit": {("t", 1): NONE}, "other": NONE}
    assert "cg" not in b.groups.groups
    assert "cg" not in b.reopen().groups.groups


@pytest.mark.parametrize("group_props", [{"offsets.retention.minutes": "1"}])
async def test_an_expiry_leaves_an_offset_whose_new_commit_waits_for_its_fsync(groups_broker):
    """t-0 expired, then committed again; the expiry check runs while the new commit waits for its fsync round:
    it does not tombstone t-0 (the commit is fresh), so the commit answered NONE holds, now and after a restart.
    Before, the expiry took the old value, its tombstone followed the commit and it forgot the new value."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): NONE}
    b.clock.now += 120_000

    async def expire() -> None:
        await b.groups.expire_offsets()

    answers = await _while_commit_waits(b, {("t", 0): 9}, expire)
    assert answers["commit"] == {("t", 0): NONE}
    assert (await fetch(b, "cg", {"t": [0]}))[1][("t", 0)][0] == 9
    assert (await fetch(b.reopen(), "cg", {"t": [0]}))[1][("t", 0)][0] == 9


async def test_offset_delete_tombstones_an_offset_whose_first_commit_waits_for_its_fsync(groups_broker):
    """OffsetDelete of a partition whose only commit is in flight deletes it (Kafka's ``hasCommittedOffset`` reads
    the replayed state). Before, it answered NONE and wrote nothing: the commit's offset stayed."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 2)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): NONE}
    answers = await _while_commit_waits(b, {("t", 1): 7}, lambda: _offset_delete(b, "cg", [("t", 1)]))
    assert answers == {"commit": {("t", 1): NONE}, "other": (NONE, {("t", 1): NONE})}
    expected = {("t", 0): (5, "m", NONE), ("t", 1): (-1, "", NONE)}
    assert (await fetch(b, "cg", {"t": [0, 1]}))[1] == expected
    assert (await fetch(b.reopen(), "cg", {"t": [0, 1]}))[1] == expected


async def test_a_commit_durable_after_a_later_tombstone_does_not_come_back(groups_broker):
    """t-0 is committed again, then deleted by OffsetDelete while that commit waits; the delete's round ends
    first (it forgets t-0), then the commit's: its record is before the tombstone, so t-0 stays deleted in
    memory as in the log. Before, the commit applied its value after the delete had forgotten t-0."""
    b = groups_broker
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert await commit(b, "cg", {("t", 0): 5}) == {("t", 0): NONE}
    real, waiting = b.wait_durable, []

    async def in_turn() -> None:  # the first caller (the commit) waits until the second's round has ended
        mine = trio.Event()
        waiting.append(mine)
        if len(waiting) == 1:
            await mine.wait()
        await real()
        if len(waiting) > 1:
            waiting[0].set()

    b.wait_durable = in_turn
    delete = lambda: _offset_delete(b, "cg", [("t", 0)])  # noqa: E731
    answers = await _while_commit_waits(b, {("t", 0): 9}, delete, hold=False)
    assert answers == {"commit": {("t", 0): NONE}, "other": (NONE, {("t", 0): NONE})}
    assert (await fetch(b, "cg", {"t": [0]}))[1] == {("t", 0): (-1, "", NONE)}
    assert (await fetch(b.reopen(), "cg", {"t": [0]}))[1] == {("t", 0): (-1, "", NONE)}


async def test_an_expiry_waiting_for_the_store_keeps_an_offset_committed_again_meanwhile(groups_broker):
    """An empty classic group (it had members) whose offsets all expired is deleted with them under the store's
    lock; while the expiry waits for it, t-1 is committed again and durable. The expiry then finds the group
    changed and leaves it for the next check. Before, it checked only for offsets it had not chosen and wrote
    its tombstones over the new commit."""
    b = groups_broker
    await create_ok(b, "t", 2)
    member = await stable(b)
    assert await commit(b, "g", {("t", 1): 2}, 1, member.member_id) == {("t", 1): NONE}
    retention = b.config.offsets_retention_minutes * 60_000
    tick(b, retention)  # the member's session is long over: the group is empty from now
    tick(b, retention)
    async with trio.open_nursery() as nursery:
        async with b.groups.consumer_store._writing:
            nursery.start_soon(b.groups.expire_offsets)
            await wait_all_tasks_blocked()  # the expiry chose t-1 and waits for the store
            assert await commit(b, "g", {("t", 1): 9}) == {("t", 1): NONE}
    assert (await fetch(b, "g", {"t": [1]}))[1] == {("t", 1): (9, "m", NONE)}
    assert (await fetch(b.reopen(), "g", {"t": [1]}))[1] == {("t", 1): (9, "m", NONE)}


async def test_an_offset_staged_after_a_tombstone_outlives_the_tombstone_s_fsync(groups_broker):
    """OffsetDelete of t-0 waits for its fsync round when a TxnOffsetCommit stages t-0 (its record after the
    tombstone); the delete then forgets only what came before its tombstone, and the transaction's commit
    makes t-0 committed, as the log holds it after a restart. Before, the delete dropped the staged offset too."""
    b = groups_broker
    b.transactions = FakeTxns()
    await b.groups.store.ready()
    await create_ok(b, "t", 1)
    assert await commit(b, "g", {("t", 0): 5}) == {("t", 0): NONE}
    gate, answers = hold_durability(b), {}

    async def delete() -> None:
        answers["delete"] = await _offset_delete(b, "g", [("t", 0)])

    async def stage() -> None:
        answers["txn"] = await txn_commit(b, "g", {("t", 0): 10})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(delete)
        await wait_all_tasks_blocked()  # the tombstone is in the log, its fsync round held
        nursery.start_soon(stage)
        await wait_all_tasks_blocked()
        gate.set()
    assert answers == {"delete": (NONE, {("t", 0): NONE}), "txn": {("t", 0): NONE}}
    await end(b, True)
    assert (await fetch(b, "g", {"t": [0]}))[1] == {("t", 0): (10, "m", NONE)}
    assert (await fetch(b.reopen(), "g", {"t": [0]}))[1] == {("t", 0): (10, "m", NONE)}
