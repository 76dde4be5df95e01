"""The ACL checks of the consumer-group handlers, as Kafka's KafkaApis makes them.

A real broker (``groups_broker``, with the StandardAuthorizer and
``super.users=User:admin``) takes frames through ``dispatch`` from a
connection logged in as a user. ``admin`` sets things up; ``bob`` is checked:
what each request needs (FindCoordinator DESCRIBE, the membership APIs and
OffsetCommit READ, OffsetFetch DESCRIBE, OffsetDelete and DeleteGroups
DELETE on the group; READ or DESCRIBE on topics), Kafka's error codes and
error-response fields, and whether a refusal fails one item or the request.
"""

from __future__ import annotations

import uuid

import pytest

from broker.acl_model import CLUSTER_NAME, PatternType
from broker.groups.store import OFFSETS_TOPIC
from protocol import ErrorCode

from ._admin_client import call, creatable, req, sub
from ._authz import STANDARD_AUTHORIZER, Op, Res, grant, user
from ._group_client import clock, groups_broker, protocols  # noqa: F401  (fixtures)

ADMIN, BOB = user("admin"), user("bob")
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
NO_OPERATIONS = -(2**31)


@pytest.fixture
def group_props():
    return {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}


async def topic(broker, name: str, partitions: int = 1) -> uuid.UUID:
    resp = await call(broker, 19, 7, req(19, topics=[creatable(name, partitions)], timeout_ms=1000), connection=ADMIN)
    assert resp.topics[0].error_code == ErrorCode.NONE
    return resp.topics[0].topic_id


async def find(broker, keys: list[str], version: int = 4, key_type: int = 0, who=BOB):
    if version < 4:
        resp = await call(broker, 10, version, req(10, key=keys[0], key_type=key_type), connection=who)
        return [(resp.error_code, resp.error_message, resp.node_id)]
    resp = await call(broker, 10, version, req(10, coordinator_keys=keys, key_type=key_type), connection=who)
    return [(c.error_code, c.error_message, c.node_id) for c in resp.coordinators]


async def join(broker, group="g", member_id="", version=5, who=BOB):
    body = req(11, group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member_id,
               protocol_type="consumer", protocols=protocols())  # fmt: skip
    return await call(broker, 11, version, body, timeout=30, connection=who)


async def member(broker, group="g") -> tuple[int, str]:
    """Admin joins ``group`` and syncs: (generation, member id) of a stable one-member group."""
    first = await join(broker, group, who=ADMIN)
    joined = await join(broker, group, first.member_id, who=ADMIN)
    assert joined.error_code == ErrorCode.NONE
    body = req(14, group_id=group, generation_id=joined.generation_id, member_id=joined.member_id, assignments=[])
    assert (await call(broker, 14, 3, body, connection=ADMIN)).error_code == ErrorCode.NONE
    return joined.generation_id, joined.member_id


async def commit(broker, group, offsets: dict, version=7, who=BOB, key="name") -> list[tuple]:
    """``offsets``: {(topic name or id, partition): offset}; [(topic, partition, error)] as answered."""
    Topic = sub(8, "OffsetCommitRequestTopic")
    by_topic: dict = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(Topic.OffsetCommitRequestPartition(partition_index=p, committed_offset=off))
    body = req(8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
               topics=[Topic(**{key: t}, partitions=ps) for t, ps in by_topic.items()])  # fmt: skip
    resp = await call(broker, 8, version, body, connection=who)
    return [(getattr(t, key), p.partition_index, p.error_code) for t in resp.topics for p in t.partitions]


async def fetch(broker, groups: dict, version=8, who=BOB) -> list[tuple]:
    """``groups``: {group: {topic: [partitions]} or None}; per group (error, [(topic, p, offset, error)])."""
    key = "topic_id" if version >= 10 else "name"
    if version < 8:
        [(group, wanted)] = groups.items()
        Topic = sub(9, "OffsetFetchRequestTopic")
        topics = None if wanted is None else [Topic(name=t, partition_indexes=ps) for t, ps in wanted.items()]
        resp = await call(broker, 9, version, req(9, group_id=group, topics=topics), connection=who)
        return [(resp.error_code, [(t.name, p.partition_index, p.committed_offset, p.error_code)
                                   for t in resp.topics for p in t.partitions])]  # fmt: skip
    Group = sub(9, "OffsetFetchRequestGroup")
    Topic = Group.OffsetFetchRequestTopics
    body = req(9, groups=[Group(group_id=g, topics=None if ts is None else [
        Topic(**{key: t}, partition_indexes=ps) for t, ps in ts.items()]) for g, ts in groups.items()])  # fmt: skip
    resp = await call(broker, 9, version, body, connection=who)
    return [(g.error_code, [(getattr(t, key), p.partition_index, p.committed_offset, p.error_code)
                            for t in g.topics for p in t.partitions]) for g in resp.groups]  # fmt: skip


# -- FindCoordinator ----------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 3])
async def test_find_coordinator_before_v4_fails_the_request_and_creates_nothing(groups_broker, version):
    assert await find(groups_broker, ["g"], version) == [(GROUP_DENIED, "Group authorization failed.", -1)]
    assert groups_broker.topics.partition(OFFSETS_TOPIC, 0) is None  # a refused key creates no internal topic
    assert await find(groups_broker, ["t"], version, key_type=1) == [
        (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed.", -1)]  # fmt: skip
    grant(groups_broker, "bob", Op.DESCRIBE, Res.GROUP, "g")
    assert (await find(groups_broker, ["g"], version))[0][0::2] == (ErrorCode.NONE, 3)


@pytest.mark.parametrize("version", [4, 6])
async def test_find_coordinator_from_v4_answers_each_key(groups_broker, version):
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "ok")  # READ implies DESCRIBE
    assert await find(groups_broker, ["ok", "no"], version) == [(ErrorCode.NONE, None, 3), (GROUP_DENIED, None, -1)]
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, "tx", PatternType.PREFIXED)
    assert await find(groups_broker, ["tx-1", "other"], version, key_type=1) == [
        (ErrorCode.NONE, None, 3), (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, -1)]  # fmt: skip
    assert await find(groups_broker, ["no"], version, who=ADMIN) == [(ErrorCode.NONE, None, 3)]


async def test_find_coordinator_v6_share_keys_need_cluster_action(groups_broker):
    assert await find(groups_broker, ["a", "b"], 6, key_type=2) == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", -1)] * 2  # fmt: skip
    grant(groups_broker, "bob", Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_NAME)
    assert await find(groups_broker, ["a"], 6, key_type=2) == [(ErrorCode.INVALID_REQUEST, None, -1)]  # no share groups


# -- the membership APIs ----------------------------------------------------------------


@pytest.mark.parametrize(("version", "protocol_name"), [(5, ""), (7, None)])
async def test_join_group_needs_read(groups_broker, version, protocol_name):
    grant(groups_broker, "bob", Op.DESCRIBE, Res.GROUP, "g")  # not enough
    resp = await join(groups_broker, version=version)
    assert (resp.error_code, resp.generation_id, resp.member_id, resp.leader, resp.protocol_name, resp.members) == (
        GROUP_DENIED, -1, "", "", protocol_name, [])  # fmt: skip
    assert "g" not in groups_broker.groups.groups
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "g")
    assert (await join(groups_broker, version=version)).error_code == ErrorCode.MEMBER_ID_REQUIRED


async def test_sync_heartbeat_and_leave_need_read(groups_broker):
    generation, member_id = await member(groups_broker)
    sync = req(14, group_id="g", generation_id=generation, member_id=member_id, assignments=[])
    resp = await call(groups_broker, 14, 3, sync, connection=BOB)
    assert (resp.error_code, resp.assignment) == (GROUP_DENIED, b"")
    beat = req(12, group_id="g", generation_id=generation, member_id=member_id)
    assert (await call(groups_broker, 12, 3, beat, connection=BOB)).error_code == GROUP_DENIED
    leave = req(13, group_id="g", members=[sub(13, "MemberIdentity")(member_id=member_id)])
    resp = await call(groups_broker, 13, 3, leave, connection=BOB)
    assert (resp.error_code, resp.members) == (GROUP_DENIED, [])
    resp = await call(groups_broker, 13, 0, req(13, group_id="g", member_id=member_id), connection=BOB)
    assert resp.error_code == GROUP_DENIED
    assert list(groups_broker.groups.groups["g"].members) == [member_id]  # nobody left
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "g")
    assert (await call(groups_broker, 12, 3, beat, connection=BOB)).error_code == ErrorCode.NONE
    resp = await call(groups_broker, 13, 3, leave, connection=BOB)
    assert (resp.error_code, [m.error_code for m in resp.members]) == (ErrorCode.NONE, [ErrorCode.NONE])


async def test_sync_v5_without_protocol_fields_is_refused_before_authorization(groups_broker):
    body = req(14, group_id="g", generation_id=1, member_id="m", protocol_type=None, protocol_name="range",
               assignments=[])  # fmt: skip
    assert (await call(groups_broker, 14, 5, body, connection=BOB)).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    body.protocol_type = "consumer"
    assert (await call(groups_broker, 14, 5, body, connection=BOB)).error_code == GROUP_DENIED


# -- offsets ----------------------------------------------------------------------------


async def test_offset_commit_checks_the_group_then_each_topic(groups_broker):
    await topic(groups_broker, "a", 2)
    await topic(groups_broker, "b")
    offsets = {("a", 0): 5, ("a", 9): 1, ("b", 0): 6, ("zz", 0): 7}
    assert await commit(groups_broker, "s", offsets) == [(t, p, GROUP_DENIED) for t, p in offsets]
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "s")
    assert await commit(groups_broker, "s", {("b", 0): 6, ("zz", 0): 7}) == [("b", 0, TOPIC_DENIED),
                                                                             ("zz", 0, TOPIC_DENIED)]  # fmt: skip
    assert "s" not in groups_broker.groups.groups  # nothing left to commit: the group is not reached
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")
    assert await commit(groups_broker, "s", offsets) == [
        ("a", 0, ErrorCode.NONE), ("a", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("b", 0, TOPIC_DENIED),
        ("zz", 0, TOPIC_DENIED)]  # fmt: skip
    committed = (await fetch(groups_broker, {"s": {"a": [0], "b": [0]}}, who=ADMIN))[0][1]
    assert committed == [("a", 0, 5, 0), ("b", 0, -1, 0)]


async def test_offset_commit_v10_resolves_ids_before_the_topic_check(groups_broker):
    a, b = await topic(groups_broker, "a"), await topic(groups_broker, "b")
    stranger = uuid.uuid4()
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "s")
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")
    got = await commit(groups_broker, "s", {(a, 0): 1, (b, 0): 2, (stranger, 0): 3}, version=10, key="topic_id")
    assert got == [(a, 0, ErrorCode.NONE), (b, 0, TOPIC_DENIED), (stranger, 0, ErrorCode.UNKNOWN_TOPIC_ID)]


@pytest.mark.parametrize("version", [0, 1, 5, 8])
async def test_offset_fetch_without_describe_on_the_group(groups_broker, version):
    await topic(groups_broker, "a")
    assert await commit(groups_broker, "s", {("a", 0): 5}, who=ADMIN) == [("a", 0, ErrorCode.NONE)]
    got = await fetch(groups_broker, {"s": {"a": [0]}}, version)
    if version < 2:  # no top-level error: it goes on every partition asked for
        assert got == [(ErrorCode.NONE, [("a", 0, -1, GROUP_DENIED)])]
    else:
        assert got == [(GROUP_DENIED, [])]


async def test_v0_offset_apis_check_access_before_failing_as_unsupported(groups_broker):
    """KRaft Kafka fails v0 (ZooKeeper's storage) only past the checks that come first: the group, then (commit)
    each topic; a commit refused on every topic is answered per partition and is not failed."""
    await topic(groups_broker, "a")
    assert await commit(groups_broker, "s", {("a", 0): 5}, version=0) == [("a", 0, GROUP_DENIED)]
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "s")
    assert await commit(groups_broker, "s", {("a", 0): 5}, version=0) == [("a", 0, TOPIC_DENIED)]
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")
    assert await commit(groups_broker, "s", {("a", 0): 5}, version=0) == [("a", 0, ErrorCode.UNSUPPORTED_VERSION)]
    assert await fetch(groups_broker, {"s": {"a": [0]}}, 0) == [(ErrorCode.NONE, [
        ("a", 0, -1, ErrorCode.UNSUPPORTED_VERSION)])]  # fmt: skip


async def test_offset_fetch_named_topics_and_every_partition(groups_broker):
    for name in ("a", "b"):
        await topic(groups_broker, name)
    await commit(groups_broker, "s", {("a", 0): 5, ("b", 0): 6}, who=ADMIN)
    grant(groups_broker, "bob", Op.DESCRIBE, Res.GROUP, "s")
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")  # READ implies DESCRIBE
    for version in (7, 8):
        assert await fetch(groups_broker, {"s": {"b": [0], "a": [0]}}, version) == [
            (ErrorCode.NONE, [("b", 0, -1, TOPIC_DENIED), ("a", 0, 5, ErrorCode.NONE)])]  # fmt: skip
        assert await fetch(groups_broker, {"s": None}, version) == [(ErrorCode.NONE, [("a", 0, 5, ErrorCode.NONE)])]
    assert await fetch(groups_broker, {"s": {"a": [0]}, "other": None}) == [
        (ErrorCode.NONE, [("a", 0, 5, ErrorCode.NONE)]), (GROUP_DENIED, [])]  # fmt: skip


async def test_offset_fetch_v10_by_topic_id(groups_broker):
    a, b = await topic(groups_broker, "a"), await topic(groups_broker, "b")
    stranger = uuid.uuid4()
    await commit(groups_broker, "s", {("a", 0): 5, ("b", 0): 6}, who=ADMIN)
    grant(groups_broker, "bob", Op.DESCRIBE, Res.GROUP, "s")
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    assert await fetch(groups_broker, {"s": {stranger: [0], b: [0], a: [0]}}, 10) == [(ErrorCode.NONE, [
        (stranger, 0, -1, ErrorCode.UNKNOWN_TOPIC_ID), (b, 0, -1, TOPIC_DENIED),
        (a, 0, 5, ErrorCode.NONE)])]  # fmt: skip
    assert await fetch(groups_broker, {"s": None}, 10) == [(ErrorCode.NONE, [(a, 0, 5, ErrorCode.NONE)])]


async def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic(groups_broker):
    for name in ("a", "b"):
        await topic(groups_broker, name)
    await commit(groups_broker, "s", {("a", 0): 5, ("b", 0): 6}, who=ADMIN)
    Topic = sub(47, "OffsetDeleteRequestTopic")
    body = req(47, group_id="s", topics=[Topic(name=t, partitions=[Topic.OffsetDeleteRequestPartition(
        partition_index=0)]) for t in ("a", "b")])  # fmt: skip
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "s")  # not enough
    resp = await call(groups_broker, 47, 0, body, connection=BOB)
    assert (resp.error_code, resp.topics) == (GROUP_DENIED, [])
    grant(groups_broker, "bob", Op.DELETE, Res.GROUP, "s")
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")
    resp = await call(groups_broker, 47, 0, body, connection=BOB)
    assert [(t.name, [p.error_code for p in t.partitions]) for t in resp.topics] == [
        ("a", [ErrorCode.NONE]), ("b", [TOPIC_DENIED])]  # fmt: skip
    assert (await fetch(groups_broker, {"s": None}, who=ADMIN))[0][1] == [("b", 0, 6, ErrorCode.NONE)]
    body.group_id = "missing"
    grant(groups_broker, "bob", Op.DELETE, Res.GROUP, "missing")
    resp = await call(groups_broker, 47, 0, body, connection=BOB)
    assert (resp.error_code, resp.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])


# -- describing, listing and deleting groups -------------------------------------------------


async def test_describe_groups_per_group_with_the_principals_operations(groups_broker):
    await member(groups_broker, "g")
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "g")
    body = req(15, groups=["g", "h"], include_authorized_operations=True)
    resp = await call(groups_broker, 15, 5, body, connection=BOB)
    g, h = resp.groups
    assert (g.error_code, g.group_state, len(g.members), g.authorized_operations) == (
        ErrorCode.NONE, "Stable", 1, (1 << Op.READ) | (1 << Op.DESCRIBE))  # fmt: skip
    assert (h.group_id, h.error_code, h.group_state, h.protocol_type, h.protocol_data, h.members,
            h.authorized_operations) == ("h", GROUP_DENIED, "", "", "", [], NO_OPERATIONS)  # fmt: skip
    resp = await call(groups_broker, 15, 6, body, connection=BOB)
    assert (resp.groups[1].error_code, resp.groups[1].error_message) == (GROUP_DENIED, None)
    everything = (await call(groups_broker, 15, 5, body, connection=ADMIN)).groups[0].authorized_operations
    assert everything == sum(1 << op for op in (Op.READ, Op.DELETE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
                                                Op.ALTER_CONFIGS))  # fmt: skip


async def test_list_groups_shows_what_the_principal_may_describe(groups_broker):
    await topic(groups_broker, "a")
    for group in ("g1", "g2"):
        await commit(groups_broker, group, {("a", 0): 1}, who=ADMIN)

    async def listed(version=4):
        resp = await call(groups_broker, 16, version, req(16, states_filter=[]), connection=BOB)
        return (resp.error_code, sorted(g.group_id for g in resp.groups))

    assert await listed() == (ErrorCode.NONE, [])
    grant(groups_broker, "bob", Op.DESCRIBE, Res.GROUP, "g1")
    assert await listed() == (ErrorCode.NONE, ["g1"])
    assert await listed(0) == (ErrorCode.NONE, ["g1"])
    grant(groups_broker, "bob", Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME)
    assert await listed() == (ErrorCode.NONE, ["g1", "g2"])


async def test_delete_groups_per_distinct_group(groups_broker):
    await topic(groups_broker, "a")
    for group in ("g1", "g2"):
        await commit(groups_broker, group, {("a", 0): 1}, who=ADMIN)
    grant(groups_broker, "bob", Op.DELETE, Res.GROUP, "g1")
    resp = await call(groups_broker, 42, 2, req(42, groups_names=["g1", "g2", "g1"]), connection=BOB)
    assert [(r.group_id, r.error_code) for r in resp.results] == [("g1", ErrorCode.NONE), ("g2", GROUP_DENIED)]
    assert sorted(groups_broker.groups.groups) == ["g2"]
