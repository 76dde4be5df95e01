"""Committed offsets and whole-group operations, and what survives a restart.

OffsetCommit/OffsetFetch at every version, Kafka's commit checks,
Describe/List/DeleteGroups, OffsetDelete, the ``__consumer_offsets`` records
(key and value layouts, Java's string hash for the partition) and the
cleaner keeping that topic small. Offset expiry (KIP-211) is in
``test_group_offset_expiry.py``.
"""

from __future__ import annotations

import pytest

from broker.groups import records as r
from broker.groups.store import OFFSETS_TOPIC
from cleaner.service import CleanerConfig, LogCleaner
from protocol import ErrorCode

from ._admin_client import call, create_ok, req, sub
from ._group_client import (  # noqa: F401  (fixtures)
    clock, commit, fetch, group_props, groups_broker, heartbeat, join_new, stable, subscription, sync, tick,
)  # fmt: skip

T = "orders"


@pytest.mark.parametrize("version", range(1, 9))
async def test_simple_commit_and_fetch_at_every_version(groups_broker, version):
    await create_ok(groups_broker, T, 3)
    got = await commit(groups_broker, "s", {(T, 0): 5, (T, 1): 7, (T, 9): 1}, version=version)
    assert got == {(T, 0): 0, (T, 1): 0, (T, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    if version >= 8:
        Group = sub(9, "OffsetFetchRequestGroup")
        body = req(9, groups=[Group(group_id="s", topics=None), Group(group_id="none", topics=None)])
        resp = await call(groups_broker, 9, version, body)
        assert [(g.group_id, g.error_code) for g in resp.groups] == [("s", 0), ("none", 0)]
        assert [(p.partition_index, p.committed_offset, p.metadata) for p in resp.groups[0].topics[0].partitions] \
            == [(0, 5, "m"), (1, 7, "m")]  # fmt: skip
        assert resp.groups[1].topics == []
        return
    error, found = await fetch(groups_broker, "s", {T: [0, 1, 2]}, version=version)
    assert error == ErrorCode.NONE
    assert found == {(T, 0): (5, "m", 0), (T, 1): (7, "m", 0), (T, 2): (-1, "", 0)}
    if version >= 2:
        assert (await fetch(groups_broker, "s", None, version=version))[1] == {(T, 0): (5, "m", 0), (T, 1): (7, "m", 0)}


async def test_v0_commit_and_fetch_are_unsupported_as_on_a_kraft_broker(groups_broker):
    """v0 kept offsets in ZooKeeper: KRaft Kafka answers UNSUPPORTED_VERSION (its ``requireZkOrThrow``), for
    every partition of a commit with anything left to commit, and every partition a fetch asks for."""
    await create_ok(groups_broker, T, 2)
    got = await commit(groups_broker, "s", {(T, 0): 5, (T, 9): 1, ("nope", 0): 2}, version=0)
    assert got == dict.fromkeys([(T, 0), (T, 9), ("nope", 0)], ErrorCode.UNSUPPORTED_VERSION)
    assert "s" not in groups_broker.groups.groups  # nothing stored
    unknown = {(T, 9): 1, ("nope", 0): 2}  # nothing to commit: the per-partition checks answer
    assert await commit(groups_broker, "s", unknown, version=0) == dict.fromkeys(
        unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # fmt: skip
    assert await commit(groups_broker, "s", {(T, 0): 5}, version=1) == {(T, 0): ErrorCode.NONE}
    error, found = await fetch(groups_broker, "s", {T: [0, 1], "nope": [0]}, version=0)
    assert error == ErrorCode.NONE  # v0 has no top-level error
    assert found == {(T, 0): (-1, "", ErrorCode.UNSUPPORTED_VERSION), (T, 1): (-1, "", ErrorCode.UNSUPPORTED_VERSION),
                     ("nope", 0): (-1, "", ErrorCode.UNSUPPORTED_VERSION)}  # fmt: skip
    assert (await fetch(groups_broker, "s", {T: [0]}, version=1))[1] == {(T, 0): (5, "m", ErrorCode.NONE)}


async def test_commit_checks_follow_the_group(groups_broker):
    await create_ok(groups_broker, T, 1)
    assert await commit(groups_broker, "", {(T, 0): 1}) == {(T, 0): ErrorCode.NONE}  # Kafka allows "" here
    assert await commit(groups_broker, "new", {(T, 0): 1}, generation=3, member_id="m") == \
        {(T, 0): ErrorCode.ILLEGAL_GENERATION}  # fmt: skip
    member = await stable(groups_broker)
    assert await commit(groups_broker, "g", {(T, 0): 1}) == {(T, 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert await commit(groups_broker, "g", {(T, 0): 1}, 1, "ghost") == {(T, 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert await commit(groups_broker, "g", {(T, 0): 1}, 2, member.member_id) == {(T, 0): ErrorCode.ILLEGAL_GENERATION}
    assert await commit(groups_broker, "g", {(T, 0): 4}, 1, member.member_id) == {(T, 0): ErrorCode.NONE}
    big = "x" * 4097
    assert await commit(groups_broker, "g", {(T, 0): 9}, 1, member.member_id, metadata=big) == \
        {(T, 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}  # fmt: skip
    assert (await fetch(groups_broker, "g", {T: [0]}))[1] == {(T, 0): (4, "m", 0)}
    assert await fetch(groups_broker, "", {T: [0]}) == (ErrorCode.NONE, {(T, 0): (1, "m", 0)})


async def test_unknown_partitions_are_answered_before_the_group(groups_broker):
    """As Kafka's ``handleOffsetCommitRequest``: a missing topic or partition is UNKNOWN_TOPIC_OR_PARTITION
    whatever the group answers, and a commit left with nothing to commit reaches no group (makes none)."""
    await create_ok(groups_broker, T, 1)
    offsets = {(T, 0): 1, (T, 5): 2, ("nope", 0): 3}
    assert await commit(groups_broker, "new", offsets, generation=3, member_id="m") == {
        (T, 0): ErrorCode.ILLEGAL_GENERATION, (T, 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }  # fmt: skip
    unknown = {(T, 5): 2, ("nope", 0): 3}
    assert await commit(groups_broker, "ghost", unknown) == dict.fromkeys(unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert await commit(groups_broker, "nothing", {}) == {}
    assert "ghost" not in groups_broker.groups.groups and "nothing" not in groups_broker.groups.groups
    listed = await call(groups_broker, 16, 0, req(16))
    assert [g.group_id for g in listed.groups] == []


async def test_commit_member_checks_are_kafkas_validate_offset_commit(groups_broker):
    """As Kafka's ``ClassicGroup.validateOffsetCommit``: an empty group takes generation -1 whatever member it
    names; an instance id nobody holds is UNKNOWN_MEMBER_ID even from a member, one held by another member
    FENCED_INSTANCE_ID."""
    await create_ok(groups_broker, T, 1)
    assert await commit(groups_broker, "s", {(T, 0): 1}) == {(T, 0): ErrorCode.NONE}  # an empty "simple" group
    assert await commit(groups_broker, "s", {(T, 0): 2}, -1, "someone", instance="i-0") == {(T, 0): ErrorCode.NONE}
    assert (await fetch(groups_broker, "s", {T: [0]}))[1] == {(T, 0): (2, "m", 0)}
    member = await stable(groups_broker)
    assert await commit(groups_broker, "g", {(T, 0): 3}, 1, member.member_id, instance="nobody") == \
        {(T, 0): ErrorCode.UNKNOWN_MEMBER_ID}  # fmt: skip
    static = await join_new(groups_broker, "st", instance="i-1")
    await sync(groups_broker, "st", static.generation_id, static.member_id, {static.member_id: b"x"}, instance="i-1")
    assert await commit(groups_broker, "st", {(T, 0): 3}, 1, member.member_id, instance="i-1") == \
        {(T, 0): ErrorCode.FENCED_INSTANCE_ID}  # fmt: skip
    assert await commit(groups_broker, "st", {(T, 0): 3}, 1, static.member_id, instance="i-1") == \
        {(T, 0): ErrorCode.NONE}  # fmt: skip


async def test_commit_while_completing_a_rebalance_is_refused(groups_broker):
    await create_ok(groups_broker, T, 1)
    joined = await join_new(groups_broker)  # joined, no SyncGroup yet: CompletingRebalance
    got = await commit(groups_broker, "g", {(T, 0): 1}, joined.generation_id, joined.member_id)
    assert got == {(T, 0): ErrorCode.REBALANCE_IN_PROGRESS}


async def test_offsets_and_groups_survive_a_restart(groups_broker):
    await create_ok(groups_broker, T, 2)
    member = await stable(groups_broker)
    await commit(groups_broker, "g", {(T, 0): 11, (T, 1): 12}, 1, member.member_id)
    await commit(groups_broker, "simple", {(T, 0): 3})
    broker = groups_broker.reopen()
    assert (await fetch(broker, "g", {T: [0, 1]}))[1] == {(T, 0): (11, "m", 0), (T, 1): (12, "m", 0)}
    assert (await fetch(broker, "simple", {T: [0]}))[1] == {(T, 0): (3, "m", 0)}
    group = broker.groups.groups["g"]
    assert (group.state, group.generation_id, list(group.members)) == ("Stable", 1, [member.member_id])
    assert await heartbeat(broker, "g", 1, member.member_id) == ErrorCode.NONE  # the member carries on
    assert (await sync(broker, "g", 1, member.member_id)).assignment == b"x"
    tick(broker, 10_001)  # restored members still need to heartbeat
    assert broker.groups.groups["g"].state == "Empty"
    again = await join_new(broker)
    assert again.generation_id == 3  # generations keep counting after a restart


async def test_describe_list_and_delete_groups(groups_broker):
    await create_ok(groups_broker, T, 1)
    member = await stable(groups_broker)
    await commit(groups_broker, "simple", {(T, 0): 1})
    resp = await call(groups_broker, 15, 5, req(15, groups=["g", "simple", "nope"], include_authorized_operations=True))
    g, s, nope = resp.groups
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.member_metadata, m.member_assignment) for m in g.members] == [
        (member.member_id, "admin-test", b"sub", b"x")]  # fmt: skip
    assert (s.group_state, s.protocol_type, s.members) == ("Empty", "", [])
    assert (nope.error_code, nope.group_state) == (ErrorCode.NONE, "Dead")
    assert g.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
    listed = await call(groups_broker, 16, 4, req(16, states_filter=["stable"]))
    assert [(x.group_id, x.protocol_type, x.group_state) for x in listed.groups] == [("g", "consumer", "Stable")]
    every = await call(groups_broker, 16, 2, req(16))
    assert sorted(x.group_id for x in every.groups) == ["g", "simple"]
    deleted = await call(groups_broker, 42, 2, req(42, groups_names=["g", "simple", "nope", ""]))
    assert [(x.group_id, x.error_code) for x in deleted.results] == [
        ("g", ErrorCode.NON_EMPTY_GROUP), ("simple", ErrorCode.NONE), ("nope", ErrorCode.GROUP_ID_NOT_FOUND),
        ("", ErrorCode.GROUP_ID_NOT_FOUND)]  # fmt: skip
    assert (await fetch(groups_broker, "simple", {T: [0]}))[1] == {(T, 0): (-1, "", 0)}
    broker = groups_broker.reopen()
    assert "simple" not in broker.groups.groups and "g" in broker.groups.groups



@pytest.mark.parametrize("group_props", [{"offsets.topic.segment.bytes": "2048", "offsets.topic.num.partitions": "1"}])
async def test_the_cleaner_keeps_consumer_offsets_small(groups_broker, clock):
    await create_ok(groups_broker, T, 4)
    for n in range(300):
        await commit(groups_broker, "busy", {(T, p): n for p in range(4)})
    log_ = groups_broker.topics.partition(OFFSETS_TOPIC, 0).log
    before = log_.size_in_bytes
    LogCleaner(groups_broker.topics.manager, CleanerConfig(), clock=clock).run_once()
    assert log_.size_in_bytes < before / 5
    broker = groups_broker.reopen()
    assert (await fetch(broker, "busy", {T: [0, 3]}))[1] == {(T, 0): (299, "m", 0), (T, 3): (299, "m", 0)}


def test_record_layouts_and_partitioning():
    assert r.java_string_hash("hello") == 99162322 and r.java_string_hash("") == 0
    assert r.java_string_hash("polygenelubricants") == -(1 << 31)  # Java's famous MIN_VALUE hash
    assert r.partition_for("polygenelubricants", 50) == 0 and r.partition_for("hello", 50) == 22
    assert r.offset_key("g", "t", 3) == bytes.fromhex("0001" "0001" "67" "0001" "74" "00000003")
    assert r.parse_key(r.group_key("grp")) == r.GroupKey("grp")
    assert r.parse_key(b"\x00\x09rest") is None
    v3 = r.OffsetValue(offset=5, leader_epoch=2, metadata="m", commit_timestamp=7)
    assert r.offset_value(v3)[:2] == b"\x00\x03" and r.parse_offset_value(r.offset_value(v3)) == v3
    v1 = r.OffsetValue(offset=5, leader_epoch=-1, metadata="", commit_timestamp=7, expire_timestamp=9)
    assert r.offset_value(v1)[:2] == b"\x00\x01" and r.parse_offset_value(r.offset_value(v1)) == v1
    with pytest.raises(ValueError):
        r.parse_offset_value(b"\x00\x07")


async def test_group_gauges_follow_the_groups(groups_broker):
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    def gauges():
        text = generate_latest(groups_broker.metrics.registry).decode()
        prefix = "kafka_coordinator_group_groupmetadatamanager_"
        return {f.name[len(prefix):]: f.samples[0].value for f in text_string_to_metric_families(text)
                if f.name.startswith(prefix)}  # fmt: skip

    await create_ok(groups_broker, T, 2)
    await stable(groups_broker)
    await commit(groups_broker, "simple", {(T, 0): 1, (T, 1): 1})
    got = gauges()
    assert (got["numgroups"], got["numoffsets"], got["numgroupsstable"], got["numgroupsempty"]) == (2, 2, 1, 1)
    assert got["numgroupspreparingrebalance"] == got["numgroupscompletingrebalance"] == 0


async def _offset_delete(broker, group, pairs):
    Topic = sub(47, "OffsetDeleteRequestTopic")
    topics = {}
    for t, p in pairs:
        topics.setdefault(t, []).append(Topic.OffsetDeleteRequestPartition(partition_index=p))
    resp = await call(broker, 47, 0, req(47, group_id=group, topics=[Topic(name=t, partitions=ps)
                                                                  for t, ps in topics.items()]))  # fmt: skip
    return resp.error_code, {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def test_offset_delete(groups_broker):
    from ._group_client import protocols

    await create_ok(groups_broker, T, 2)
    await create_ok(groups_broker, "other", 1)

    async def delete(group, pairs):
        return await _offset_delete(groups_broker, group, pairs)

    joined = await join_new(groups_broker, protos=protocols(("range", subscription(T))))
    await sync(groups_broker, "g", 1, joined.member_id, {joined.member_id: b""})
    await commit(groups_broker, "g", {(T, 0): 1, ("other", 0): 2}, 1, joined.member_id)
    assert await delete("g", [(T, 0), ("other", 0), ("gone", 0)]) == (ErrorCode.NONE, {
        (T, 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): ErrorCode.NONE,
        ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})  # fmt: skip
    assert (await fetch(groups_broker, "g", None))[1] == {(T, 0): (1, "m", 0)}
    assert await delete("nope", [(T, 0)]) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
    assert await delete("", [(T, 0)]) == (ErrorCode.INVALID_GROUP_ID, {})
    tick(groups_broker, 10_001)  # the member expires: the group is empty, everything may go
    assert await delete("g", [(T, 0)]) == (ErrorCode.NONE, {(T, 0): ErrorCode.NONE})
    assert groups_broker.reopen().groups.groups["g"].offsets == {}


async def test_offset_delete_of_a_consumer_group_with_an_unreadable_subscription_deletes_nothing(groups_broker):
    """Kafka's ``ClassicGroup.isSubscribedToTopic``: when a live consumer group's subscriptions cannot be
    computed (a member's metadata does not parse), every topic counts as subscribed."""
    from ._group_client import protocols

    await create_ok(groups_broker, T, 1)
    await create_ok(groups_broker, "other", 1)
    joined = await join_new(groups_broker, protos=protocols(("range", b"opaque")))
    await sync(groups_broker, "g", 1, joined.member_id, {joined.member_id: b""})
    await commit(groups_broker, "g", {(T, 0): 1, ("other", 0): 2}, 1, joined.member_id)
    assert await _offset_delete(groups_broker, "g", [(T, 0), ("other", 0)]) == (ErrorCode.NONE, {
        (T, 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})  # fmt: skip
    assert (await fetch(groups_broker, "g", None))[1] == {(T, 0): (1, "m", 0), ("other", 0): (2, "m", 0)}


async def test_deleting_a_topic_deletes_its_committed_offsets(groups_broker):
    await create_ok(groups_broker, T, 1)
    await create_ok(groups_broker, "kept", 1)
    await commit(groups_broker, "s", {(T, 0): 3, ("kept", 0): 4})
    resp = await call(groups_broker, 20, 4, req(20, topic_names=[T], timeout_ms=1000))
    assert resp.responses[0].error_code == ErrorCode.NONE
    assert (await fetch(groups_broker, "s", None))[1] == {("kept", 0): (4, "m", 0)}
    assert (await fetch(groups_broker.reopen(), "s", None))[1] == {("kept", 0): (4, "m", 0)}



@pytest.mark.parametrize("group_props", [{"offset.metadata.max.bytes": "10"}])
async def test_offset_metadata_max_bytes_counts_java_chars(groups_broker):
    """Kafka's ``offset.metadata.max.bytes`` (``OffsetMetadataManager.isMetadataInvalid``) compares Java's
    ``String.length()``: UTF-16 units, so ten 3-byte characters fit where bytes would not, and an emoji
    (a surrogate pair) counts two. Before, the limit was a fixed 4096 UTF-8 bytes and the key stopped the start."""
    await create_ok(groups_broker, T, 1)
    ok, euro, emoji = "0123456789", "\u20ac" * 10, "\U0001f600" * 6  # 10, 10 (30 bytes), 12 units
    assert await commit(groups_broker, "s", {(T, 0): 1}, metadata=ok) == {(T, 0): ErrorCode.NONE}
    assert await commit(groups_broker, "s", {(T, 0): 2}, metadata=euro) == {(T, 0): ErrorCode.NONE}
    too_large = {(T, 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert await commit(groups_broker, "s", {(T, 0): 3}, metadata=emoji) == too_large
    assert await commit(groups_broker, "s", {(T, 0): 4}, metadata=ok + "x") == too_large
    assert (await fetch(groups_broker, "s", {T: [0]}))[1] == {(T, 0): (2, euro, 0)}
