"""``group.max.size``: how many members a classic group takes (Kafka's ``acceptJoiningMember``).

A real broker with a hand-driven clock (``_group_client``). Each case Kafka
tells apart: a newcomer (dynamic, KIP-394 pending or static) refused by a
full Stable group, a member of it accepted; during a rebalance the count is
of the members that rejoined, so the last to rejoin (even a member of the
group) are refused and leave it; a group loaded above a lowered limit
rebalances. A refusal is GROUP_MAX_SIZE_REACHED with no member id.
"""

from __future__ import annotations

import pytest
import trio

from broker.config import BrokerConfig, ConfigError
from broker.env_config import env_overrides
from protocol import ErrorCode

from ._group_client import (  # noqa: F401  (fixtures)
    clock, group_props, groups_broker, heartbeat, join, join_new, protocols, start_join, sync, tick,
)  # fmt: skip

FULL = ErrorCode.GROUP_MAX_SIZE_REACHED


def test_the_key_kafkas_default_and_bound():
    base = {"node.id": "1", "log.dirs": "/tmp/x"}
    assert BrokerConfig.from_props(base).group_max_size == 2**31 - 1
    from_env = env_overrides({"KAFKA_GROUP_MAX_SIZE": "1"})
    assert from_env == {"group.max.size": "1"} and BrokerConfig.from_props({**base, **from_env}).group_max_size == 1
    with pytest.raises(ConfigError, match="group.max.size"):
        BrokerConfig.from_props({**base, "group.max.size": "0"})


async def stable(broker, **kw):
    joined = await join_new(broker, **kw)
    assert joined.error_code == ErrorCode.NONE
    synced = await sync(broker, "g", joined.generation_id, joined.member_id, {joined.member_id: b"A"},
                        instance=kw.get("instance"))  # fmt: skip
    assert synced.error_code == ErrorCode.NONE
    return joined


@pytest.mark.parametrize("group_props", [{"group.max.size": "1"}])
@pytest.mark.parametrize("version", [3, 5])
async def test_a_full_stable_group_refuses_a_newcomer_and_keeps_its_member(groups_broker, version):
    a = await stable(groups_broker)
    refused = await join(groups_broker, version=version)
    assert (refused.error_code, refused.member_id) == (FULL, "")
    group = groups_broker.groups.groups["g"]
    assert (group.state, list(group.members), group.pending_members) == ("Stable", [a.member_id], {})
    assert await heartbeat(groups_broker, "g", 1, a.member_id) == ErrorCode.NONE
    again = await join(groups_broker, member_id=a.member_id)  # a member is taken (the leader: a rebalance)
    assert (again.error_code, again.generation_id) == (ErrorCode.NONE, 2)


@pytest.mark.parametrize("group_props", [{"group.max.size": "1"}])
async def test_static_newcomers_are_refused_even_a_known_instance_without_its_member_id(groups_broker):
    a = await stable(groups_broker, instance="i-1")
    assert (await join(groups_broker, instance="i-2")).error_code == FULL
    # Kafka counts by member id: the known instance restarting with none is a newcomer to a full group
    assert (await join(groups_broker, instance="i-1")).error_code == FULL
    assert list(groups_broker.groups.groups["g"].members) == [a.member_id]
    again = await join(groups_broker, member_id=a.member_id, instance="i-1")
    assert (again.error_code, again.generation_id) == (ErrorCode.NONE, 2)


@pytest.mark.parametrize("group_props", [{"group.max.size": "2"}])
async def test_while_rebalancing_the_last_to_rejoin_is_refused_and_leaves_the_group(groups_broker):
    a = await stable(groups_broker, rebalance=5000)
    pending = [await join(groups_broker, rebalance=5000) for _ in range(2)]  # ids given out: not counted
    assert [p.error_code for p in pending] == [ErrorCode.MEMBER_ID_REQUIRED] * 2
    results = {}
    async with trio.open_nursery() as nursery:
        for name, p in zip("bc", pending):
            start_join(nursery, results, name, join, groups_broker, member_id=p.member_id, rebalance=5000)
            await trio.sleep(0.05)
        late = await join(groups_broker, member_id=a.member_id, rebalance=5000)  # 2 rejoined already
        assert (late.error_code, late.member_id) == (FULL, "")
        assert a.member_id not in groups_broker.groups.groups["g"].members
        tick(groups_broker, 5000)  # the rebalance completes at its timeout, as Kafka's
    b, c = results["b"], results["c"]
    assert (b.error_code, c.error_code, b.generation_id, b.leader) == (0, 0, 2, b.member_id)
    assert sorted(m.member_id for m in b.members) == sorted(p.member_id for p in pending)
    assert await heartbeat(groups_broker, "g", 1, a.member_id) == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("group_props", [{"group.max.size": "2"}])
async def test_while_rebalancing_a_member_already_rejoined_is_taken_and_newcomers_refused(groups_broker):
    a = await stable(groups_broker)
    pending = await join(groups_broker)
    assert pending.error_code == ErrorCode.MEMBER_ID_REQUIRED
    results, other = {}, protocols(("range", b"other"))
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "b", join, groups_broker, version=3)  # a newcomer: a rebalance
        await trio.sleep(0.05)
        start_join(nursery, results, "first", join, groups_broker, member_id=a.member_id, protos=other)
        await trio.sleep(0.05)
        assert groups_broker.groups.groups["g"].state == "PreparingRebalance"  # the pending id is awaited
        assert (await join(groups_broker, member_id=pending.member_id)).error_code == FULL  # 2 rejoined
        assert groups_broker.groups.groups["g"].pending_members == {}  # the pending id is dropped
        assert (await join(groups_broker, instance="i-9")).error_code == FULL
        assert (await join(groups_broker, version=3)).error_code == FULL
        results["second"] = await join(groups_broker, member_id=a.member_id, protos=other)
    assert results["first"].error_code == ErrorCode.REBALANCE_IN_PROGRESS  # replaced by the second join
    assert (results["second"].error_code, results["second"].generation_id) == (ErrorCode.NONE, 2)
    assert sorted(m.member_id for m in results["second"].members) == sorted([a.member_id, results["b"].member_id])
    # the size is checked before the member id: an unknown id to a full group is refused as full
    assert (await join(groups_broker, member_id=pending.member_id)).error_code == FULL


@pytest.mark.parametrize("group_props", [{"group.max.size": "2"}])
async def test_an_empty_group_takes_every_pending_member_up_to_the_limit(groups_broker):
    pending = [await join(groups_broker) for _ in range(3)]
    assert [p.error_code for p in pending] == [ErrorCode.MEMBER_ID_REQUIRED] * 3
    results = {}
    async with trio.open_nursery() as nursery:
        for name, p in zip("abc", pending):
            start_join(nursery, results, name, join, groups_broker, member_id=p.member_id)
            await trio.sleep(0.05)
        tick(groups_broker)
        tick(groups_broker)  # the (zero) initial delay, once extended for the second member
    assert [results[n].error_code for n in "abc"] == [ErrorCode.NONE, ErrorCode.NONE, FULL]
    assert results["a"].generation_id == 1 and len(results["a"].members) == 2


async def test_a_group_loaded_above_a_lowered_limit_rebalances_and_refuses_the_last(groups_broker, group_props):
    a = await stable(groups_broker, rebalance=4000)
    results = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "b", join_new, groups_broker, rebalance=4000)
        await trio.sleep(0.05)
        results["a"] = await join(groups_broker, member_id=a.member_id, rebalance=4000)
    b = results["b"]
    assigned = {a.member_id: b"A", b.member_id: b"B"}
    assert (await sync(groups_broker, "g", 2, a.member_id, assigned)).error_code == ErrorCode.NONE
    group_props["group.max.size"] = "1"
    broker = groups_broker.reopen()
    group = broker.groups.groups["g"]
    assert (group.state, sorted(group.members)) == ("PreparingRebalance", sorted(assigned))
    assert await heartbeat(broker, "g", 2, b.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, rejoined, "a", join, broker, member_id=a.member_id, rebalance=4000)
        await trio.sleep(0.05)
        assert (await join(broker, member_id=b.member_id, rebalance=4000)).error_code == FULL
        tick(broker, 4000)
    assert (rejoined["a"].generation_id, [m.member_id for m in rejoined["a"].members]) == (3, [a.member_id])
    assert await heartbeat(broker, "g", 3, b.member_id) == ErrorCode.UNKNOWN_MEMBER_ID
