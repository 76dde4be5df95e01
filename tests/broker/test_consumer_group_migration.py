"""KIP-848 online migration (``group.consumer.migration.policy``): classic groups upgraded, consumer groups downgraded.

A real broker with a hand-driven clock (``groups_broker``): two classic
members (JoinGroup/SyncGroup through ``dispatch``) share the 4 partitions of
``t``; a ConsumerGroupHeartbeat member joins and the group becomes a
consumer group whose classic members are served through JoinGroup,
SyncGroup, Heartbeat, LeaveGroup and OffsetCommit; the last consumer member
leaving turns it back into a classic group. Each refusal is checked with
Kafka's error and message, and the state with a restart (``reopen``).
"""

from __future__ import annotations

import pytest
import trio

from broker.config import BrokerConfig, ConfigError
from broker.groups import consumer_protocol as cp
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.group import Group
from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._consumer_group_client import describe, heartbeat, make_topic, parts, ready
from ._group_client import clock, commit, group_props, groups_broker, join, join_new, protocols, sync  # noqa: F401
from ._group_client import heartbeat as classic_heartbeat

T_PARTS = 4


def subscribed(owned=(), version=1):
    return protocols(("range", cp.encode_subscription(["t"], list(owned), version)))


def assignment(*ps):
    return cp.encode_assignment([("t", list(ps))] if ps else [], 1)


def assigned(synced) -> list[int]:
    got = cp.parse_assignment(synced.assignment).partitions
    return sorted(p for _t, ps in got for p in ps)


async def tick(broker, advance_ms=0):
    broker.clock.now += advance_ms
    broker.groups.coordinator.tick()
    broker.groups.consumer.tick()
    await broker.groups.store_consumer_groups()


@pytest.fixture
async def mig(groups_broker):
    await ready(groups_broker)
    groups_broker.tid = await make_topic(groups_broker, "t", T_PARTS)
    return groups_broker


async def classic_pair(b, group="cg", ptype="consumer", a_assignment=None, b_assignment=None):
    """Two classic members, stable at generation 2, a leader with [0, 1], the other with [2, 3]."""
    first = await join_new(b, group, protos=subscribed(), ptype=ptype)
    await sync(b, group, first.generation_id, first.member_id, {first.member_id: assignment(0, 1, 2, 3)})
    results = {}
    async with trio.open_nursery() as nursery:
        async def second():
            results["b"] = await join_new(b, group, protos=subscribed(), ptype=ptype)

        nursery.start_soon(second)
        await trio.sleep(0.05)
        results["a"] = await join(b, group, first.member_id, protos=subscribed(), ptype=ptype)
    a, other = results["a"], results["b"]
    assert a.generation_id == other.generation_id == 2
    given = {a.member_id: a_assignment or assignment(0, 1), other.member_id: b_assignment or assignment(2, 3)}
    assert (await sync(b, group, 2, a.member_id, given)).error_code == 0
    assert (await sync(b, group, 2, other.member_id)).error_code == 0
    return a.member_id, other.member_id


async def rejoin(b, member_id, owned, group="cg"):
    joined = await join(b, group, member_id, protos=subscribed([("t", owned)]))
    assert joined.error_code == 0, joined
    synced = await sync(b, group, joined.generation_id, member_id)
    assert synced.error_code == 0, synced
    return joined.generation_id, assigned(synced)


async def upgraded(b):
    a, other = await classic_pair(b)
    c = await heartbeat(b, "c")
    assert c.error_code == 0, c
    return a, other, c


async def test_upgrade_then_partitions_move_only_after_revocation(mig):
    a, other, c = await upgraded(mig)
    group = mig.groups.groups["cg"]
    assert isinstance(group, ConsumerGroup) and group.group_epoch == 3
    assert parts(c.assignment) == {}  # partition 3 is still the classic member's
    (described,) = await describe(mig, "cg")
    assert {m.member_id: (m.member_type, m.member_epoch) for m in described.members} == {
        a: (0, 2), other: (0, 2), "c": (1, 3)}
    assert await classic_heartbeat(mig, "cg", 2, a) == ErrorCode.REBALANCE_IN_PROGRESS
    assert await rejoin(mig, a, [0, 1]) == (3, [0, 1])
    assert await classic_heartbeat(mig, "cg", 3, a) == ErrorCode.NONE
    assert await classic_heartbeat(mig, "cg", 2, other) == ErrorCode.REBALANCE_IN_PROGRESS
    assert await rejoin(mig, other, [2, 3]) == (2, [2])  # revoking 3: still at epoch 2
    still = await heartbeat(mig, "c", 3, topics=None, owned_partitions=[])
    assert parts(still.assignment) is None  # nothing new for c yet
    assert await classic_heartbeat(mig, "cg", 2, other) == ErrorCode.REBALANCE_IN_PROGRESS
    assert await rejoin(mig, other, [2]) == (3, [2])
    got = await heartbeat(mig, "c", 3, topics=None, owned_partitions=[])
    assert parts(got.assignment) == {mig.tid: [3]}
    (described,) = await describe(mig, "cg")
    assert described.group_state == "Stable"
    assert (await commit(mig, "cg", {("t", 0): 5}, 3, a)) == {("t", 0): ErrorCode.NONE}
    # KIP-1251 for a classic member too: its old generation commits partitions it has held since then (0 came
    # with the upgrade at 2); a partition not its own, an older or a newer epoch is ILLEGAL_GENERATION
    assert (await commit(mig, "cg", {("t", 0): 5}, 2, a)) == {("t", 0): ErrorCode.NONE}
    for epoch, p in ((2, 3), (1, 0), (4, 0)):
        assert (await commit(mig, "cg", {("t", p): 5}, epoch, a)) == {("t", p): ErrorCode.ILLEGAL_GENERATION}
    (listed,) = (await call(mig, 16, 5, req(16, states_filter=[], types_filter=[]))).groups
    assert (listed.protocol_type, listed.group_type) == ("consumer", "consumer")
    (old,) = (await call(mig, 15, 5, req(15, groups=["cg"]))).groups  # no classic group: Dead (an error from v6)
    assert (old.error_code, old.group_state, old.members) == (0, "Dead", [])


async def test_restart_keeps_the_mixed_group(mig):
    a, other, _c = await upgraded(mig)
    broker = mig.reopen()
    group = broker.groups.groups["cg"]
    assert isinstance(group, ConsumerGroup)
    assert {m.member_id: m.uses_classic for m in group.members.values()} == {a: True, other: True, "c": False}
    assert group.members[a].classic.session_timeout_ms == 10_000
    assert group.members[a].classic.protocols[0][0] == "range"
    assert await classic_heartbeat(broker, "cg", 2, a) == ErrorCode.REBALANCE_IN_PROGRESS
    assert await rejoin(broker, a, [0, 1]) == (3, [0, 1])


async def test_downgrade_when_the_last_consumer_member_leaves(mig):
    a, other, _c = await upgraded(mig)
    assert await rejoin(mig, a, [0, 1]) == (3, [0, 1])
    left = await heartbeat(mig, "c", -1, topics=None, rebalance=-1, owned_partitions=None)
    assert left.error_code == 0
    group = mig.groups.groups["cg"]
    assert isinstance(group, Group) and group.state == "PreparingRebalance" and group.generation_id == 3
    assert await classic_heartbeat(mig, "cg", 3, a) == ErrorCode.REBALANCE_IN_PROGRESS
    results = {}
    async with trio.open_nursery() as nursery:
        async def rejoin_other():
            results["b"] = await join(mig, "cg", other, protos=subscribed())

        nursery.start_soon(rejoin_other)
        results["a"] = await join(mig, "cg", a, protos=subscribed())
    assert results["a"].generation_id == results["b"].generation_id == 4
    (described,) = (await call(mig, 15, 5, req(15, groups=["cg"]))).groups
    assert (described.error_code, described.protocol_type, len(described.members)) == (0, "consumer", 2)
    broker = mig.reopen()
    restored = broker.groups.groups["cg"]
    assert isinstance(restored, Group) and sorted(restored.members) == sorted([a, other])


@pytest.mark.parametrize("group_props", [{"group.consumer.migration.policy": p}
                                         for p in ("bidirectional", "UPGRADE", "Downgrade", "disabled")])
async def test_each_policy(mig, group_props):
    policy = group_props["group.consumer.migration.policy"].lower()
    await classic_pair(mig)
    c = await heartbeat(mig, "c")
    if policy in ("bidirectional", "upgrade"):
        assert c.error_code == 0
    else:
        assert (c.error_code, c.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Cannot upgrade classic group cg "
                                                   "to consumer group because online upgrade is disabled.")
    # a classic member joins a consumer group with members whatever the policy; leaving downgrades or not
    await heartbeat(mig, "d", group="mixed")
    joined = await join_new(mig, "mixed", protos=subscribed(), version=7)
    assert (joined.error_code, joined.protocol_type, joined.protocol_name) == (0, "consumer", "range")
    await heartbeat(mig, "d", -1, group="mixed", topics=None, rebalance=-1, owned_partitions=None)
    group = mig.groups.groups["mixed"]
    assert isinstance(group, Group if policy in ("bidirectional", "downgrade") else ConsumerGroup)


def test_policy_config():
    props = {"node.id": "1", "log.dirs": "/tmp/x"}
    assert BrokerConfig.from_props(props).group_consumer_migration_policy == "bidirectional"
    assert BrokerConfig.from_props({**props, "group.consumer.migration.policy": "UpGrade"}
                                   ).group_consumer_migration_policy == "upgrade"  # fmt: skip
    with pytest.raises(ConfigError, match=r"String must be one of \(case insensitive\): bidirectional, upgrade, "
                       r"downgrade, disabled"):  # fmt: skip
        BrokerConfig.from_props({**props, "group.consumer.migration.policy": "sideways"})


async def test_upgrade_refusals(mig):
    await classic_pair(mig, "connect-group", ptype="connect")
    refused = await heartbeat(mig, "c", group="connect-group")
    assert (refused.error_code, refused.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Cannot upgrade classic "
                                                           "group connect-group to consumer group because the group "
                                                           "does not use the consumer embedded protocol.")  # fmt: skip
    custom = cp.encode_assignment([("t", [0, 1])], 1)[:-4] + b"\x00\x00\x00\x01x"  # with user data
    await classic_pair(mig, "custom", a_assignment=custom)
    refused = await heartbeat(mig, "c", group="custom")
    assert refused.error_message == (
        "Cannot upgrade classic group custom to consumer group because an unsupported custom assignor is in use. "
        "Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")
    assert isinstance(mig.groups.groups["custom"], Group)  # untouched


@pytest.mark.parametrize("group_props", [{"group.consumer.max.size": "1"}])
async def test_upgrade_refused_above_the_consumer_group_size(mig, group_props):
    await classic_pair(mig)
    refused = await heartbeat(mig, "c")
    assert (refused.error_code, refused.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Cannot upgrade classic "
                                                           "group cg to consumer group because the group size "
                                                           "exceeds the consumer group maximum size.")  # fmt: skip


async def test_classic_member_errors_in_a_consumer_group(mig):
    a, other, _c = await upgraded(mig)
    first = await join(mig, "cg", protos=subscribed())
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and len(first.member_id) == 22
    foreign = await join(mig, "cg", first.member_id, protos=protocols(("roundrobin", b"x")))
    assert foreign.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert (await sync(mig, "cg", 2, "ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await sync(mig, "cg", 3, "c")).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # a consumer-protocol member
    assert (await sync(mig, "cg", 7, a)).error_code == ErrorCode.ILLEGAL_GENERATION
    assert (await sync(mig, "cg", 2, a)).error_code == ErrorCode.REBALANCE_IN_PROGRESS  # behind the group epoch
    wrong = await sync(mig, "cg", 2, a, version=5, protocol_type="consumer", protocol_name="roundrobin")
    assert wrong.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert await classic_heartbeat(mig, "cg", 9, a) == ErrorCode.ILLEGAL_GENERATION
    assert await classic_heartbeat(mig, "cg", 2, "ghost") == ErrorCode.UNKNOWN_MEMBER_ID
    assert await classic_heartbeat(mig, "cg", 2, a, instance="i-x") == ErrorCode.UNKNOWN_MEMBER_ID
    identity = sub(13, "MemberIdentity")
    body = req(13, group_id="cg", members=[identity(member_id="ghost"), identity(member_id=other)])
    resp = await call(mig, 13, 4, body)
    assert [m.error_code for m in resp.members] == [ErrorCode.UNKNOWN_MEMBER_ID, 0]
    assert other not in mig.groups.groups["cg"].members


async def test_unreadable_subscription_of_a_static_rejoin_changes_nothing(mig):
    await upgraded(mig)
    static = await join(mig, "cg", protos=subscribed(), instance="i-1")
    assert static.error_code == 0, static
    group = mig.groups.groups["cg"]
    before = (dict(group.members), dict(group.target), group.group_epoch, dict(group.session_deadlines))
    mig.groups.consumer.dirty.clear()
    bad = await join(mig, "cg", protos=protocols(("range", b"x")), instance="i-1")  # would replace the member
    assert bad.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert (dict(group.members), dict(group.target), group.group_epoch, dict(group.session_deadlines)) == before
    assert static.member_id in group.members and not mig.groups.consumer.dirty


@pytest.mark.parametrize("group_props", [{"group.consumer.max.size": "3"}])
async def test_classic_join_refused_when_the_group_is_full(mig, group_props):
    await upgraded(mig)
    full = await join(mig, "cg", protos=subscribed())
    assert full.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


async def test_classic_members_fenced_by_their_timers(mig):
    a, other, _c = await upgraded(mig)
    assert await classic_heartbeat(mig, "cg", 2, a) == ErrorCode.REBALANCE_IN_PROGRESS  # join timeout armed
    joined = await join(mig, "cg", other, protos=subscribed([("t", [2])]))  # joined, never syncs
    assert joined.error_code == 0
    await tick(mig, 9_999)
    assert a in mig.groups.groups["cg"].members and other in mig.groups.groups["cg"].members
    await tick(mig, 1)  # the rebalance timeout (10 s) of both passed
    assert a not in mig.groups.groups["cg"].members and other not in mig.groups.groups["cg"].members
    late = await join_new(mig, "cg", protos=subscribed(), session=5_000)
    await tick(mig, 5_000)  # its classic session timeout, not the consumer group's 45 s
    assert late.member_id not in mig.groups.groups["cg"].members


async def test_upgrade_during_a_rebalance_tells_parked_joins_to_rejoin(mig):
    a, other = await classic_pair(mig)
    results = {}
    async with trio.open_nursery() as nursery:
        async def third():
            results["c"] = await join_new(mig, "cg", protos=subscribed())

        nursery.start_soon(third)
        await trio.sleep(0.05)
        assert mig.groups.groups["cg"].state == "PreparingRebalance"
        assert (await heartbeat(mig, "c")).error_code == 0
    assert results["c"].error_code == ErrorCode.REBALANCE_IN_PROGRESS
    group = mig.groups.groups["cg"]
    assert isinstance(group, ConsumerGroup) and len(group.members) == 4
    assert group.members[a].assigned == {mig.tid: frozenset({0, 1})} and group.members[other].member_epoch == 2


async def test_downgrade_when_the_consumer_member_session_expires(mig):
    a, other, _c = await upgraded(mig)
    assert await rejoin(mig, a, [0, 1]) == (3, [0, 1])
    assert await rejoin(mig, other, [2, 3]) == (2, [2])
    assert await rejoin(mig, other, [2]) == (3, [2])
    for _ in range(8):  # the classic members heartbeat every 5 s; the consumer member is silent
        await tick(mig, 5_000)
        assert [await classic_heartbeat(mig, "cg", 3, m) for m in (a, other)] == [0, 0]
    assert isinstance(mig.groups.groups["cg"], ConsumerGroup)
    await tick(mig, 5_000)  # 45 s: its session expired
    group = mig.groups.groups["cg"]
    assert isinstance(group, Group) and group.state == "PreparingRebalance"
    assert [cp.parse_assignment(m.assignment).partitions for m in group.members.values()] == [
        [("t", [0, 1])], [("t", [2])]]  # the consumer group's target assignment (3 was the fenced member's)
    assert await classic_heartbeat(mig, "cg", 3, a) == ErrorCode.REBALANCE_IN_PROGRESS


async def test_a_classic_member_heartbeating_with_the_consumer_protocol_switches_to_it(mig):
    """Kafka drops the member's classic metadata: the consumer group's session timeout is its own from then."""
    a, _other, _c = await upgraded(mig)
    owned_now = [sub(68, "TopicPartitions")(topic_id=mig.tid, partitions=[0, 1])]
    switched = await heartbeat(mig, a, 2, topics=["t"], owned_partitions=owned_now)
    assert (switched.error_code, switched.member_epoch) == (0, 3)
    assert not mig.groups.groups["cg"].members[a].uses_classic
    await tick(mig, 10_000)  # its classic session timeout: no longer the one that counts
    assert a in mig.groups.groups["cg"].members
    assert not mig.reopen().groups.groups["cg"].members[a].uses_classic


async def test_a_classic_static_member_restarted_with_the_consumer_protocol_takes_its_place(mig):
    """Kafka checks UNRELEASED_INSTANCE_ID only between two consumer-protocol members: a classic static member
    (which sends no LeaveGroup when it stops) restarted with group.protocol=consumer replaces it at once."""
    await upgraded(mig)
    static = await join(mig, "cg", protos=subscribed(), instance="i-1")
    assert static.error_code == 0, static
    restarted = await heartbeat(mig, "new-i-1", instance="i-1")
    assert restarted.error_code == 0, restarted
    members = mig.groups.groups["cg"].members
    assert static.member_id not in members and not members["new-i-1"].uses_classic
    taken = await heartbeat(mig, "other-i-1", instance="i-1")  # now a consumer-protocol holder: refused
    assert taken.error_code == ErrorCode.UNRELEASED_INSTANCE_ID



@pytest.mark.parametrize("limit", [1, 2])
async def test_no_downgrade_when_more_classic_members_stay_than_group_max_size(mig, group_props, limit):
    a, other, _c = await upgraded(mig)
    group_props["group.max.size"] = str(limit)  # lowered, then the broker restarted
    broker = mig.reopen()
    left = await heartbeat(broker, "c", -1, topics=None, rebalance=-1, owned_partitions=None)
    assert left.error_code == 0
    group = broker.groups.groups["cg"]
    assert sorted(group.members) == sorted([a, other])  # c left
    assert isinstance(group, ConsumerGroup if limit == 1 else Group)  # 2 classic members stay
