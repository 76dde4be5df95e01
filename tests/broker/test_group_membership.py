"""The group coordinator's membership rules through JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A real broker with a hand-driven clock (``_group_client``); requests go
through ``dispatch`` at the versions clients send. Concurrent joins run in a
trio nursery, each bounded by ``fail_after`` in ``call``.
"""

from __future__ import annotations

import uuid

import pytest
import trio

from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._group_client import (  # noqa: F401  (fixtures)
    clock, group_props, groups_broker, heartbeat, join, join_new, protocols, start_join, sync, tick,
)  # fmt: skip


async def stable_member(broker, group="g", **kw):
    joined = await join_new(broker, group, **kw)
    assert joined.error_code == ErrorCode.NONE
    synced = await sync(broker, group, joined.generation_id, joined.member_id, {joined.member_id: b"all"})
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"all"
    return joined


@pytest.mark.parametrize("version", range(0, 10))
async def test_single_member_joins_and_syncs_at_every_version(groups_broker, version):
    first = await join(groups_broker, version=version)
    if version >= 4:  # KIP-394: the id comes back with MEMBER_ID_REQUIRED
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("admin-test-")
        first = await join(groups_broker, member_id=first.member_id, version=version)
    assert first.error_code == ErrorCode.NONE
    assert (first.generation_id, first.leader, first.protocol_name) == (1, first.member_id, "range")
    assert [(m.member_id, m.metadata) for m in first.members] == [(first.member_id, b"sub")]
    if version >= 7:
        assert first.protocol_type == "consumer"
    synced = await sync(groups_broker, "g", 1, first.member_id, {first.member_id: b"p0"})
    assert synced.assignment == b"p0"
    assert await heartbeat(groups_broker, "g", 1, first.member_id) == ErrorCode.NONE


async def test_join_errors(groups_broker):
    assert (await join(groups_broker, group="")).error_code == ErrorCode.INVALID_GROUP_ID
    assert (await join(groups_broker, session=999)).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert (await join(groups_broker, session=1_800_001)).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert (await join(groups_broker, member_id="ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await join(groups_broker, ptype="")).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    member = await stable_member(groups_broker)
    assert (await join(groups_broker, ptype="connect")).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other = protocols(("roundrobin", b"x"))
    assert (await join(groups_broker, protos=other)).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await join(groups_broker, member_id="ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert await heartbeat(groups_broker, "g", member.generation_id, member.member_id) == ErrorCode.NONE


async def test_second_member_triggers_a_rebalance_and_each_gets_its_assignment(groups_broker):
    a = await stable_member(groups_broker)
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "b", join_new, groups_broker)
        await trio.sleep(0.05)
        assert await heartbeat(groups_broker, "g", 1, a.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
        assert (await sync(groups_broker, "g", 1, a.member_id)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        results["a"] = await join(groups_broker, member_id=a.member_id)
    ra, rb = results["a"], results["b"]
    assert ra.generation_id == rb.generation_id == 2 and ra.leader == rb.leader == a.member_id
    assert sorted(m.member_id for m in ra.members) == sorted([a.member_id, rb.member_id]) and rb.members == []
    synced = {}

    async def sync_b():
        synced["b"] = await sync(groups_broker, "g", 2, rb.member_id)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sync_b)
        await trio.sleep(0.05)
        assert "b" not in synced  # a follower waits for the leader's assignment
        synced["a"] = await sync(groups_broker, "g", 2, a.member_id, {a.member_id: b"A", rb.member_id: b"B"})
    assert (synced["a"].assignment, synced["b"].assignment) == (b"A", b"B")


async def test_sync_and_heartbeat_errors(groups_broker):
    a = await stable_member(groups_broker)
    assert (await sync(groups_broker, "nope", 1, a.member_id)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await sync(groups_broker, "g", 1, "ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await sync(groups_broker, "g", 7, a.member_id)).error_code == ErrorCode.ILLEGAL_GENERATION
    wrong = await sync(groups_broker, "g", 1, a.member_id, version=5, protocol_type="consumer", protocol_name="x")
    assert wrong.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    again = await sync(groups_broker, "g", 1, a.member_id, version=5, protocol_type="consumer", protocol_name="range")
    assert (again.error_code, again.assignment, again.protocol_name) == (ErrorCode.NONE, b"all", "range")
    assert await heartbeat(groups_broker, "g", 2, a.member_id) == ErrorCode.ILLEGAL_GENERATION
    assert await heartbeat(groups_broker, "g", 1, "ghost") == ErrorCode.UNKNOWN_MEMBER_ID
    assert await heartbeat(groups_broker, "nope", 1, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID
    assert await heartbeat(groups_broker, "", 1, a.member_id) == ErrorCode.INVALID_GROUP_ID


async def test_session_timeout_removes_a_silent_member(groups_broker):
    a = await stable_member(groups_broker, session=5000)
    tick(groups_broker, 4000)
    assert await heartbeat(groups_broker, "g", 1, a.member_id) == ErrorCode.NONE
    tick(groups_broker, 4000)  # 4 s after the last heartbeat: still in
    assert groups_broker.groups.groups["g"].state == "Stable"
    tick(groups_broker, 1001)
    group = groups_broker.groups.groups["g"]
    assert (group.state, group.members, group.generation_id) == ("Empty", {}, 2)
    assert await heartbeat(groups_broker, "g", 1, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID


async def test_rebalance_timeout_drops_members_that_do_not_rejoin(groups_broker):
    a = await stable_member(groups_broker, session=60_000, rebalance=3000)
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "b", join_new, groups_broker, session=60_000, rebalance=3000)
        await trio.sleep(0.05)
        tick(groups_broker, 2999)
        assert "b" not in results
        tick(groups_broker, 1)
    b = results["b"]
    assert (b.error_code, b.generation_id, b.leader, [m.member_id for m in b.members]) == (
        ErrorCode.NONE, 2, b.member_id, [b.member_id])  # fmt: skip
    assert await heartbeat(groups_broker, "g", 2, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("group_props", [{"group.initial.rebalance.delay.ms": "3000"}])
async def test_initial_rebalance_delay_waits_and_extends_for_newcomers(groups_broker):
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "a", join_new, groups_broker, rebalance=10_000)
        await trio.sleep(0.05)
        tick(groups_broker, 2000)
        start_join(nursery, results, "b", join_new, groups_broker, rebalance=10_000)
        await trio.sleep(0.05)
        tick(groups_broker, 1000)  # first delay over, a newcomer arrived: extended by 3 s
        assert results == {}
        tick(groups_broker, 3000)
    assert results["a"].generation_id == results["b"].generation_id == 1
    assert len(results["a"].members) + len(results["b"].members) == 2


async def test_protocol_chosen_by_votes_among_common_ones(groups_broker):
    results = {}

    def member(nursery, name, *protos):
        start_join(nursery, results, name, join, groups_broker, version=3, protos=protocols(*protos))

    async with trio.open_nursery() as nursery:
        member(nursery, "a", ("range", b"a1"), ("roundrobin", b"a2"))
        await trio.sleep(0.05)
    async with trio.open_nursery() as nursery:  # the group is stable; two newcomers force a rebalance
        member(nursery, "b", ("roundrobin", b"b2"), ("range", b"b1"), ("sticky", b"b3"))
        member(nursery, "c", ("roundrobin", b"c2"), ("range", b"c1"))
        await trio.sleep(0.05)
        results["a"] = await join(groups_broker, member_id=results["a"].member_id, version=3,
                                  protos=protocols(("range", b"a1"), ("roundrobin", b"a2")))  # fmt: skip
    assert {r.protocol_name for r in results.values()} == {"roundrobin"}
    leader = next(r for r in results.values() if r.members)
    assert sorted(m.metadata for m in leader.members) == [b"a2", b"b2", b"c2"]


@pytest.mark.parametrize("version", [1, 3, 5])
async def test_leave_group(groups_broker, version):
    a = await stable_member(groups_broker)
    if version < 3:
        body = req(13, group_id="g", member_id="ghost")
        assert (await call(groups_broker, 13, version, body)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        body = req(13, group_id="g", member_id=a.member_id)
        assert (await call(groups_broker, 13, version, body)).error_code == ErrorCode.NONE
    else:
        cls = sub(13, "MemberIdentity")
        body = req(13, group_id="g", members=[cls(member_id=a.member_id), cls(member_id="ghost")])
        resp = await call(groups_broker, 13, version, body)
        assert resp.error_code == ErrorCode.NONE
        assert [(m.member_id, m.error_code) for m in resp.members] == [
            (a.member_id, ErrorCode.NONE), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID)]  # fmt: skip
    group = groups_broker.groups.groups["g"]
    assert (group.state, group.generation_id) == ("Empty", 2)
    body = req(13, group_id="", member_id="x") if version < 3 else req(13, group_id="")
    assert (await call(groups_broker, 13, version, body)).error_code == ErrorCode.INVALID_GROUP_ID


async def test_static_member_rejoins_without_rebalance_and_fences_its_old_id(groups_broker):
    first = await join(groups_broker, version=5, instance="i-1")
    assert first.error_code == ErrorCode.NONE  # static members skip MEMBER_ID_REQUIRED
    assert (await sync(groups_broker, "g", 1, first.member_id, {first.member_id: b"A"}, instance="i-1")).assignment == b"A"
    again = await join(groups_broker, version=5, instance="i-1")
    assert again.error_code == ErrorCode.NONE and again.member_id != first.member_id
    assert again.generation_id == 1 and groups_broker.groups.groups["g"].state == "Stable"
    assert (await sync(groups_broker, "g", 1, again.member_id, instance="i-1")).assignment == b"A"
    assert await heartbeat(groups_broker, "g", 1, first.member_id, instance="i-1") == ErrorCode.FENCED_INSTANCE_ID
    assert await heartbeat(groups_broker, "g", 1, again.member_id, instance="i-1") == ErrorCode.NONE
    cls = sub(13, "MemberIdentity")
    resp = await call(groups_broker, 13, 4, req(13, group_id="g", members=[cls(member_id="", group_instance_id="i-1")]))
    assert [m.error_code for m in resp.members] == [ErrorCode.NONE]
    assert groups_broker.groups.groups["g"].members == {}


async def test_pending_member_ids_expire_after_the_session_timeout(groups_broker):
    first = await join(groups_broker, version=5, session=2000)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    tick(groups_broker, 2001)
    assert (await join(groups_broker, member_id=first.member_id)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_find_coordinator_every_version_creates_the_offsets_topic(groups_broker):
    answers = []

    async def find():
        answers.append(await call(groups_broker, 10, 2, req(10, key="g", key_type=0)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(find)
        await trio.sleep(0)
        api_versions = await call(groups_broker, 18, 0, req(18))  # served while the partitions are created
        assert api_versions.error_code == ErrorCode.NONE and not answers
    assert (answers[0].error_code, answers[0].node_id) == (ErrorCode.NONE, 3)
    for version in range(0, 4):
        resp = await call(groups_broker, 10, version, req(10, key="g", key_type=0))
        assert (resp.error_code, resp.node_id, resp.host, resp.port) == (ErrorCode.NONE, 3, "127.0.0.1", 9999)
    topic = groups_broker.topics.get("__consumer_offsets")
    assert topic.num_partitions == 5 and topic.internal
    assert groups_broker.topics.effective_config("__consumer_offsets").cleanup_policy == ("compact",)
    resp = await call(groups_broker, 10, 4, req(10, key_type=0, coordinator_keys=["a", "b"]))
    assert [(c.key, c.node_id, c.error_code) for c in resp.coordinators] == [("a", 3, 0), ("b", 3, 0)]
    txn = await call(groups_broker, 10, 3, req(10, key="t", key_type=1))
    assert (txn.error_code, txn.node_id, txn.port) == (ErrorCode.NONE, 3, 9999)
    assert groups_broker.topics.get("__transaction_state").num_partitions == 3
    bad = await call(groups_broker, 10, 4, req(10, key_type=7, coordinator_keys=["x"]))
    assert bad.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    assert bad.coordinators[0].error_message.startswith("This most likely occurs because of a request being malformed")


@pytest.mark.parametrize("version", [5, 6])
async def test_find_coordinator_v5_v6_batch_as_v4(groups_broker, version):
    resp = await call(groups_broker, 10, version, req(10, key_type=0, coordinator_keys=["a", "b"]))
    assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in resp.coordinators] == [
        ("a", 3, "127.0.0.1", 9999, 0), ("b", 3, "127.0.0.1", 9999, 0)]  # fmt: skip
    txn = await call(groups_broker, 10, version, req(10, key_type=1, coordinator_keys=["t"]))
    assert [(c.node_id, c.error_code) for c in txn.coordinators] == [(3, ErrorCode.NONE)]


@pytest.mark.parametrize("version", [4, 5, 6])
async def test_find_coordinator_share_keys_are_invalid_without_a_share_coordinator(groups_broker, version):
    """KIP-932's key type 2: Kafka's answer from a broker with no share coordinator (before v6, always)."""
    key = f"g:{uuid.uuid4()}:0"
    resp = await call(groups_broker, 10, version, req(10, key_type=2, coordinator_keys=[key]))
    assert [(c.key, c.node_id, c.host, c.port, c.error_code, c.error_message) for c in resp.coordinators] == [
        (key, -1, "", -1, ErrorCode.INVALID_REQUEST, None)]  # fmt: skip


@pytest.mark.parametrize("key_type", [2, 7])
async def test_find_coordinator_before_v4_an_invalid_key_type_is_kafkas_error_answer(groups_broker, key_type):
    resp = await call(groups_broker, 10, 3, req(10, key="g", key_type=key_type))
    assert (resp.error_code, resp.node_id, resp.host, resp.port) == (ErrorCode.INVALID_REQUEST, -1, "", -1)
    assert resp.error_message.startswith("This most likely occurs because of a request being malformed")


async def test_a_static_member_that_misses_the_rebalance_stays_until_its_session_ends(groups_broker):
    static = await join(groups_broker, version=5, instance="inst-a", session=20_000, rebalance=2000)
    await sync(groups_broker, "g", 1, static.member_id, {static.member_id: b"A"}, instance="inst-a")
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "d", join_new, groups_broker, session=20_000, rebalance=2000)
        await trio.sleep(0.05)
        tick(groups_broker, 2001)  # the rebalance times out without the static member
    dynamic = results["d"]
    assert dynamic.generation_id == 2
    assert sorted(m.group_instance_id or "" for m in dynamic.members) == ["", "inst-a"]
    assert await heartbeat(groups_broker, "g", 1, static.member_id, instance="inst-a") == ErrorCode.ILLEGAL_GENERATION
    tick(groups_broker, 18_000)  # 20 s after its last heartbeat: now it goes
    assert static.member_id not in groups_broker.groups.groups["g"].members


async def test_a_member_whose_sync_waited_for_a_slow_store_gets_a_whole_session_from_its_answer(groups_broker):
    """Kafka's ``propagateAssignment`` restarts the session of each member whose SyncGroup it answers; it used to
    run from the SyncGroup's arrival, so a store slower than the session ended it as the answer came."""
    b = groups_broker
    joined = await join_new(b, "g", session=10_000, rebalance=10_000)
    write_group = b.groups.store.write_group

    async def slow(group):
        b.clock.now += 11_000  # the store takes longer than the session timeout
        return await write_group(group)

    b.groups.store.write_group = slow
    synced = await sync(b, "g", joined.generation_id, joined.member_id, {joined.member_id: b"a"})
    assert synced.error_code == ErrorCode.NONE
    tick(b, 9_999)
    assert joined.member_id in b.groups.groups["g"].members  # removed at the first tick before
    tick(b, 1)
    assert b.groups.groups["g"].members == {}
