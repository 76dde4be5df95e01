"""KIP-345 static members of classic groups: an instance rejoining without its member id.

Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin`` and
``ClassicGroup.replaceStaticMember``, checked through the real handlers
(``_group_client``) with a hand-driven clock.
"""

from __future__ import annotations

import trio

from protocol import ErrorCode

from ._group_client import (  # noqa: F401  (fixtures)
    clock, group_props, groups_broker, heartbeat, join, start_join, sync, tick,
)  # fmt: skip


async def two_static_members_completing(broker, results):
    """Instance "a" leads generation 1 alone; "b" joins and "a" rejoins: generation 2, CompletingRebalance."""
    a = await join(broker, instance="a", version=9)
    await sync(broker, "g", a.generation_id, a.member_id, {a.member_id: b"A"}, instance="a")
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "b", join, broker, instance="b", version=9)
        await trio.sleep(0.05)
        start_join(nursery, results, "a", join, broker, member_id=a.member_id, instance="a", version=9)
    assert results["a"].generation_id == results["b"].generation_id == 2
    assert results["a"].leader == results["a"].member_id
    assert broker.groups.groups["g"].state == "CompletingRebalance"
    return results["a"], results["b"]


async def test_a_replaced_member_parked_on_sync_is_fenced(groups_broker):
    """Kafka's ``replaceStaticMember`` answers the old id's parked SyncGroup FENCED_INSTANCE_ID (it crashed the
    handler: the sync waiter was given a JoinGroup answer)."""
    results = {}
    a, b = await two_static_members_completing(groups_broker, results)
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "sync-b", sync, groups_broker, "g", 2, b.member_id, {}, instance="b")
        await trio.sleep(0.05)
        start_join(nursery, results, "new-b", join, groups_broker, instance="b", version=9)  # b restarted
        await trio.sleep(0.05)
        synced = results["sync-b"]
        assert (synced.error_code, synced.assignment) == (ErrorCode.FENCED_INSTANCE_ID, b"")
        assert groups_broker.groups.groups["g"].state == "PreparingRebalance"  # the new id needs an assignment
        nursery.cancel_scope.cancel()
    assert await heartbeat(groups_broker, "g", 2, b.member_id, instance="b") == ErrorCode.FENCED_INSTANCE_ID
