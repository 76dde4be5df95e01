"""OffsetCommit and OffsetFetch v9 (KIP-848's versions, for a classic group) and v10 (topics by id), in-process.

For a classic group Kafka's ``OffsetMetadataManager`` changes one answer at
v9: a commit with a generation to a group that does not exist is
GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION; OffsetFetch's member id and
epoch are not looked at (``ClassicGroup.validateOffsetFetch`` only refuses a
dead group). v10 names topics by id in both APIs: an unknown id is
UNKNOWN_TOPIC_ID for each of its partitions; offsets are kept by name, so
commits and fetches by name and by id meet.
"""

from __future__ import annotations

import uuid

import pytest

from protocol import ErrorCode

from ._admin_client import call, create_ok, req, sub
from ._group_client import clock, commit, fetch, group_props, groups_broker, join_new, sync  # noqa: F401

T = "orders"


async def commit_by_id(broker, group, offsets: dict, generation=-1, member_id="") -> list[tuple]:
    """``offsets``: {(topic id, partition): offset}; [(topic id, partition, error)] in the answer's order."""
    Topic = sub(8, "OffsetCommitRequestTopic")
    by_topic: dict = {}
    for (tid, p), off in offsets.items():
        by_topic.setdefault(tid, []).append(Topic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata="m"))  # fmt: skip
    body = req(8, group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
               topics=[Topic(topic_id=tid, partitions=ps) for tid, ps in by_topic.items()])  # fmt: skip
    resp = await call(broker, 8, 10, body)
    return [(t.topic_id, p.partition_index, p.error_code) for t in resp.topics for p in t.partitions]


async def fetch_groups(broker, version, groups: dict, stable=False) -> list[tuple]:
    """``groups``: {group: {topic name or id: [partitions]} or None}; per group (error, [(topic, p, offset, error)])."""
    Group = sub(9, "OffsetFetchRequestGroup")
    Topic = Group.OffsetFetchRequestTopics
    key = "topic_id" if version >= 10 else "name"
    body = req(9, require_stable=stable, groups=[
        Group(group_id=g, member_id="someone", member_epoch=7,
              topics=None if ts is None else [Topic(**{key: t}, partition_indexes=ps) for t, ps in ts.items()])
        for g, ts in groups.items()])  # fmt: skip
    resp = await call(broker, 9, version, body)
    return [(g.error_code, [(getattr(t, key), p.partition_index, p.committed_offset, p.error_code)
                            for t in g.topics for p in t.partitions]) for g in resp.groups]  # fmt: skip


@pytest.mark.parametrize(("version", "expected"), [(8, ErrorCode.ILLEGAL_GENERATION), (9, ErrorCode.GROUP_ID_NOT_FOUND),
                                                   (10, ErrorCode.GROUP_ID_NOT_FOUND)])  # fmt: skip
async def test_a_generation_for_a_group_that_does_not_exist(groups_broker, version, expected):
    tid = (await create_ok(groups_broker, T, 1)).topic_id
    if version < 10:
        got = await commit(groups_broker, "new", {(T, 0): 1}, generation=3, member_id="m", version=version)
        assert got == {(T, 0): expected}
    else:
        assert await commit_by_id(groups_broker, "new", {(tid, 0): 1}, generation=3, member_id="m") == [
            (tid, 0, expected)]  # fmt: skip
    assert "new" not in groups_broker.groups.groups


@pytest.mark.parametrize("version", [9, 10])
async def test_v9_v10_commits_of_a_classic_group_are_checked_by_generation(groups_broker, version):
    tid = (await create_ok(groups_broker, T, 1)).topic_id
    joined = await join_new(groups_broker, "g")
    await sync(groups_broker, "g", joined.generation_id, joined.member_id, {joined.member_id: b"x"})

    async def commit_at(generation, member):
        if version < 10:
            return (await commit(groups_broker, "g", {(T, 0): 4}, generation, member, version=version))[(T, 0)]
        return (await commit_by_id(groups_broker, "g", {(tid, 0): 4}, generation, member))[0][2]

    assert await commit_at(joined.generation_id + 1, joined.member_id) == ErrorCode.ILLEGAL_GENERATION
    assert await commit_at(joined.generation_id, "ghost") == ErrorCode.UNKNOWN_MEMBER_ID
    assert await commit_at(joined.generation_id, joined.member_id) == ErrorCode.NONE
    assert (await fetch(groups_broker, "g", {T: [0]}))[1] == {(T, 0): (4, "m", 0)}


async def test_v10_commit_by_id_unknown_ids_and_partitions(groups_broker):
    tid = (await create_ok(groups_broker, T, 2)).topic_id
    stranger = uuid.uuid4()
    got = await commit_by_id(groups_broker, "s", {(tid, 0): 5, (tid, 7): 1, (stranger, 0): 3, (tid, 1): 6})
    assert got == [(tid, 0, ErrorCode.NONE), (tid, 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (tid, 1, ErrorCode.NONE),
                   (stranger, 0, ErrorCode.UNKNOWN_TOPIC_ID)]  # fmt: skip
    assert (await fetch(groups_broker, "s", {T: [0, 1]}))[1] == {(T, 0): (5, "m", 0), (T, 1): (6, "m", 0)}  # by name


async def test_v10_commit_of_only_unknown_ids_leaves_the_group_alone(groups_broker):
    await create_ok(groups_broker, T, 1)
    stranger = uuid.uuid4()
    assert await commit_by_id(groups_broker, "s", {(stranger, 0): 3}) == [(stranger, 0, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert "s" not in groups_broker.groups.groups  # Kafka never reaches the group coordinator


async def test_v9_fetch_ignores_the_member_of_a_classic_group(groups_broker):
    await create_ok(groups_broker, T, 2)
    await commit(groups_broker, "s", {(T, 0): 5})
    assert await fetch_groups(groups_broker, 9, {"s": {T: [0, 1]}, "none": None}) == [
        (ErrorCode.NONE, [(T, 0, 5, 0), (T, 1, -1, 0)]), (ErrorCode.NONE, [])]  # fmt: skip
    assert await fetch_groups(groups_broker, 9, {"s": None}) == await fetch_groups(groups_broker, 8, {"s": None})


async def test_v10_fetch_by_id(groups_broker):
    tid = (await create_ok(groups_broker, T, 2)).topic_id
    other = (await create_ok(groups_broker, "other", 1)).topic_id
    stranger = uuid.uuid4()
    await commit(groups_broker, "s", {(T, 0): 5, ("other", 0): 8})
    asked = {stranger: [0, 3], tid: [0, 1]}
    assert await fetch_groups(groups_broker, 10, {"s": asked}) == [(ErrorCode.NONE, [
        (stranger, 0, -1, ErrorCode.UNKNOWN_TOPIC_ID), (stranger, 3, -1, ErrorCode.UNKNOWN_TOPIC_ID),
        (tid, 0, 5, 0), (tid, 1, -1, 0)])]  # fmt: skip
    every = (await fetch_groups(groups_broker, 10, {"s": None}))[0]
    assert sorted(every[1]) == sorted([(tid, 0, 5, 0), (other, 0, 8, 0)])  # committed by name, answered by id
