"""KIP-848 consumer groups across a broker restart: stored in ``__consumer_offsets`` and replayed at load.

A real broker with a hand-driven clock (``groups_broker``), reopened on the
same directory (``reopen``): members keep their ids, epochs, target and
current assignments and carry on heartbeating; those that do not come back
are fenced once their session timeout has passed since the load, and until
then their partitions go to nobody else; a left member's tombstones mean
it is gone; a deleted group's tombstones (Kafka's, in Kafka's order) mean it
is gone; the cleaner's compaction of ``__consumer_offsets`` (tombstones
removed too) replays to the same groups.
"""

from __future__ import annotations

import types

import attrs
import pytest

from broker.groups import consumer_records as cr
from broker.groups.consumer_member import ConsumerMember
from broker.groups.store import OFFSETS_TOPIC, Loaded
from cleaner.service import CleanerConfig, LogCleaner
from protocol import ErrorCode

from ._admin_client import call, req
from ._consumer_group_client import describe, heartbeat, make_topic, owned, parts, ready
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_consumer_group_integration import commit, fetch

SESSION_MS = 45_000


async def two_stable_members(broker):
    """a and b in group cg, topic t (4 partitions), both reconciled at epoch 2; returns (tid, a, b)."""
    tid = await make_topic(broker, "t", 4)
    await ready(broker)
    a = await heartbeat(broker, "a")
    b = await heartbeat(broker, "b")
    a = await heartbeat(broker, "a", 1, owned_partitions=owned(a.assignment))  # revokes two
    done = await heartbeat(broker, "a", 1, owned_partitions=owned(a.assignment))
    b = await heartbeat(broker, "b", 2, owned_partitions=[])
    assert (done.member_epoch, done.assignment, b.member_epoch) == (2, None, 2)
    assert sorted(parts(a.assignment)[tid] + parts(b.assignment)[tid]) == [0, 1, 2, 3]
    return tid, types.SimpleNamespace(member_epoch=2, assignment=a.assignment), b


def snapshot(broker, group_id: str = "cg"):
    g = broker.groups.groups[group_id]
    return (g.group_epoch, g.assignment_epoch, g.metadata_hash, g.state, dict(g.members), g.target,
            g.partition_epochs, g.static_members, g.offsets)  # fmt: skip


def described(group) -> tuple:
    members = sorted((m.member_id, m.member_epoch, m.client_id, tuple(m.subscribed_topic_names),
                      str(parts(m.assignment)), str(parts(m.target_assignment))) for m in group.members)  # fmt: skip
    return group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name, members


def records(broker, group_id: str = "cg") -> list[tuple[int, str | None, bool]]:
    """The group's KIP-848 records in the log: (type, member id, has a value), in log order."""
    out = []
    for entry in broker.groups.store.load():
        if isinstance(entry, Loaded) and isinstance(entry.key, cr.ConsumerKey) and entry.key.group == group_id:
            out.append((entry.key.type, entry.key.member_id, entry.value is not None))
    return out


async def test_members_carry_on_across_a_restart(groups_broker):
    tid, a, b = await two_stable_members(groups_broker)
    assert await commit(groups_broker, "a", 2, offset=9) == ErrorCode.NONE
    (before,) = await describe(groups_broker, "cg")
    kept = snapshot(groups_broker)
    broker = groups_broker.reopen()
    assert snapshot(broker) == kept
    (after,) = await describe(broker, "cg")
    assert described(after) == described(before) and after.group_state == "Stable"
    for member, answer in (("a", a), ("b", b)):
        again = await heartbeat(broker, member, 2, owned_partitions=owned(answer.assignment))
        assert (again.error_code, again.member_id, again.member_epoch, again.assignment) == (0, member, 2, None)
    full = await heartbeat(broker, "a", 2, topics=["t"], rebalance=30_000, owned_partitions=owned(a.assignment))
    assert (full.member_epoch, parts(full.assignment)) == (2, parts(a.assignment))  # the same assignment
    assert snapshot(broker)[:2] == (2, 2)  # no epoch bump
    assert await fetch(broker, "a", 2) == (ErrorCode.NONE, [9])
    assert await commit(broker, "b", 2, offset=10) == ErrorCode.NONE  # b is a member: its epoch is checked
    assert await commit(broker, "b", 1, offset=10) == ErrorCode.STALE_MEMBER_EPOCH
    await broker.groups.store_consumer_groups()
    assert len(records(broker)) == len(records(groups_broker.reopen()))  # nothing rewritten after the load


async def test_a_member_that_does_not_come_back_is_fenced_after_its_session(groups_broker):
    tid, a, b = await two_stable_members(groups_broker)
    broker = groups_broker.reopen()
    broker.clock.now += 10_000
    assert (await heartbeat(broker, "a", 2, owned_partitions=owned(a.assignment))).error_code == 0
    c = await heartbeat(broker, "c")  # joins while b may still be reading its partitions
    assert (c.error_code, c.member_epoch, parts(c.assignment)) == (0, 3, {})
    broker.clock.now += SESSION_MS - 10_001
    broker.groups.consumer.tick()
    for _ in range(2):  # a revokes what c's target takes from it, if anything
        answer = await heartbeat(broker, "a", 2, owned_partitions=owned(a.assignment))
        assert answer.error_code == 0
        a = answer if answer.assignment is not None else a
    c = await heartbeat(broker, "c", 3, owned_partitions=[])
    owners = broker.groups.groups["cg"].partition_epochs
    assert {p for (t, p) in owners if t == tid} == {0, 1, 2, 3} and "b" in broker.groups.groups["cg"].members
    assert not set((parts(c.assignment) or {}).get(tid, [])) & set(parts(b.assignment)[tid])  # b's: nobody else's
    broker.clock.now += 1  # b's session since the load
    broker.groups.consumer.tick()
    assert "b" not in broker.groups.groups["cg"].members
    gone = await heartbeat(broker, "b", 2, owned_partitions=owned(b.assignment))
    assert (gone.error_code, gone.error_message) == (
        ErrorCode.UNKNOWN_MEMBER_ID, "Member b is not a member of group cg.")
    await broker.groups.store_consumer_groups()
    assert records(broker)[-4:-1] == [(cr.CURRENT, "b", False), (cr.TARGET_MEMBER, "b", False), (cr.MEMBER, "b", False)]
    assert "b" not in groups_broker.reopen().groups.groups["cg"].members


async def test_a_left_member_is_gone_after_a_restart(groups_broker):
    tid, a, b = await two_stable_members(groups_broker)
    left = await heartbeat(groups_broker, "b", -1, owned_partitions=owned(b.assignment))
    assert (left.error_code, left.member_epoch) == (0, -1)
    assert records(groups_broker)[-4:] == [(cr.CURRENT, "b", False), (cr.TARGET_MEMBER, "b", False),
                                           (cr.MEMBER, "b", False), (cr.GROUP, None, True)]  # fmt: skip
    broker = groups_broker.reopen()
    (g,) = await describe(broker, "cg")
    assert ([m.member_id for m in g.members], g.group_epoch) == (["a"], 3)
    back = await heartbeat(broker, "b", 2, owned_partitions=[])
    assert back.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    a = await heartbeat(broker, "a", 2, owned_partitions=owned(a.assignment))
    assert (a.member_epoch, parts(a.assignment)) == (3, {tid: [0, 1, 2, 3]})


async def test_a_static_member_that_left_for_now_takes_its_place_back_after_a_restart(groups_broker):
    tid = await make_topic(groups_broker, "t", 2)
    await ready(groups_broker)
    s = await heartbeat(groups_broker, "s1", instance="inst", rack="r1", assignor="range")
    parked = await heartbeat(groups_broker, "s1", -2, instance="inst", owned_partitions=owned(s.assignment))
    assert parked.member_epoch == -2
    broker = groups_broker.reopen()
    member = broker.groups.groups["cg"].members["s1"]
    assert (member.member_epoch, member.instance_id, member.rack_id, member.server_assignor) == (
        -2, "inst", "r1", "range")
    again = await heartbeat(broker, "s2", instance="inst", assignor="range")
    assert (again.error_code, again.member_epoch, parts(again.assignment)) == (0, 1, {tid: [0, 1]})
    assert list(groups_broker.reopen().groups.groups["cg"].members) == ["s2"]


async def test_a_deleted_group_is_tombstoned_as_kafka_does(groups_broker):
    tid, a, b = await two_stable_members(groups_broker)
    for member, answer in (("a", a), ("b", b)):
        await heartbeat(groups_broker, member, -1, owned_partitions=owned(answer.assignment))
    resp = await call(groups_broker, 42, 2, req(42, groups_names=["cg"]))
    assert resp.results[0].error_code == ErrorCode.NONE
    assert records(groups_broker)[-3:] == [(cr.TARGET_EPOCH, None, False), (cr.PARTITION_METADATA, None, False),
                                           (cr.GROUP, None, False)]  # fmt: skip
    broker = groups_broker.reopen()
    assert "cg" not in broker.groups.groups
    (g,) = await describe(broker, "cg")
    assert g.error_code == ErrorCode.GROUP_ID_NOT_FOUND


async def churn(broker):
    """Joins, revocations, a leave, a fenced member, a deleted group and a rejoin: many records per key."""
    tid, a, b = await two_stable_members(broker)
    await heartbeat(broker, "b", -1, owned_partitions=owned(b.assignment))
    a = await heartbeat(broker, "a", 2, owned_partitions=owned(a.assignment))
    c = await heartbeat(broker, "c")
    for _ in range(20):  # a and c settle at epoch 4, and keep heartbeating
        a = await heartbeat(broker, "a", a.member_epoch, owned_partitions=owned(a.assignment) if a.assignment
                            else None)  # fmt: skip
        c = await heartbeat(broker, "c", c.member_epoch, owned_partitions=owned(c.assignment) if c.assignment
                            else None)  # fmt: skip
    d = await heartbeat(broker, "d", group="other")
    await heartbeat(broker, "d", -1, group="other", owned_partitions=owned(d.assignment))
    assert (await call(broker, 42, 2, req(42, groups_names=["other"]))).results[0].error_code == 0
    await heartbeat(broker, "e")
    broker.clock.now += SESSION_MS
    await heartbeat(broker, "a", a.member_epoch, owned_partitions=None)
    await heartbeat(broker, "c", c.member_epoch, owned_partitions=None)
    broker.groups.consumer.tick()  # e never heartbeated again: fenced
    await broker.groups.store_consumer_groups()


@pytest.mark.parametrize("group_props", [{"offsets.topic.segment.bytes": "1024", "offsets.topic.num.partitions": "1"}])
async def test_a_compacted_log_replays_to_the_same_groups(groups_broker, clock):
    await churn(groups_broker)
    kept = snapshot(groups_broker)
    assert set(kept[4]) == {"a", "c"}
    log_ = groups_broker.topics.partition(OFFSETS_TOPIC, 0).log
    before = log_.size_in_bytes
    cleaner = LogCleaner(groups_broker.topics.manager, CleanerConfig(), clock=clock)
    assert cleaner.run_once()
    for round_ in range(2):  # a tombstone gets its delete horizon when first cleaned, goes once it passed
        clock.now += 86_400_000 + 1  # delete.retention.ms
        for n in range(10):  # another group's records make the log worth cleaning again
            f = await heartbeat(groups_broker, f"f{round_}-{n}", group="x")
            await heartbeat(groups_broker, f"f{round_}-{n}", -1, group="x", owned_partitions=owned(f.assignment))
        assert cleaner.run_once()
    assert log_.size_in_bytes < before
    kinds = records(groups_broker, "other") + [r for r in records(groups_broker) if r[1] in ("b", "e")]
    assert kinds == []  # the deleted group and the gone members left nothing once tombstones expired
    broker = groups_broker.reopen()
    assert snapshot(broker) == kept
    assert "other" not in broker.groups.groups


async def test_records_of_before_members_were_stored_are_cleaned_up(groups_broker):
    """minibroker once stored only the epoch (3) and current assignments (8): such a member is dropped at load
    (as it was before: it gets UNKNOWN_MEMBER_ID and rejoins) and its record deleted at the next store."""
    tid = await make_topic(groups_broker, "t", 2)
    await ready(groups_broker)
    old = attrs.evolve(ConsumerMember("old"), member_epoch=5, assigned={tid: frozenset({0, 1})})
    rows = [(cr.key(cr.GROUP, "cg"), cr.encode(cr.GROUP, cr.GroupValue(5, 0))),
            (cr.key(cr.CURRENT, "cg", "old"), cr.encode(cr.CURRENT, cr.current_value(old)))]  # fmt: skip
    assert await groups_broker.groups.store.write("cg", rows) is None
    broker = groups_broker.reopen()
    group = broker.groups.groups["cg"]
    assert (group.group_epoch, group.members, group.partition_epochs) == (5, {}, {})
    await broker.groups.store_consumer_groups()
    assert records(broker)[-2:] == [(cr.CURRENT, "old", False), (cr.TARGET_EPOCH, None, True)]
    gone = await heartbeat(broker, "old", 5, owned_partitions=[])
    assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    back = await heartbeat(broker, "old")
    assert (back.member_epoch, parts(back.assignment)) == (6, {tid: [0, 1]})


async def test_a_regex_subscription_carries_on_across_a_restart(groups_broker):
    tid = await make_topic(groups_broker, "t1", 2)
    await ready(groups_broker)
    joined = await heartbeat(groups_broker, "r", topics=None, regex="t.*")
    assert (joined.member_epoch, parts(joined.assignment)) == (1, {tid: [0, 1]})
    broker = groups_broker.reopen()
    assert broker.groups.groups["cg"].resolved_regexes == {"t.*": frozenset({"t1"})}  # resolved at load
    again = await heartbeat(broker, "r", 1, owned_partitions=owned(joined.assignment))
    assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None)
    assert broker.groups.groups["cg"].group_epoch == 1  # the same topics: the metadata hash did not change
    tid2 = await make_topic(broker, "t2", 1)
    grown = await heartbeat(broker, "r", 1, owned_partitions=owned(joined.assignment))
    assert (grown.member_epoch, parts(grown.assignment)) == (2, {tid: [0, 1], tid2: [0]})


async def test_steady_heartbeats_encode_no_record_and_a_change_stores_only_its_record(groups_broker, monkeypatch):
    """Kafka writes a record only when its content changes: a stable member's heartbeats (light or full) encode
    nothing; a new rack id writes that member's metadata record alone, and it survives a restart."""
    tid, a, b = await two_stable_members(groups_broker)
    encoded: list[int] = []
    real_encode = cr.encode
    monkeypatch.setattr(cr, "encode", lambda type_, value: encoded.append(type_) or real_encode(type_, value))
    logged = records(groups_broker)
    for _ in range(3):
        for member, answer in (("a", a), ("b", b)):
            light = await heartbeat(groups_broker, member, 2, owned_partitions=owned(answer.assignment))
            full = await heartbeat(groups_broker, member, 2, topics=["t"], rebalance=30_000,
                                   owned_partitions=owned(answer.assignment))  # fmt: skip
            assert (light.error_code, light.member_epoch, full.error_code, full.member_epoch) == (0, 2, 0, 2)
    assert encoded == [] and groups_broker.groups.consumer.dirty == set()
    assert records(groups_broker) == logged
    racked = await heartbeat(groups_broker, "a", 2, rack="rack-1", owned_partitions=owned(a.assignment))
    assert (racked.error_code, racked.member_epoch) == (0, 2)
    assert sorted(encoded) == [cr.MEMBER, cr.TARGET_MEMBER, cr.CURRENT]  # a's records: only the first differs
    assert records(groups_broker) == [*logged, (cr.MEMBER, "a", True)]
    broker = groups_broker.reopen()
    assert broker.groups.groups["cg"].members["a"].rack_id == "rack-1"
