"""KIP-1251: assignment epochs, and OffsetCommit from a member whose epoch was bumped under it.

Each partition a KIP-848 member holds carries the member epoch it was given
at; it keeps it across epoch bumps while it stays the member's. A commit
with the member's current epoch commits anything, a newer one nothing
(STALE_MEMBER_EPOCH); an older one (the heartbeat answer that bumped it was
not read yet, the race the Java client 4.3 loses on a busy machine) commits
when every partition in it was the member's at that epoch already, else
the whole request is refused, as Kafka's per-partition validator refuses it.
Unit tests of ``reconcile`` and ``consumer_offsets.commit_error`` first, then
the same over the wire (our encoder, a real broker with a hand-driven clock),
then across a restart (the epochs are stored in the current-assignment
record).
"""

from __future__ import annotations

import uuid

import attrs
import pytest

from broker.groups import consumer_records as cr
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.consumer_member import STABLE, UNREVOKED, ClassicMetadata, ConsumerMember, Target, reconcile
from broker.groups.consumer_offsets import commit_error, fetch_error
from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._consumer_group_client import heartbeat, make_topic, owned, parts, ready
from ._group_client import clock, fetch, group_props, groups_broker  # noqa: F401  (fixtures)

T = uuid.UUID("00000000-0000-0000-0000-0000000000aa")
STALE, ILLEGAL = ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.ILLEGAL_GENERATION


def target(epoch: int, *partitions: int, owners: dict | None = None) -> Target:
    owner_epochs = owners or {}
    return Target(epoch, {T: frozenset(partitions)}, frozenset({T}), lambda t, p: owner_epochs.get(p, -1))


# -- how the epochs move (``reconcile``, Kafka's CurrentAssignmentBuilder) ------------------------------------


def test_a_partition_kept_across_bumps_keeps_its_epoch_and_a_new_one_takes_the_target_epoch():
    m = ConsumerMember("a", member_epoch=1, assigned={T: frozenset({0, 1})}, assignment_epochs={(T, 0): 1, (T, 1): 1})
    m = reconcile(m, target(2, 0, 1), False, [(T, [0, 1])])
    assert (m.member_epoch, m.assignment_epochs) == (2, {(T, 0): 1, (T, 1): 1})
    m = reconcile(m, target(3, 0, 1, 2), False, [(T, [0, 1])])
    assert (m.state, m.member_epoch, m.assignment_epochs) == (STABLE, 3, {(T, 0): 1, (T, 1): 1, (T, 2): 3})


def test_revoking_keeps_the_epochs_and_a_partition_back_from_revocation_is_new():
    m = ConsumerMember("a", member_epoch=4, assigned={T: frozenset({0, 1})}, assignment_epochs={(T, 0): 2, (T, 1): 3})
    m = reconcile(m, target(5, 0), False, [(T, [0, 1])])
    assert (m.state, m.member_epoch, m.assignment_epochs) == (UNREVOKED, 4, {(T, 0): 2, (T, 1): 3})
    assert m.assignment_epoch(T, 1) == 3 and m.assignment_epoch(T, 2) is None  # pending revocation: still held
    m = reconcile(m, target(6, 0, 1), False, [(T, [0])])  # revoked; the target gives 1 back
    assert (m.state, m.member_epoch, m.assignment_epochs) == (STABLE, 6, {(T, 0): 2, (T, 1): 6})


def test_a_partition_released_later_takes_the_epoch_the_member_is_at():
    m = ConsumerMember("b", member_epoch=1)
    m = reconcile(m, target(2, 0, 1, owners={1: 1}), False, [])  # 1 is still another member's
    assert (m.member_epoch, m.assignment_epochs) == (2, {(T, 0): 2})
    m = reconcile(m, target(2, 0, 1), False, [(T, [0])])
    assert (m.state, m.assignment_epochs) == (STABLE, {(T, 0): 2, (T, 1): 2})


# -- the commit rule (``commit_error``) -----------------------------------------------------------------------


def group_of(member: ConsumerMember) -> ConsumerGroup:
    group = ConsumerGroup("g", group_epoch=member.member_epoch, assignment_epoch=member.member_epoch)
    group.replace_member(None, member, 0)
    return group


def member_a() -> ConsumerMember:
    """At epoch 5: partition 0 since 2, 1 since 5, 2 pending revocation since 3; 3 is not its own."""
    return ConsumerMember("a", member_epoch=5, previous_member_epoch=3, assigned={T: frozenset({0, 1})},
                          pending_revocation={T: frozenset({2})}, assignment_epochs={(T, 0): 2, (T, 1): 5, (T, 2): 3})


@pytest.mark.parametrize("epoch,partitions,expected", [
    (5, [0, 1, 2, 3], None),  # its epoch: anything, as before
    (6, [0], STALE),  # newer than its epoch: refused, as before
    (4, [0], None),  # older: 0 was its own since 2 (the old rule refused this)
    (3, [0, 2], None),  # 2 is pending revocation, held since 3
    (2, [0], None),  # the very epoch 0 was given at
    (1, [0], STALE),  # before 0 was given
    (4, [1], STALE),  # 1 was given at 5: newly assigned at the bump
    (4, [3], STALE),  # not its own
    (4, [0, 1], STALE),  # one partition refused: the whole request is
    (4, [], None),  # nothing to check (every partition was answered before the group)
])  # fmt: skip
def test_commit_rule(epoch, partitions, expected):
    assert commit_error(group_of(member_a()), "a", None, epoch, [(T, p) for p in partitions]) == expected


def test_a_topic_that_is_gone_is_not_held():
    assert commit_error(group_of(member_a()), "a", None, 4, [(None, 0)]) == STALE


def test_classic_members_and_transactional_commits_answer_illegal_generation():
    """Kafka applies the same validator to a classic member of the group (its epoch is its generation) and to
    TxnOffsetCommit, whose refusals are ILLEGAL_GENERATION."""
    classic = attrs.evolve(member_a(), classic=ClassicMetadata(45_000, [("range", b"")]))
    for member, transactional in ((classic, False), (member_a(), True), (classic, True)):
        group = group_of(member)
        assert commit_error(group, "a", None, 4, [(T, 0)], version=7, transactional=transactional) is None
        assert commit_error(group, "a", None, 4, [(T, 1)], version=7, transactional=transactional) == ILLEGAL
        assert commit_error(group, "a", None, 6, [(T, 0)], version=7, transactional=transactional) == ILLEGAL


def test_offset_fetch_still_wants_the_current_epoch():
    assert fetch_error(group_of(member_a()), "a", 4) == STALE and fetch_error(group_of(member_a()), "a", 5) is None


def test_a_static_member_leaving_for_now_holds_its_partitions_from_epoch_0():
    """Kafka resets the assignment epochs of a static member that leaves with -2 (the member that comes back
    with its instance id takes its partitions from epoch 0)."""
    member = ConsumerMember("s", instance_id="i", member_epoch=-2, assigned={T: frozenset({0})})
    assert member.assignment_epochs == {(T, 0): 0}


# -- over the wire ---------------------------------------------------------------------------------------------


async def bumped_pair(broker):
    """a alone at epoch 1 with all 4 partitions; b joins (epoch 2); a revokes 2 and 3 and its heartbeat moves it
    to epoch 2 (keeping 0 and 1 from epoch 1); b takes 2 and 3 at epoch 2."""
    tid = await make_topic(broker, "t", 4)
    await ready(broker)
    a = await heartbeat(broker, "a")
    b = await heartbeat(broker, "b")
    a = await heartbeat(broker, "a", 1, owned_partitions=owned(a.assignment))
    assert (a.member_epoch, parts(a.assignment)) == (1, {tid: [0, 1]})  # revoking 2, 3 at epoch 1
    bumped = await heartbeat(broker, "a", 1, owned_partitions=owned(a.assignment))
    assert bumped.member_epoch == 2  # the answer a client may not have read when it commits
    b = await heartbeat(broker, "b", 2, owned_partitions=[])
    assert parts(b.assignment) == {tid: [2, 3]}
    return tid, a, b


async def commit(broker, group: str, wanted: dict, epoch: int, member_id: str, version: int = 9) -> dict:
    """OffsetCommit of ``wanted`` ({(topic, partition): offset}; v10 names the topics by id); returns
    {(topic, partition): error}."""
    Topic = sub(8, "OffsetCommitRequestTopic")
    by_topic: dict = {}
    for (t, p), off in wanted.items():
        by_topic.setdefault(t, []).append(Topic.OffsetCommitRequestPartition(partition_index=p, committed_offset=off))
    topics = [Topic(name=t, topic_id=broker.topics.get(t).topic_id, partitions=ps) for t, ps in by_topic.items()]
    body = req(8, group_id=group, generation_id_or_member_epoch=epoch, member_id=member_id, topics=topics)
    resp = await call(broker, 8, version, body)
    names = broker.topics.names_by_id()
    return {(t.name or names[t.topic_id], p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def offsets(broker) -> dict:
    _error, found = await fetch(broker, "cg", {"t": [0, 1, 2, 3]})
    return {p: off for (_t, p), (off, _meta, _e) in found.items()}


@pytest.mark.parametrize("version", [9, 10])
async def test_a_commit_with_the_epoch_before_the_bump_keeps_what_it_held(groups_broker, version):
    await bumped_pair(groups_broker)
    got = await commit(groups_broker, "cg", {("t", 0): 10, ("t", 1): 11}, 1, "a", version)
    assert got == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}  # STALE_MEMBER_EPOCH before KIP-1251
    got = await commit(groups_broker, "cg", {("t", 0): 20, ("t", 2): 21}, 1, "a", version)
    assert got == {("t", 0): STALE, ("t", 2): STALE}  # 2 is b's now: nothing of the request is committed
    assert await commit(groups_broker, "cg", {("t", 2): 30}, 1, "b", version) == {("t", 2): STALE}
    assert await commit(groups_broker, "cg", {("t", 0): 40}, 3, "a", version) == {("t", 0): STALE}
    assert await offsets(groups_broker) == {0: 10, 1: 11, 2: -1, 3: -1}


async def test_a_partition_given_at_the_bump_is_refused_with_the_epoch_before(groups_broker):
    tid, a, b = await bumped_pair(groups_broker)
    left = await heartbeat(groups_broker, "b", -1)
    assert left.error_code == 0  # the group epoch goes to 3; a gets 2 and 3 at its next heartbeat
    a = await heartbeat(groups_broker, "a", 2, owned_partitions=owned(a.assignment))
    assert (a.member_epoch, parts(a.assignment)) == (3, {tid: [0, 1, 2, 3]})
    assert await commit(groups_broker, "cg", {("t", 0): 5, ("t", 1): 6}, 2, "a") == {
        ("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}  # fmt: skip
    assert await commit(groups_broker, "cg", {("t", 2): 7}, 2, "a") == {("t", 2): STALE}
    assert await commit(groups_broker, "cg", {("t", 2): 7}, 3, "a") == {("t", 2): ErrorCode.NONE}


async def test_the_epochs_survive_a_restart(groups_broker):
    tid, _a, _b = await bumped_pair(groups_broker)
    held = {m: groups_broker.groups.groups["cg"].members[m].assignment_epochs for m in ("a", "b")}
    assert held == {"a": {(tid, 0): 1, (tid, 1): 1}, "b": {(tid, 2): 2, (tid, 3): 2}}
    broker = groups_broker.reopen()
    assert {m: broker.groups.groups["cg"].members[m].assignment_epochs for m in ("a", "b")} == held
    got = await commit(broker, "cg", {("t", 0): 10, ("t", 1): 11}, 1, "a")
    assert got == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    assert await commit(broker, "cg", {("t", 2): 12}, 1, "b") == {("t", 2): STALE}


async def test_a_record_without_epochs_holds_the_partitions_from_the_member_epoch(groups_broker):
    """A current-assignment record of before KIP-1251 (Kafka before 4.3, minibroker before): its partitions are
    held from the record's member epoch, as Kafka reads it."""
    tid, _a, _b = await bumped_pair(groups_broker)
    group = groups_broker.groups.groups["cg"]
    old = cr.current_value(group.members["a"])
    for tps in (old.assigned_partitions, old.partitions_pending_revocation):
        for tp in tps:
            tp.assignment_epochs = []  # the tagged field left out, as the old code wrote it
    row = (cr.key(cr.CURRENT, "cg", "a"), cr.encode(cr.CURRENT, old))
    assert await groups_broker.groups.store.write("cg", [row]) is None
    broker = groups_broker.reopen()
    assert broker.groups.groups["cg"].members["a"].assignment_epochs == {(tid, 0): 2, (tid, 1): 2}
    assert await commit(broker, "cg", {("t", 0): 10}, 1, "a") == {("t", 0): STALE}
    assert await commit(broker, "cg", {("t", 0): 10}, 2, "a") == {("t", 0): ErrorCode.NONE}
