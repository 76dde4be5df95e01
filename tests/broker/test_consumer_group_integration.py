"""KIP-848 consumer groups in the other group APIs, and across timers.

OffsetCommit v9+ and OffsetFetch v9+ check the member id and epoch of a
consumer group (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION
before v9); ListGroups v5 reports type "consumer" and the KIP-848 states;
DescribeGroups answers as for no classic group; DeleteGroups deletes only an
empty one; the session and rebalance timeouts fence members on the
coordinator's clock (restarts: ``test_consumer_group_persistence``).
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._consumer_group_client import describe, heartbeat, make_topic, owned, parts, ready
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)


async def setup(broker):
    tid = await make_topic(broker, "t", 4)
    await ready(broker)
    return tid


async def commit(broker, member_id, epoch, version=9, group="cg", offset=5):
    Topic = sub(8, "OffsetCommitRequestTopic")
    topics = [Topic(name="t", topic_id=broker.topics.get("t").topic_id,
                    partitions=[Topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]
    body = req(8, group_id=group, generation_id_or_member_epoch=epoch, member_id=member_id, topics=topics)
    return (await call(broker, 8, version, body)).topics[0].partitions[0].error_code


async def fetch(broker, member_id, epoch, version=9, group="cg"):
    Group = sub(9, "OffsetFetchRequestGroup")
    topics = [Group.OffsetFetchRequestTopics(name="t", topic_id=broker.topics.get("t").topic_id, partition_indexes=[0])]
    body = req(9, groups=[Group(group_id=group, member_id=member_id, member_epoch=epoch, topics=topics)])
    g = (await call(broker, 9, version, body)).groups[0]
    return g.error_code, [p.committed_offset for t in g.topics for p in t.partitions]


async def test_offset_commit_and_fetch_check_member_and_epoch(groups_broker):
    await setup(groups_broker)
    m = await heartbeat(groups_broker, "m")
    assert await commit(groups_broker, "m", 1) == ErrorCode.NONE
    assert await commit(groups_broker, "m", 1, version=10) == ErrorCode.NONE
    assert await commit(groups_broker, "m", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert await commit(groups_broker, "ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert await commit(groups_broker, "", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # the group has members
    assert await commit(groups_broker, "m", 1, version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert await fetch(groups_broker, "m", 1) == (ErrorCode.NONE, [5])
    assert await fetch(groups_broker, "m", 7) == (ErrorCode.STALE_MEMBER_EPOCH, [])
    assert await fetch(groups_broker, "ghost", 1) == (ErrorCode.UNKNOWN_MEMBER_ID, [])
    assert await fetch(groups_broker, None, -1) == (ErrorCode.NONE, [5])  # an admin's fetch
    assert await fetch(groups_broker, None, -1, version=8) == (ErrorCode.NONE, [5])
    await heartbeat(groups_broker, "m", -1, owned_partitions=owned(m.assignment))
    assert await commit(groups_broker, "", -1, offset=7) == ErrorCode.NONE  # empty: anyone may commit


async def test_list_describe_and_delete(groups_broker):
    await setup(groups_broker)
    m = await heartbeat(groups_broker, "m")
    listed = await call(groups_broker, 16, 5, req(16, states_filter=[], types_filter=["consumer"]))
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
        ("cg", "consumer", "Stable", "consumer")]
    assert (await call(groups_broker, 16, 5, req(16, types_filter=["classic"]))).groups == []
    assert (await call(groups_broker, 16, 5, req(16, states_filter=["reconciling"]))).groups == []
    not_classic = "Group cg is not a classic group."
    for version, error, message in ((5, 0, None), (6, ErrorCode.GROUP_ID_NOT_FOUND, not_classic)):
        (g,) = (await call(groups_broker, 15, version, req(15, groups=["cg"]))).groups
        assert (g.error_code, g.group_state, g.protocol_type, g.members) == (error, "Dead", "", [])
        assert version < 6 or g.error_message == message
    summary = groups_broker.groups.describe("cg")  # the group layer says it; the handler sends it from v6
    assert (summary.error, summary.error_message, summary.state) == (ErrorCode.GROUP_ID_NOT_FOUND, not_classic, "Dead")
    deleted = await call(groups_broker, 42, 2, req(42, groups_names=["cg"]))
    assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    await heartbeat(groups_broker, "m", -1, owned_partitions=owned(m.assignment))
    (g,) = await describe(groups_broker, "cg")
    assert (g.group_state, g.group_epoch, g.members) == ("Empty", 2, [])
    deleted = await call(groups_broker, 42, 2, req(42, groups_names=["cg"]))
    assert deleted.results[0].error_code == ErrorCode.NONE
    (g,) = await describe(groups_broker, "cg")
    assert g.error_code == ErrorCode.GROUP_ID_NOT_FOUND


async def test_session_timeout_fences_a_silent_member(groups_broker):
    tid = await setup(groups_broker)
    a = await heartbeat(groups_broker, "a")
    await heartbeat(groups_broker, "b")
    groups_broker.clock.now += 44_999
    a = await heartbeat(groups_broker, "a", 1, owned_partitions=owned(a.assignment))  # a's session restarts
    groups_broker.clock.now += 1
    groups_broker.groups.consumer.tick()  # b's 45 s are up
    (g,) = await describe(groups_broker, "cg")
    assert [m.member_id for m in g.members] == ["a"] and g.group_epoch == 3
    a = await heartbeat(groups_broker, "a", 1, owned_partitions=owned(a.assignment))
    assert (a.member_epoch, parts(a.assignment)) == (3, {tid: [0, 1, 2, 3]})


async def test_rebalance_timeout_fences_a_member_that_does_not_revoke(groups_broker):
    await setup(groups_broker)
    a = await heartbeat(groups_broker, "a", rebalance=5_000)
    await heartbeat(groups_broker, "b")
    a = await heartbeat(groups_broker, "a", 1, owned_partitions=owned(a.assignment))
    assert len(a.assignment.topic_partitions[0].partitions) == 2  # asked to revoke two
    groups_broker.clock.now += 4_999
    (g,) = await describe(groups_broker, "cg")
    b_target = next(m.target_assignment for m in g.members if m.member_id == "b")
    still = await heartbeat(groups_broker, "a", 1, owned_partitions=[*owned(b_target), *owned(a.assignment)])
    assert still.error_code == 0
    groups_broker.clock.now += 1
    groups_broker.groups.consumer.tick()
    late = await heartbeat(groups_broker, "a", 1, owned_partitions=[])
    assert late.error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_metrics_count_consumer_groups_by_state(groups_broker):
    await setup(groups_broker)
    await heartbeat(groups_broker, "m")
    gauges = {name: samples for name, _doc, _labels, samples in groups_broker.groups.state_metrics()}
    assert dict((tuple(k), v) for k, v in gauges["kafka_server_group_coordinator_metrics_group_count"]) == {
        ("classic",): 0.0, ("consumer",): 1.0}
    by_state = dict((k[0], v) for k, v in gauges["kafka_server_group_coordinator_metrics_consumer_group_count"])
    assert by_state == {"empty": 0.0, "assigning": 0.0, "reconciling": 0.0, "stable": 1.0, "dead": 0.0}


AUTHZ = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "super.users": "User:admin"}  # fmt: skip


@pytest.mark.parametrize("group_props", [AUTHZ])
async def test_authorization(groups_broker):
    from ._authz import Op, Res, grant, user

    admin, bob = user("admin"), user("bob")
    await make_topic(groups_broker, "t", 4, connection=admin)
    await make_topic(groups_broker, "secret", 1, connection=admin)
    await ready(groups_broker)
    denied = await heartbeat(groups_broker, "b", connection=bob)
    assert (denied.error_code, denied.error_message) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "cg")
    hidden = await heartbeat(groups_broker, "b", connection=bob)
    assert (hidden.error_code, hidden.error_message) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TOPIC, "t")
    joined = await heartbeat(groups_broker, "b", topics=None, regex=".*", connection=bob)  # secret: not visible
    assert [(tp.topic_id, sorted(tp.partitions)) for tp in joined.assignment.topic_partitions] == [
        (groups_broker.topics.get("t").topic_id, [0, 1, 2, 3])]
    (refused,) = await describe(groups_broker, "cg", connection=user("carol"))
    assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    (seen,) = await describe(groups_broker, "cg", connection=bob)  # READ on the group implies DESCRIBE
    assert seen.error_code == ErrorCode.NONE and len(seen.members) == 1
    await heartbeat(groups_broker, "a", topics=["secret"], connection=admin)
    (partly,) = await describe(groups_broker, "cg", connection=bob)
    assert (partly.error_code, partly.error_message, partly.members) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "The group has described topic(s) that the client is not authorized to describe.", [])
