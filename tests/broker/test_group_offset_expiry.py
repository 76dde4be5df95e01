"""Committed offsets expiring (KIP-211), and what decides when.

``offsets.retention.minutes`` from the commit (or from when the group became
empty), an explicit retention of OffsetCommit v2-4 (Kafka's
``expireTimestampMs``: only -1 means none), v1's per-partition commit
timestamp, and Kafka's ``offsetExpirationCondition`` for groups with members:
a Stable consumer group whose subscriptions parse expires the offsets of
topics nobody subscribes to, any other group with members keeps them all.
``groups.expire_offsets()`` runs the check the timers would.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import call, create_ok, req, sub
from ._group_client import (  # noqa: F401  (fixtures)
    clock, commit, fetch, group_props, groups_broker, heartbeat, join_new, stable, subscription, sync, tick,
)  # fmt: skip

T = "orders"


async def test_offsets_expire_per_kip_211(groups_broker):
    await create_ok(groups_broker, T, 2)
    retention = groups_broker.config.offsets_retention_minutes * 60_000
    await commit(groups_broker, "simple", {(T, 0): 1})
    await commit(groups_broker, "explicit", {(T, 0): 1}, version=2, retention=1000)
    member = await stable(groups_broker)
    await commit(groups_broker, "g", {(T, 1): 2}, 1, member.member_id)
    tick(groups_broker, 1001)
    await groups_broker.groups.expire_offsets()
    assert "explicit" not in groups_broker.groups.groups and "simple" in groups_broker.groups.groups
    tick(groups_broker, retention)  # the member stopped heartbeating long ago: the group is empty now
    await groups_broker.groups.expire_offsets()
    assert "simple" not in groups_broker.groups.groups
    assert (await fetch(groups_broker, "g", {T: [1]}))[1] == {(T, 1): (2, "m", 0)}  # empty only since now
    tick(groups_broker, retention)
    await groups_broker.groups.expire_offsets()
    assert groups_broker.groups.groups == {}
    assert groups_broker.reopen().groups.groups == {}


async def test_v1_commit_timestamp_is_stored_and_counts_for_expiry(groups_broker):
    """OffsetCommit v1's per-partition commit timestamp is kept as the commit's time (Kafka's
    ``OffsetAndMetadata.fromRequest``), -1 meaning the broker's clock: a "simple" group's offset committed with
    a time older than the retention expires at the next check."""
    await create_ok(groups_broker, T, 2)
    retention = groups_broker.config.offsets_retention_minutes * 60_000
    now = groups_broker.clock.now
    Topic = sub(8, "OffsetCommitRequestTopic")
    Part = Topic.OffsetCommitRequestPartition
    parts = [Part(partition_index=0, committed_offset=4, commit_timestamp=now - retention - 1),
             Part(partition_index=1, committed_offset=6, commit_timestamp=-1)]  # fmt: skip
    body = req(8, group_id="old", generation_id_or_member_epoch=-1, member_id="",
               topics=[Topic(name=T, partitions=parts)])  # fmt: skip
    resp = await call(groups_broker, 8, 1, body)
    assert [p.error_code for p in resp.topics[0].partitions] == [0, 0]
    stored = groups_broker.groups.groups["old"].offsets
    assert (stored[(T, 0)].commit_timestamp, stored[(T, 1)].commit_timestamp) == (now - retention - 1, now)
    await groups_broker.groups.expire_offsets()
    assert (await fetch(groups_broker, "old", {T: [0, 1]}))[1] == {(T, 0): (-1, "", 0), (T, 1): (6, "", 0)}
    assert groups_broker.reopen().groups.groups["old"].offsets[(T, 1)].commit_timestamp == now


async def test_a_negative_retention_other_than_minus_one_expires_at_once(groups_broker):
    """Kafka's ``expireTimestampMs``: only -1 (DEFAULT_RETENTION_TIME) means no explicit expiry; any other
    v2-4 retention_time_ms, a negative one too, is added to the clock, so the offset is already due."""
    await create_ok(groups_broker, T, 2)
    assert await commit(groups_broker, "past", {(T, 0): 3}, version=2, retention=-1000) == {(T, 0): 0}
    assert await commit(groups_broker, "past", {(T, 1): 4}, version=2, retention=-1) == {(T, 1): 0}
    now = groups_broker.clock.now
    stored = groups_broker.groups.groups["past"].offsets
    assert (stored[(T, 0)].expire_timestamp, stored[(T, 1)].expire_timestamp) == (now - 1000, -1)
    await groups_broker.groups.expire_offsets()
    assert (await fetch(groups_broker, "past", {T: [0, 1]}))[1] == {(T, 0): (-1, "", 0), (T, 1): (4, "m", 0)}


async def test_a_retention_past_the_end_of_time_keeps_the_offset(groups_broker):
    """Found by the handler fuzz: v2-4 retention_time_ms near 2^63 overflowed the stored expiry and the
    commit dropped the connection. Kafka's sum wraps (the offset expires at once); ours stops at the maximum."""
    await create_ok(groups_broker, T, 1)
    forever = 2**63 - 1
    assert await commit(groups_broker, "forever", {(T, 0): 7}, version=2, retention=forever) == {(T, 0): 0}
    assert groups_broker.groups.groups["forever"].offsets[(T, 0)].expire_timestamp == forever
    tick(groups_broker, 10**12)
    await groups_broker.groups.expire_offsets()
    assert (await fetch(groups_broker.reopen(), "forever", {T: [0]}))[1] == {(T, 0): (7, "m", 0)}

async def _live_member_for(broker, minutes: int, protos, ptype="consumer") -> None:
    """A member joined with ``protos`` that heartbeats for ``minutes`` (the session is 30 s)."""
    joined = await join_new(broker, protos=protos, session=30_000, ptype=ptype)
    await sync(broker, "g", joined.generation_id, joined.member_id, {joined.member_id: b""})
    await commit(broker, "g", {(T, 0): 3, ("old", 0): 7}, joined.generation_id, joined.member_id)
    await commit(broker, "g", {("kept", 0): 1}, joined.generation_id, joined.member_id, version=2, retention=1000)
    for _ in range(minutes * 3):
        tick(broker, 20_000)
        assert await heartbeat(broker, "g", joined.generation_id, joined.member_id) == ErrorCode.NONE
    await broker.groups.expire_offsets()


@pytest.mark.parametrize("group_props", [{"offsets.retention.minutes": "1"}])
async def test_a_stable_consumer_group_expires_the_offsets_of_topics_nobody_subscribes(groups_broker):
    """Kafka's ``offsetExpirationCondition`` for a Stable group of the consumer protocol: the offsets of
    topics no member subscribes to expire from their commit (or at their explicit expiry), the others stay."""
    from ._group_client import protocols

    for topic in (T, "old", "kept"):
        await create_ok(groups_broker, topic, 1)
    await _live_member_for(groups_broker, 2, protocols(("range", subscription(T, "kept"))))
    assert (await fetch(groups_broker, "g", None))[1] == {(T, 0): (3, "m", 0), ("kept", 0): (1, "m", 0)}
    assert (await fetch(groups_broker.reopen(), "g", None))[1] == {(T, 0): (3, "m", 0), ("kept", 0): (1, "m", 0)}


@pytest.mark.parametrize("protos", [[("range", b"\x00\x00\x00\x00\x00\x09orders")], [("range", b"opaque")]])
@pytest.mark.parametrize("ptype", ["consumer", "connect"])
@pytest.mark.parametrize("group_props", [{"offsets.retention.minutes": "1"}])
async def test_a_group_with_members_and_no_known_subscriptions_keeps_every_offset(groups_broker, protos, ptype):
    """An explicit retention (OffsetCommit v2-4) does not expire an offset of an active group either: Kafka
    expires nothing of a non-empty group unless it is a Stable consumer group whose subscriptions parse."""
    from ._group_client import protocols

    for topic in (T, "old", "kept"):
        await create_ok(groups_broker, topic, 1)
    await _live_member_for(groups_broker, 2, protocols(*protos), ptype)
    want = {(T, 0): (3, "m", 0), ("old", 0): (7, "m", 0), ("kept", 0): (1, "m", 0)}
    assert (await fetch(groups_broker, "g", None))[1] == want
