"""ConsumerGroupHeartbeat and ConsumerGroupDescribe over the wire (our encoder, ``dispatch``), as Kafka answers.

A real broker with a hand-driven clock (``_group_client.groups_broker``);
topic ``t`` has 4 partitions. Each test checks the answers a client sees:
member ids and epochs, assignments, Kafka's error codes and messages.
"""

from __future__ import annotations

import pytest

from broker.acl_model import SUPPORTED_OPERATIONS, ResourceType
from protocol import ErrorCode

from ._admin_client import call, req
from ._consumer_group_client import describe, heartbeat, make_topic, owned, parts, ready
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)

TOPIC_PARTITIONS = 4


@pytest.fixture
async def cg(groups_broker):
    """The broker with ``t`` (4 partitions) and ``__consumer_offsets`` ready; ``cg.tid`` is ``t``'s id."""
    groups_broker.tid = await make_topic(groups_broker, "t", TOPIC_PARTITIONS)
    await ready(groups_broker)
    return groups_broker


async def test_two_members_split_the_topic_and_partitions_move_only_after_revocation(cg):
    a = await heartbeat(cg, "member-a")
    assert (a.error_code, a.error_message, a.member_id, a.member_epoch) == (0, None, "member-a", 1)
    assert a.heartbeat_interval_ms == 5000 and parts(a.assignment) == {cg.tid: [0, 1, 2, 3]}
    b = await heartbeat(cg, "member-b")
    assert (b.member_epoch, parts(b.assignment)) == (2, {})  # its partitions are still a's
    a2 = await heartbeat(cg, "member-a", 1, owned_partitions=owned(a.assignment))
    assert (a2.member_epoch, parts(a2.assignment)) == (1, {cg.tid: [0, 1]})  # revoke 2, 3 first
    b2 = await heartbeat(cg, "member-b", 2, owned_partitions=[])
    assert (b2.member_epoch, b2.assignment) == (2, None)  # nothing released yet, nothing changed
    (group,) = await describe(cg, "cg")
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Reconciling", 2, 2)
    a3 = await heartbeat(cg, "member-a", 1, owned_partitions=owned(a2.assignment))
    assert (a3.member_epoch, a3.assignment) == (2, None)
    b3 = await heartbeat(cg, "member-b", 2, owned_partitions=[])
    assert (b3.member_epoch, parts(b3.assignment)) == (2, {cg.tid: [2, 3]})
    (group,) = await describe(cg, "cg")
    assert (group.group_state, group.assignor_name) == ("Stable", "uniform")
    described = {m.member_id: (m.member_epoch, [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions],
                               [(tp.topic_name, tp.partitions) for tp in m.target_assignment.topic_partitions])
                 for m in group.members}  # fmt: skip
    assert described == {"member-a": (2, [("t", [0, 1])], [("t", [0, 1])]),
                         "member-b": (2, [("t", [2, 3])], [("t", [2, 3])])}  # fmt: skip
    member = group.members[0]
    assert (member.client_id, member.client_host, member.subscribed_topic_names, member.member_type) == (
        "admin-test", "", ["t"], 1)  # fmt: skip


async def test_leave_gives_the_partitions_to_the_other_member(cg):
    a = await heartbeat(cg, "member-a")
    b = await heartbeat(cg, "member-b")
    a = await heartbeat(cg, "member-a", 1, owned_partitions=owned(a.assignment))
    a = await heartbeat(cg, "member-a", 1, owned_partitions=owned(a.assignment))
    b = await heartbeat(cg, "member-b", 2, owned_partitions=[])
    left = await heartbeat(cg, "member-a", -1)
    assert (left.error_code, left.member_id, left.member_epoch, left.assignment) == (0, "member-a", -1, None)
    b = await heartbeat(cg, "member-b", 2, owned_partitions=owned(b.assignment))
    assert (b.member_epoch, parts(b.assignment)) == (3, {cg.tid: [0, 1, 2, 3]})  # the leave bumped the epoch to 3


async def test_v0_join_gets_a_member_id_from_the_coordinator(cg):
    joined = await heartbeat(cg, "", version=0)
    assert joined.error_code == 0 and len(joined.member_id) == 22 and joined.member_epoch == 1
    again = await heartbeat(cg, joined.member_id, 1, version=0)
    assert (again.error_code, again.member_epoch) == (0, 1)


@pytest.mark.parametrize("fields,message", [
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"group": ""}, "GroupId can't be empty."),
    ({"instance": ""}, "InstanceId can't be empty."),
    ({"rack": ""}, "RackId can't be empty."),
    ({"rebalance": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"owned_partitions": None}, "TopicPartitions must be empty when (re-)joining."),
    ({"topics": None}, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ({"epoch": -2}, "InstanceId can't be null."),
    ({"epoch": -3}, "MemberEpoch is invalid."),
])
async def test_invalid_requests_get_kafkas_messages(cg, fields, message):
    kw = {"member_id": "m", **fields}
    resp = await heartbeat(cg, **kw)
    assert (resp.error_code, resp.error_message) == (ErrorCode.INVALID_REQUEST, message)


async def test_joining_with_owned_partitions_is_invalid(cg):
    first = await heartbeat(cg, "m")
    resp = await heartbeat(cg, "m2", owned_partitions=owned(first.assignment))
    assert (resp.error_code, resp.error_message) == (ErrorCode.INVALID_REQUEST,
                                                     "TopicPartitions must be empty when (re-)joining.")


async def test_unknown_assignor(cg):
    resp = await heartbeat(cg, "m", assignor="sticky")
    assert (resp.error_code, resp.error_message) == (
        ErrorCode.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")


async def test_member_and_epoch_errors(cg):
    assert (await heartbeat(cg, "m", 1)).error_message == "Consumer group cg not found."
    joined = await heartbeat(cg, "m")
    unknown = await heartbeat(cg, "ghost", 1)
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                                           "Member ghost is not a member of group cg.")
    ahead = await heartbeat(cg, "m", 5)
    assert (ahead.error_code, ahead.error_message) == (ErrorCode.FENCED_MEMBER_EPOCH, (
        "The consumer group member has a greater member epoch (5) than the one known by the group coordinator (1). "
        "The member must abandon all its partitions and rejoin."))
    await heartbeat(cg, "other")  # epoch 2; m stays at 1 until it heartbeats
    moved = await heartbeat(cg, "m", 1, owned_partitions=owned(joined.assignment))
    assert moved.member_epoch == 1
    behind = await heartbeat(cg, "m", 0, topics=["t"], owned_partitions=[])
    assert behind.error_code == ErrorCode.FENCED_MEMBER_EPOCH and "smaller member epoch (0)" in behind.error_message
    gone = await heartbeat(cg, "ghost", -1)
    assert (gone.error_code, gone.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                                     "Member ghost is not a member of group cg.")
    nowhere = await heartbeat(cg, "m", -1, group="nope")
    assert (nowhere.error_code, nowhere.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")


async def test_a_lost_answer_is_forgiven_at_the_previous_epoch(cg):
    a = await heartbeat(cg, "a")
    await heartbeat(cg, "b")
    a = await heartbeat(cg, "a", 1, owned_partitions=owned(a.assignment))
    a = await heartbeat(cg, "a", 1, owned_partitions=owned(a.assignment))
    assert a.member_epoch == 2
    again = await heartbeat(cg, "a", 1, owned_partitions=owned((await describe(cg, "cg"))[0].members[0].assignment))
    assert (again.error_code, again.member_epoch) == (0, 2)


@pytest.mark.parametrize("group_props", [{"group.consumer.max.size": "1"}])
async def test_group_max_size(cg):
    assert (await heartbeat(cg, "a")).error_code == 0
    full = await heartbeat(cg, "b")
    assert (full.error_code, full.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 1 members.")
    assert (await heartbeat(cg, "a", 1, owned_partitions=[])).error_code == 0  # members stay welcome


async def test_static_members(cg):
    a = await heartbeat(cg, "a1", instance="i-a")
    taken = await heartbeat(cg, "a2", instance="i-a")
    assert (taken.error_code, taken.error_message) == (ErrorCode.UNRELEASED_INSTANCE_ID, (
        "Static member a2 with instance id i-a cannot join the group because the instance id is owned by a1 member."))
    parked = await heartbeat(cg, "a1", -2, instance="i-a")
    assert (parked.error_code, parked.member_id, parked.member_epoch) == (0, "a1", -2)
    b = await heartbeat(cg, "b")
    assert parts(b.assignment) == {}  # the parked member keeps its partitions
    back = await heartbeat(cg, "a2", instance="i-a")
    assert (back.error_code, back.member_epoch) == (0, 2)
    assert parts(a.assignment) == {cg.tid: [0, 1, 2, 3]} and parts(back.assignment) == {cg.tid: [0, 1]}
    fenced = await heartbeat(cg, "a1", 1, instance="i-a", owned_partitions=[])
    assert (fenced.error_code, fenced.error_message) == (
        ErrorCode.FENCED_INSTANCE_ID, "Static member a1 with instance id i-a was fenced by member a2.")
    unknown = await heartbeat(cg, "x", -2, instance="i-x")
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id i-x is unknown.")


async def test_regex_subscription(cg):
    await make_topic(cg, "t-extra", 2)
    resp = await heartbeat(cg, "m", topics=None, regex="t.*")
    assert sorted(len(tp.partitions) for tp in resp.assignment.topic_partitions) == [2, 4]
    bad = await heartbeat(cg, "n", topics=None, regex="t(")
    assert bad.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert bad.error_message.startswith("SubscribedTopicRegex `t(` is not a valid regular expression: ")
    lookahead = await heartbeat(cg, "n", topics=None, regex="(?=t).*")
    assert lookahead.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION


async def test_classic_and_consumer_groups_of_one_id(cg):
    body = req(11, group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="m",
               protocol_type="consumer", protocols=[])  # fmt: skip
    await call(cg, 11, 5, body)  # unknown member: nothing made
    from ._group_client import join_new, sync
    joined = await join_new(cg, "classic")
    await sync(cg, "classic", joined.generation_id, joined.member_id, {joined.member_id: b""})
    refused = await heartbeat(cg, "m", group="classic")  # its members' subscriptions (b"sub") cannot be read
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group classic to consumer group because the embedded consumer protocol is malformed.")
    not_consumer = await heartbeat(cg, "m", 1, group="classic")
    assert not_consumer.error_message == "Group classic is not a consumer group."
    (described,) = await describe(cg, "classic")
    assert (described.error_code, described.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                               "Group classic is not a consumer group.")
    await heartbeat(cg, "m")
    clash = await join_new(cg, "cg")  # a classic member of the consumer group, but its subscription is unreadable
    assert clash.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    foreign = await join_new(cg, "cg", ptype="connect")
    assert foreign.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    await heartbeat(cg, "m", -1)
    converted = await join_new(cg, "cg")
    assert converted.error_code == 0  # an empty consumer group becomes a classic group
    assert (await heartbeat(cg, "m", group="cg")).error_code == ErrorCode.GROUP_ID_NOT_FOUND


async def test_describe_errors_and_operations(cg):
    await heartbeat(cg, "m")
    empty, unknown, known = await describe(cg, "nope", "", "cg", operations=True)  # invalid ids first, as Kafka
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert (empty.group_id, empty.error_code) == ("", ErrorCode.INVALID_GROUP_ID)
    every_operation = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.GROUP])
    assert known.error_code == 0 and known.authorized_operations == every_operation
    assert unknown.authorized_operations == -(2**31)
    (v0,) = await describe(cg, "cg", version=0)
    assert v0.members[0].member_type == -1


@pytest.mark.parametrize("group_props", [{"group.coordinator.rebalance.protocols": "classic"}])
async def test_without_the_consumer_protocol_the_apis_are_off(cg):
    resp = await heartbeat(cg, "m")
    assert (resp.error_code, resp.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
    (group,) = await describe(cg, "cg")
    assert group.error_code == ErrorCode.UNSUPPORTED_VERSION
    versions = await call(cg, 18, 3, req(18, client_software_name="t", client_software_version="1"))
    assert not {k.api_key for k in versions.api_keys} & {68, 69}


async def test_api_versions_advertises_both_apis(cg):
    versions = await call(cg, 18, 3, req(18, client_software_name="t", client_software_version="1"))
    found = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert (found[68], found[69]) == ((0, 1), (0, 1))


@pytest.mark.parametrize("field", ["group", "member", "instance", "rack"])
async def test_ids_of_only_whitespace_are_empty_as_java_trims_them(cg, field):
    # Kafka's throwIfEmptyString tests value.trim().isEmpty(): spaces, tabs and control characters are empty
    blank = " \t\x01"
    args = {"group": {"group": blank}, "member": {"member_id": blank, "epoch": 1},
            "instance": {"instance": blank}, "rack": {"rack": blank}}[field]
    name = {"group": "GroupId", "member": "MemberId", "instance": "InstanceId", "rack": "RackId"}[field]
    resp = await heartbeat(cg, **{"member_id": "m", **args})
    assert (resp.error_code, resp.error_message) == (ErrorCode.INVALID_REQUEST, f"{name} can't be empty.")
