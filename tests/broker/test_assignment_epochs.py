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

from broker.groups.consumer_member import STABLE, UNREVOKED, ConsumerMember, Target, reconcile

T = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


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


def test_a_static_member_leaving_for_now_holds_its_partitions_from_epoch_0():
    """Kafka resets the assignment epochs of a static member that leaves with -2 (the member that comes back
    with its instance id takes its partitions from epoch 0)."""
    member = ConsumerMember("s", instance_id="i", member_epoch=-2, assigned={T: frozenset({0})})
    assert member.assignment_epochs == {(T, 0): 0}
