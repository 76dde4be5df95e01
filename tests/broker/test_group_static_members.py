"""KIP-345 static members of classic groups: an instance rejoining without its member id.

Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin`` and
``ClassicGroup.replaceStaticMember``, checked through the real handlers
(``_group_client``) with a hand-driven clock.
"""

from __future__ import annotations

import trio

from protocol import ErrorCode

from ._admin_client import call, req, sub

from ._group_client import (  # noqa: F401  (fixtures)
    clock, group_props, groups_broker, heartbeat, join, join_new, protocols, start_join, sync, tick,
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


async def stable_pair(broker, results):
    """``two_static_members_completing`` then both sync: a leads a Stable generation 2."""
    a, b = await two_static_members_completing(broker, results)
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "sync-b", sync, broker, "g", 2, b.member_id, {}, instance="b")
        await trio.sleep(0.05)
        start_join(nursery, results, "sync-a", sync, broker, "g", 2, a.member_id,
                   {a.member_id: b"A", b.member_id: b"B"}, instance="a")  # fmt: skip
    assert (results["sync-a"].assignment, results["sync-b"].assignment) == (b"A", b"B")
    return a, b


async def test_a_restarted_static_leader_keeps_the_leadership_and_skips_the_assignment(groups_broker):
    """KIP-814 (JoinGroup v9): the new id leads, is told so with the member list and ``skip_assignment``."""
    a, b = await stable_pair(groups_broker, {})
    group = groups_broker.groups.groups["g"]
    again = await join(groups_broker, instance="a", version=9)  # process a restarted
    assert (again.error_code, again.generation_id, group.state) == (ErrorCode.NONE, 2, "Stable")
    assert again.member_id != a.member_id and group.leader_id == again.member_id
    assert (again.leader, again.skip_assignment) == (again.member_id, True)
    assert sorted((m.member_id, m.group_instance_id) for m in again.members) == sorted(
        [(again.member_id, "a"), (b.member_id, "b")])  # fmt: skip
    assert (await sync(groups_broker, "g", 2, again.member_id, instance="a")).assignment == b"A"


async def test_before_v9_a_restarted_static_leader_is_named_by_its_old_id(groups_broker):
    """Before v9 Kafka answers with the leader before the replacement and no member list; it still leads."""
    a, b = await stable_pair(groups_broker, {})
    again = await join(groups_broker, instance="a", version=8)
    assert (again.error_code, again.leader, again.members) == (ErrorCode.NONE, a.member_id, [])
    assert groups_broker.groups.groups["g"].leader_id == again.member_id


async def test_a_restarted_static_follower_is_not_the_leader(groups_broker):
    a, b = await stable_pair(groups_broker, {})
    again = await join(groups_broker, instance="b", version=9)
    assert (again.error_code, again.leader, again.skip_assignment, again.members) == (
        ErrorCode.NONE, a.member_id, False, [])  # fmt: skip
    assert groups_broker.groups.groups["g"].leader_id == a.member_id
    assert (await sync(groups_broker, "g", 2, again.member_id, instance="b")).assignment == b"B"


async def test_a_static_restart_is_stored_before_it_is_answered(groups_broker, monkeypatch):
    """Kafka writes the group with the new member id and answers the JoinGroup once the write is done: after a
    broker restart the new id is the member and the old one is fenced (the old id used to come back)."""
    a = await join(groups_broker, instance="a", session=30_000)
    await sync(groups_broker, "g", 1, a.member_id, {a.member_id: b"A"}, instance="a")
    stored, durable = trio.Event(), groups_broker.wait_durable

    async def slow_disk():
        await stored.wait()
        await durable()

    monkeypatch.setattr(groups_broker, "wait_durable", slow_disk)
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "again", join, groups_broker, instance="a", session=30_000)
        await trio.sleep(0.05)
        assert "again" not in results  # not answered before the group is on disk
        stored.set()
    again = results["again"]
    assert (again.error_code, again.generation_id) == (ErrorCode.NONE, 1)
    broker = groups_broker.reopen()
    assert broker.groups.groups["g"].static_members == {"a": again.member_id}
    assert await heartbeat(broker, "g", 1, again.member_id, instance="a") == ErrorCode.NONE
    assert await heartbeat(broker, "g", 1, a.member_id, instance="a") == ErrorCode.FENCED_INSTANCE_ID
    assert (await sync(broker, "g", 1, again.member_id, instance="a")).assignment == b"A"


async def test_a_static_restart_that_cannot_be_stored_is_reverted(groups_broker, monkeypatch):
    """A failed write answers its error (Kafka's mapped append error) with no member id; the old id is the
    member again, and still leads."""
    a = await join(groups_broker, instance="a", version=9)
    await sync(groups_broker, "g", 1, a.member_id, {a.member_id: b"A"}, instance="a")

    async def disk_failure():
        raise OSError("fsync failed")

    monkeypatch.setattr(groups_broker, "wait_durable", disk_failure)
    again = await join(groups_broker, instance="a", version=9)  # the failed fsync: a storage error, NOT_COORDINATOR
    assert (again.error_code, again.member_id, again.generation_id) == (ErrorCode.NOT_COORDINATOR, "", 1)
    assert (again.leader, again.skip_assignment, again.members) == (a.member_id, False, [])
    group = groups_broker.groups.groups["g"]
    assert (list(group.members), group.static_members, group.leader_id) == ([a.member_id], {"a": a.member_id},
                                                                           a.member_id)  # fmt: skip
    assert await heartbeat(groups_broker, "g", 1, a.member_id, instance="a") == ErrorCode.NONE


async def test_a_static_restart_with_other_metadata_but_the_same_protocol_does_not_rebalance(groups_broker):
    """Kafka compares the protocol the group would select, not the metadata bytes: a restarted consumer's
    subscription names other owned partitions, and that is no reason to rebalance."""
    a = await join(groups_broker, instance="a", protos=protocols(("range", b"owned 0,1"), ("rr", b"x")))
    await sync(groups_broker, "g", 1, a.member_id, {a.member_id: b"A"}, instance="a")
    group = groups_broker.groups.groups["g"]
    again = await join(groups_broker, instance="a", protos=protocols(("range", b"owned none"), ("rr", b"x")))
    assert (again.error_code, again.generation_id, group.state) == (ErrorCode.NONE, 1, "Stable")
    assert group.members[again.member_id].metadata("range") == b"owned none"
    assert (await sync(groups_broker, "g", 1, again.member_id, instance="a")).assignment == b"A"
    other = await join(groups_broker, instance="a", protos=protocols(("rr", b"x"), ("range", b"y")))
    assert (other.generation_id, other.protocol_name) == (2, "rr")  # another protocol is selected: a rebalance
    assert (group.state, group.protocol_name) == ("CompletingRebalance", "rr")


async def test_an_instance_id_the_group_does_not_know_is_an_unknown_member(groups_broker):
    """Kafka's ``ClassicGroup.validateMember`` in Heartbeat, SyncGroup, JoinGroup and LeaveGroup: a member
    naming an instance id nobody holds is UNKNOWN_MEMBER_ID (the heartbeat was accepted); one held by another
    member is FENCED_INSTANCE_ID."""
    dyn = await join_new(groups_broker)
    await sync(groups_broker, "g", 1, dyn.member_id, {dyn.member_id: b""})
    assert await heartbeat(groups_broker, "g", 1, dyn.member_id, instance="nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await sync(groups_broker, "g", 1, dyn.member_id, instance="nobody")).error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID  # fmt: skip
    assert (await join(groups_broker, member_id=dyn.member_id, instance="nobody", version=9)).error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID  # fmt: skip
    identity = sub(13, "MemberIdentity")
    leave = req(13, group_id="g", members=[identity(member_id=dyn.member_id, group_instance_id="nobody")])
    assert [m.error_code for m in (await call(groups_broker, 13, 3, leave)).members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert await heartbeat(groups_broker, "g", 1, dyn.member_id) == ErrorCode.NONE  # still a member


async def test_a_sync_answered_rebalance_in_progress_restarts_the_members_session(groups_broker):
    """The leader leaving while b's SyncGroup waits: Kafka's ``prepareRebalance`` answers it (through
    ``propagateAssignment``) and restarts b's session from then, not from when its SyncGroup came."""
    results = {}
    a, b = await two_static_members_completing(groups_broker, results)
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "sync-b", sync, groups_broker, "g", 2, b.member_id, {}, instance="b")
        await trio.sleep(0.05)
        groups_broker.clock.now += 11_000  # longer than b's session, held back by its parked sync
        body = req(13, group_id="g", members=[sub(13, "MemberIdentity")(member_id=a.member_id, group_instance_id="a")])
        assert (await call(groups_broker, 13, 3, body)).error_code == ErrorCode.NONE
    assert results["sync-b"].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    tick(groups_broker, 9_999)
    assert b.member_id in groups_broker.groups.groups["g"].members  # removed at the first tick before
    tick(groups_broker, 1)
    assert b.member_id not in groups_broker.groups.groups["g"].members
