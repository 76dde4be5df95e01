"""A member of a KIP-848 consumer group, and how its assignment moves toward its target.

``ConsumerMember`` is plain data, replaced (``attrs.evolve``) rather than
changed, as Kafka's ``ConsumerGroupMember`` is built anew on every change:
the group compares the old and the new member to see what changed.
Assignments map topic ids to partition sets (``Assignment``); the subscribed
topic names are kept sorted, each once, whatever the member was made from.

``reconcile`` is Kafka's ``CurrentAssignmentBuilder``: a member in state
``stable`` whose epoch is behind the target assignment's moves toward it;
partitions it must give up become *pending revocation* and the member
waits in ``unrevoked_partitions`` (at its old epoch) until its heartbeat no
longer reports them as owned; then it takes the target epoch and the new
partitions, except those another member still owns (a partition epoch
other than -1): those are withheld (``unreleased_partitions``) and given at
a later heartbeat, once released. A changed subscription drops the
partitions of topics no longer subscribed at once (to be revoked).

Assignment epochs (KIP-1251): each partition the member holds, assigned or
pending revocation, carries the member epoch it was given at
(``assignment_epochs``). A partition that stays assigned across epoch bumps
keeps its epoch; one given in a step (a partition coming back from pending
revocation too) takes the epoch the member moves to. A member made without
epochs for some of its partitions (an old record, a classic group's member
turned into a consumer group member) holds them from its member epoch,
never below 0, as Kafka reads a record written before KIP-1251. A commit
with an older member epoch is judged by them (``consumer_offsets``).
"""

from __future__ import annotations

import uuid
from typing import Callable, Iterable, Iterator

import attrs

STABLE, UNREVOKED, UNRELEASED = "stable", "unrevoked_partitions", "unreleased_partitions"
Assignment = dict[uuid.UUID, frozenset[int]]
Owned = list[tuple[uuid.UUID, list[int]]] | None  # a heartbeat's owned partitions; None when not sent
Epochs = dict[tuple[uuid.UUID, int], int]  # (topic id, partition) -> the member epoch it was given at
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


@attrs.frozen
class ClassicMetadata:
    """What a classic member of a consumer group last joined with (Kafka's ``ClassicMemberMetadata``)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...] = attrs.field(converter=tuple)

    @property
    def protocol_name(self) -> str:
        """The protocol named in its join answer: the first it supports, as Kafka answers."""
        return self.protocols[0][0]


def _topic_names(names: Iterable[str]) -> tuple[str, ...]:
    """A subscription as a member keeps it, however it came (heartbeat, join, record): each topic once, sorted."""
    return tuple(sorted(set(names)))


@attrs.frozen
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = STABLE
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = attrs.field(default=(), converter=_topic_names)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = attrs.field(factory=dict)
    pending_revocation: Assignment = attrs.field(factory=dict)
    classic: ClassicMetadata | None = None  # set for a member of the classic protocol (KIP-848 migration)
    assignment_epochs: Epochs = attrs.field(factory=dict)  # of every partition it holds, and only those

    def __attrs_post_init__(self) -> None:
        """Keep ``assignment_epochs`` to the partitions held; one without an epoch is held from the member
        epoch (at least 0)."""
        since = max(self.member_epoch, 0)
        epochs = {tp: self.assignment_epochs.get(tp, since) for tp in self.owned_partitions()}
        if epochs != self.assignment_epochs:
            object.__setattr__(self, "assignment_epochs", epochs)

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch

    def owned_partitions(self) -> Iterator[tuple[uuid.UUID, int]]:
        """Every (topic id, partition) the member holds: assigned or pending revocation."""
        for parts in (self.assigned, self.pending_revocation):
            for topic_id, ps in parts.items():
                yield from ((topic_id, p) for p in ps)

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch the member was given a partition at, None when it does not hold it."""
        return self.assignment_epochs.get((topic_id, partition))

    def with_epoch(self, epoch: int, **changes) -> "ConsumerMember":
        """Kafka's ``updateMemberEpoch``: the current epoch becomes the previous one."""
        return attrs.evolve(self, member_epoch=epoch, previous_member_epoch=self.member_epoch, **changes)


def owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Whether the owned partitions of a heartbeat include any of ``partitions`` (unknown: yes)."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def is_subset(owned: Owned, assigned: Assignment) -> bool:
    """Kafka's ``isSubset``: every owned partition is one of ``assigned`` (unknown: no)."""
    if owned is None:
        return False
    return all(topic_id in assigned and set(parts) <= assigned[topic_id] for topic_id, parts in owned)


@attrs.frozen
class Target:
    """What a member reconciles toward: the target epoch and assignment, the topic ids it subscribes to,
    and who owns each partition now (``partition_epoch``: -1 when nobody does)."""

    epoch: int
    assignment: Assignment
    subscribed: frozenset[uuid.UUID]
    partition_epoch: Callable[[uuid.UUID, int], int]


def reconcile(member: ConsumerMember, target: Target, subscription_changed: bool, owned: Owned) -> ConsumerMember:
    """The member's next state (Kafka's ``CurrentAssignmentBuilder.build``)."""
    if member.state == STABLE:
        if member.member_epoch != target.epoch:
            return _next(member, target, member.member_epoch, owned)
        return _drop_unsubscribed(member, target, owned) if subscription_changed else member
    if member.state == UNREVOKED:
        if owns_any(owned, member.pending_revocation):
            return _drop_unsubscribed(member, target, owned) if subscription_changed else member
        return _next(member, target, min(member.member_epoch + 1, target.epoch), owned)
    return _next(member, target, member.member_epoch, owned)  # unreleased_partitions


def _drop_unsubscribed(member: ConsumerMember, target: Target, owned: Owned) -> ConsumerMember:
    """A changed subscription: partitions of topics no longer subscribed are to be revoked at once."""
    gone = {t: parts for t, parts in member.assigned.items() if t not in target.subscribed}
    if not gone:
        return member
    kept = {t: parts for t, parts in member.assigned.items() if t in target.subscribed}
    pending = dict(member.pending_revocation)
    for topic_id, parts in gone.items():
        pending[topic_id] = pending.get(topic_id, frozenset()) | parts
    if owns_any(owned, pending):
        return attrs.evolve(member, state=UNREVOKED, assigned=kept, pending_revocation=pending)
    return attrs.evolve(member, assigned=kept)


def _next(member: ConsumerMember, target: Target, epoch: int, owned: Owned) -> ConsumerMember:
    """Kafka's ``computeNextAssignment`` from ``epoch``."""
    assigned: Assignment = {}
    revoking: Assignment = {}
    adding: Assignment = {}
    unreleased = False
    for topic_id in ordered(set(target.assignment) | set(member.assigned)):
        wanted = target.assignment.get(topic_id, frozenset()) if topic_id in target.subscribed else frozenset()
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        releasing = member.pending_revocation.get(topic_id, frozenset())
        free = {p for p in wanted - kept if target.partition_epoch(topic_id, p) == -1 or p in releasing}
        unreleased = unreleased or len(free) < len(wanted - kept)
        for out, parts in ((assigned, kept), (revoking, current - kept), (adding, frozenset(free))):
            if parts:
                out[topic_id] = frozenset(parts)
    kept_epochs = {tp: e for tp, e in member.assignment_epochs.items() if tp[1] in member.assigned.get(tp[0], ())}
    if revoking and owns_any(owned, revoking):
        return member.with_epoch(epoch, state=UNREVOKED, assigned=assigned, pending_revocation=revoking,
                                 assignment_epochs=kept_epochs)  # fmt: skip
    for topic_id, parts in adding.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | parts
    state = UNRELEASED if unreleased else STABLE
    return member.with_epoch(target.epoch, state=state, assigned=assigned, pending_revocation={},
                             assignment_epochs=kept_epochs)  # the added partitions: held from the target epoch


def ordered(ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """Topic ids in a stable order (by their text), as assignors, answers and records list them."""
    return sorted(ids, key=str)


def as_owned(assignment: Assignment) -> list[tuple[uuid.UUID, list[int]]]:
    """An assignment in the heartbeat's layout (topic id, sorted partitions), topics in a stable order."""
    return [(t, sorted(assignment[t])) for t in ordered(assignment)]
