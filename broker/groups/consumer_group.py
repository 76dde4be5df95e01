"""A KIP-848 consumer group: members, epochs, target assignment, who owns which partition.

Kafka's ``ConsumerGroup``, as plain data the ``ConsumerCoordinator``
(``consumer_coordinator.py``) changes:

* ``group_epoch`` is bumped whenever membership, a subscription or the
  subscribed topics' partitions change; ``assignment_epoch`` is the epoch of
  the target assignment (``target``: member id -> partitions);
* ``partition_epochs`` says, per (topic id, partition), the epoch of the
  member that owns it (assigned or pending revocation); a partition no one
  owns is absent (-1). ``replace_member`` keeps it in step with the members;
* the state is derived as Kafka derives it: ``Empty`` without members,
  ``Assigning`` while the target lags the group epoch, ``Reconciling`` while
  some member is not yet at the target, else ``Stable``;
* ``metadata_hash`` is the hash of what the last epoch bump saw of the
  subscribed topics (name, id, partition count): Kafka's metadata hash
  (``consumer_records.metadata_hash``);
* the member timers: ``session_deadlines`` and ``rebalance_deadlines``
  (deadline, and the member epoch it was set at); for classic members
  (KIP-848 online migration, ``classic_members.py``) also ``join_deadlines``
  (told to rejoin, must within its rebalance timeout) and
  ``sync_deadlines`` (joined, must sync within it);
* ``stored``: the group's records as last written to ``__consumer_offsets``
  (key -> value), so ``GroupManager`` writes only what changed and knows
  what to delete.

A consumer group holds committed offsets as a classic ``Group`` does (both
are ``group.CommittedOffsets``: ``offsets``, ``offset_records``,
``pending_txn``, ``committing``) so the offset code serves both kinds.
"""

from __future__ import annotations

import uuid

import attrs

from .consumer_member import UNRELEASED, ConsumerMember
from .group import CommittedOffsets

EMPTY, ASSIGNING, RECONCILING, CONSUMER_STABLE = "Empty", "Assigning", "Reconciling", "Stable"
CONSUMER = "consumer"  # Kafka's GroupType (and the groups' protocol type)


@attrs.define(eq=False)
class ConsumerGroup(CommittedOffsets):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)  # instance id -> member id
    target: dict[str, dict[uuid.UUID, frozenset[int]]] = attrs.field(factory=dict)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = attrs.field(factory=dict)
    metadata_hash: int = 0
    resolved_regexes: dict[str, frozenset[str]] = attrs.field(factory=dict)
    session_deadlines: dict[str, int] = attrs.field(factory=dict)
    rebalance_deadlines: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    join_deadlines: dict[str, int] = attrs.field(factory=dict)
    sync_deadlines: dict[str, int] = attrs.field(factory=dict)
    stored: dict[bytes, bytes] = attrs.field(factory=dict)
    state_timestamp: int = -1
    protocol_type: str = CONSUMER
    group_type: str = CONSUMER

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return CONSUMER_STABLE

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning a partition, -1 if none."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def replace_member(self, old: ConsumerMember | None, new: ConsumerMember | None, now: int) -> None:
        """Put ``new`` in place of ``old`` (either may be None: a join, a removal), partition epochs included."""
        was_empty = not self.members
        if old is not None:
            for owned in old.owned_partitions():
                self.partition_epochs.pop(owned, None)
            if new is None or new.member_id != old.member_id:  # the same member keeps its place in the order
                del self.members[old.member_id]
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        if new is not None:
            for owned in new.owned_partitions():
                self.partition_epochs[owned] = new.member_epoch
            self.members[new.member_id] = new
            if new.instance_id is not None:
                self.static_members[new.instance_id] = new.member_id
        if was_empty != (not self.members):
            self.state_timestamp = now

    def remove_member(self, member_id: str, now: int) -> None:
        """Drop a member with its target assignment and timers."""
        self.replace_member(self.members[member_id], None, now)
        self.target.pop(member_id, None)
        self.drop_timers(member_id)

    def drop_timers(self, member_id: str) -> None:
        """Stop every timer of a member: session, rebalance, and a classic member's join and sync."""
        for timers in (self.session_deadlines, self.rebalance_deadlines, self.join_deadlines, self.sync_deadlines):
            timers.pop(member_id, None)

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def subscribed_topic_names(self, members: list[ConsumerMember] | None = None) -> set[str]:
        """Topics some member subscribes to, by name or through a resolved regex."""
        names: set[str] = set()
        for m in self.members.values() if members is None else members:
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                names.update(self.resolved_regexes.get(m.subscribed_topic_regex, ()))
        return names

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (Kafka's ``preferredServerAssignor``), else ``default``."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        return max(sorted(votes), key=lambda name: votes[name]) if votes else default

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.uses_classic]

    def supports_classic(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's ``supportsClassicProtocols``: a ``consumer`` member offering a protocol every classic member
        supports (any protocol, when there is no member)."""
        if protocol_type != CONSUMER:
            return False
        classic = self.classic_members()
        if not self.members:
            return bool(names)
        return any(all(any(n == name for name, _ in m.classic.protocols) for m in classic) for n in names)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Kafka's ``waitingOnUnreleasedPartition``: a target partition it lacks is still owned by someone."""
        if member.state != UNRELEASED:
            return False
        for topic_id, parts in self.target.get(member.member_id, {}).items():
            held = member.assigned.get(topic_id, frozenset())
            if any(p not in held and self.partition_epoch(topic_id, p) != -1 for p in parts):
                return True
        return False
