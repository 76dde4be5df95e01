"""One consumer group of the classic protocol: members, generation, state.

A ``Group`` is plain data plus the transitions that need no waiting; the
``GroupCoordinator`` (``coordinator.py``) drives it and owns the trio side.
States and their meaning, as Kafka names them:

* ``Empty``: no members; offsets may still be committed by generation -1
  ("simple" consumers) and expire after ``offsets.retention.minutes``;
* ``PreparingRebalance``: members must (re)join; the join completes when all
  known members have joined or the rebalance timeout passes;
* ``CompletingRebalance``: the join answers went out, the leader's
  SyncGroup with the assignment is awaited;
* ``Stable``: every member has its assignment and heartbeats;
* ``Dead``: deleted; requests for it answer COORDINATOR_NOT_AVAILABLE.

Besides membership a group holds its committed offsets (``offsets``, with
the ``__consumer_offsets`` offset of each one's record in ``offset_records``),
the offsets open transactions staged (``pending_txn``, see
``txn_offsets.py``) and the partitions whose OffsetCommit is in the log but
not yet durable (``committing``: what deletes and expiry must see, as
Kafka's state holds a commit from its append on).

A group takes at most ``group.max.size`` members (``accepts_joining``).

Protocol selection follows Kafka: candidates are the protocols every member
supports; each member votes for the first candidate in its own preference
order and the most voted wins (first in the first member's order on a tie).
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from protocol import ErrorCode

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@attrs.define(eq=False)
class Waiter:
    """A parked JoinGroup or SyncGroup request and the answer it will get."""

    event: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None

    def complete(self, result: Any) -> None:
        if not self.event.is_set():
            self.result = result
            self.event.set()


@attrs.frozen
class MemberProfile:
    """What a member declared in its last JoinGroup (or what ``__consumer_offsets`` kept of it)."""

    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...] = attrs.field(converter=tuple)


@attrs.define(eq=False)
class Member:
    member_id: str
    profile: MemberProfile
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    heartbeat_deadline: int = 0
    is_new: bool = False

    @property
    def group_instance_id(self) -> str | None:
        return self.profile.group_instance_id

    def metadata(self, protocol: str) -> bytes:
        return next((m for name, m in self.profile.protocols if name == protocol), b"")

    def same_protocols(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.profile.protocols == protocols

    def extend_session(self, now: int) -> None:
        """A heartbeat, sync, commit or completed join: the session runs from ``now`` again."""
        self.heartbeat_deadline = now + self.profile.session_timeout_ms

    def keep_alive(self, now: int) -> bool:
        """Kafka's ``shouldKeepAlive``: a parked join or sync keeps a member (a new one for 5 minutes)."""
        expiry = self.expiry()
        return expiry is None or now < expiry

    def expiry(self) -> int | None:
        """When ``keep_alive`` turns false; None while a parked join (of a member not new) or sync keeps it."""
        if self.join_waiter is not None:
            return self.heartbeat_deadline + NEW_MEMBER_JOIN_TIMEOUT_MS if self.is_new else None
        return None if self.sync_waiter is not None else self.heartbeat_deadline


@attrs.define(eq=False)
class CommittedOffsets:
    """The offsets both kinds of group hold (keyword-only fields, after the group's own), handed on whole
    when a group of one kind takes the place of the other (``kept_offsets``)."""

    offsets: dict[tuple[str, int], Any] = attrs.field(factory=dict, kw_only=True)
    # the ``__consumer_offsets`` offset of the record behind each committed offset (the newest record wins)
    offset_records: dict[tuple[str, int], int] = attrs.field(factory=dict, kw_only=True)
    # KIP-98: producer id -> (topic, partition) -> (record offset, value), staged until the transaction ends
    pending_txn: dict[int, dict[tuple[str, int], tuple[int, Any]]] = attrs.field(factory=dict, kw_only=True)
    # (topic, partition) -> how many OffsetCommit records of it are appended and not yet applied (durable)
    committing: dict[tuple[str, int], int] = attrs.field(factory=dict, kw_only=True)

    def kept_offsets(self) -> dict[str, Any]:
        """The committed, staged and committing offsets, as keyword arguments of the group taking this one's
        place (the same dicts: a commit in flight applies its offsets to whichever group holds them then)."""
        return {"offsets": self.offsets, "offset_records": self.offset_records, "pending_txn": self.pending_txn,
                "committing": self.committing}


@attrs.define(eq=False)
class Group(CommittedOffsets):
    group_id: str
    state: str = EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    pending_members: dict[str, int] = attrs.field(factory=dict)  # KIP-394 ids handed out -> expiry
    rebalance_deadline: int | None = None
    rebalance_remaining: int = 0
    initial_rebalance: bool = False
    new_member_added: bool = False
    state_timestamp: int = -1

    def transition(self, state: str, now: int) -> None:
        self.state = state
        self.state_timestamp = now

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def candidate_protocols(self) -> list[str]:
        members = list(self.members.values())
        if not members:
            return []
        names = [name for name, _ in members[0].profile.protocols]
        return [n for n in names if all(any(n == p for p, _ in m.profile.protocols) for m in members[1:])]

    def supports(self, profile: MemberProfile) -> bool:
        """Whether a member with this profile may join (Kafka's ``supportsProtocols``)."""
        if not self.members:
            return bool(profile.protocol_type) and bool(profile.protocols)
        if profile.protocol_type != self.protocol_type:
            return False
        offered = {name for name, _ in profile.protocols}
        return any(name in offered for name in self.candidate_protocols())

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes = dict.fromkeys(candidates, 0)
        for member in self.members.values():
            vote = next(name for name, _ in member.profile.protocols if name in votes)
            votes[vote] += 1
        return max(candidates, key=lambda name: votes[name])

    def add_member(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.profile.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        if self.state == PREPARING and self.initial_rebalance:
            self.new_member_added = True

    def remove_member(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_member(self, old_id: str, member: Member) -> None:
        """A static member's new id takes ``old_id``'s place: its instance id and, if it led, the leadership."""
        del self.members[old_id]
        self.members[member.member_id] = member
        self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id == old_id:
            self.leader_id = member.member_id

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka's ``validateMember`` (JoinGroup of a known member, SyncGroup, Heartbeat, LeaveGroup,
        OffsetCommit): an instance id, when given, must be held (else UNKNOWN_MEMBER_ID) by ``member_id``
        (else FENCED_INSTANCE_ID), which must be a member (else UNKNOWN_MEMBER_ID)."""
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def accepts_joining(self, member_id: str, max_size: int) -> bool:
        """Kafka's ``acceptJoiningMember`` (``group.max.size``): an Empty group takes anyone; while preparing a
        rebalance a member already rejoined is taken, others while fewer than ``max_size`` have rejoined (the
        group may hold more, the limit lowered since: the last to rejoin are refused); otherwise a member of
        the group is taken, a newcomer (a pending or static one too) while there are fewer than ``max_size``."""
        if self.state in (EMPTY, DEAD):
            return True
        member = self.members.get(member_id)
        if self.state == PREPARING:
            rejoined = sum(1 for m in self.members.values() if m.join_waiter is not None)
            return (member is not None and member.join_waiter is not None) or rejoined < max_size
        return member is not None or len(self.members) < max_size

    def refuse_joining(self, member_id: str) -> None:
        """A member refused by ``accepts_joining`` leaves the group, or its pending id (KIP-394) is dropped."""
        self.remove_member(member_id)
        self.pending_members.pop(member_id, None)

    def max_rebalance_timeout(self) -> int:
        return max((m.profile.rebalance_timeout_ms for m in self.members.values()), default=0)

    def is_empty_and_simple(self) -> bool:
        return self.state == EMPTY and not self.members
