"""The group coordinator of the classic protocol: joins, syncs, heartbeats, leaves.

One ``GroupCoordinator`` per broker (this broker coordinates every group).
It runs in the trio thread: a JoinGroup or SyncGroup that has to wait parks
on a ``Waiter`` until the rebalance completes; everything else answers at
once. Time comes from the injected ``clock`` (ms); ``tick()`` runs the
deadlines (member session expiry, KIP-394 pending members, the rebalance and
initial-delay timers) and is called by ``GroupManager.run()`` when
``next_deadline`` comes (or a request woke it: ``timers_moved``), or directly
by tests.

The rules are Kafka's ``GroupCoordinator`` (classic protocol), summarised:

* a join with an empty member id gets a new id; from JoinGroup v4 it is
  answered MEMBER_ID_REQUIRED and must come back with it (KIP-394), static
  members (``group.instance.id``, KIP-345) skip that step and a known
  instance replaces its old member id, without a rebalance when the group is
  stable (``static_rejoin``);
* a rebalance starts when a member joins, changes its protocols, the leader
  rejoins, or a member leaves or expires; it completes when every member has
  rejoined (after ``group.initial.rebalance.delay.ms`` for an empty group,
  extended while new members keep arriving) or at the rebalance timeout,
  dropping members that did not rejoin (``rebalance``);
* a group holds at most ``group.max.size`` members: a join that would take it
  past that is answered GROUP_MAX_SIZE_REACHED (``Group.accepts_joining``),
  and a group loaded above it (the limit lowered) rebalances (``loaded``);
* the leader's SyncGroup carries the assignment; it is stored in
  ``__consumer_offsets`` (``GroupStore``) before anyone gets an answer. When
  that fails the waiting SyncGroups answer the storage error as Kafka maps
  it (``store.coordinator_error``: NOT_COORDINATOR for a log dir gone offline,
  UNKNOWN_SERVER_ERROR for a record too large), then the group rebalances.

A KIP-848 consumer group of the same id (``consumer_group.py``) is no
classic group: JoinGroup turns an empty one into a classic group (its
offsets kept, its record deleted), as Kafka does; a consumer group with
members takes the member as a classic member of it, and its SyncGroup,
Heartbeat and LeaveGroup go there too (``classic_members``, set as
``mixed`` by ``GroupManager``'s constructor call; KIP-848's online migration). A consumer group
that goes back to being a classic group (``migration``) is handed over by
``adopt_downgraded``, which starts a rebalance, as Kafka's ``convertToClassicGroup``.

Offsets live in ``offsets.py``; loading from ``__consumer_offsets`` in ``store.py``.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

from protocol import ErrorCode

from . import consumer_records as cr
from .group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, Group, Member, Waiter
from .rebalance import Rebalancing
from .results import JoinRequest, JoinResult, SyncRequest, SyncResult
from .static_rejoin import StaticRejoin
from .timers import log_timer_failure

log = logging.getLogger("minibroker.groups")
_MIXED = object()  # JoinGroup of a consumer group with members: served by its classic members


class GroupCoordinator(StaticRejoin, Rebalancing):
    def __init__(self, config: Any, store: Any, clock: Callable[[], int], groups: dict, mixed: Any) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.groups: dict[str, Group] = groups  # shared with the consumer coordinator
        self.mixed = mixed  # ``ClassicMembers``: classic members of consumer groups
        self.timers_moved: Callable[[], None] = lambda: None  # GroupManager's: its timer task looks again
        self.timer_failed: Callable[[str], None] = log_timer_failure  # GroupManager's: the timers' rate limit

    # -- JoinGroup -----------------------------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        self.timers_moved()  # before the changes, which come before the first await (see ``timers``)
        outcome = self._join(req)
        if outcome is _MIXED:
            return await self.mixed.join(self.groups[req.group_id], req)
        if isinstance(outcome, Waiter):
            await outcome.event.wait()
            return outcome.result
        return outcome

    def _join(self, req: JoinRequest) -> JoinResult | Waiter:
        if not req.group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, req.member_id)
        if not self.config.group_min_session_timeout_ms <= req.profile.session_timeout_ms <= \
                self.config.group_max_session_timeout_ms:  # fmt: skip
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        group = self.groups.get(req.group_id)
        if group is not None and not isinstance(group, Group):  # a consumer group (KIP-848)
            if group.members:
                return _MIXED
            group = self._from_consumer_group(group)
        if group is None:
            if req.member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            group = self.groups[req.group_id] = Group(req.group_id, state_timestamp=self.clock())
        if not group.accepts_joining(req.member_id, self.config.group_max_size):
            group.refuse_joining(req.member_id)
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if group.state == DEAD:
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, req.member_id)
        if not group.supports(req.profile):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if not req.member_id:
            return self._join_new(group, req)
        return self._join_known(group, req)

    def _from_consumer_group(self, old) -> Group:
        """An empty consumer group becomes a classic group: its offsets stay, its record is deleted."""
        group = Group(old.group_id, state_timestamp=self.clock(), **old.kept_offsets())
        self.groups[old.group_id] = group
        self.store.write_soon(old.group_id, cr.group_tombstones(old.group_id, old.stored))
        log.info("converted the empty consumer group %s to a classic group", old.group_id)
        return group

    def _join_new(self, group: Group, req: JoinRequest) -> JoinResult | Waiter:
        instance_id = req.profile.group_instance_id
        member_id = f"{instance_id or req.profile.client_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None and old_id in group.members:
                return self._replace_static(group, req, old_id, member_id)
            return self._add_and_rebalance(group, req, member_id)
        if req.require_known_member_id:
            group.pending_members[member_id] = self.clock() + req.profile.session_timeout_ms
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        return self._add_and_rebalance(group, req, member_id)

    def _join_known(self, group: Group, req: JoinRequest) -> JoinResult | Waiter:
        if req.member_id in group.pending_members:
            return self._add_and_rebalance(group, req, req.member_id)
        error = group.validate_member(req.member_id, req.profile.group_instance_id)
        if error is None and group.state in (EMPTY, DEAD):
            error = ErrorCode.UNKNOWN_MEMBER_ID
        if error is not None:
            return JoinResult(error, req.member_id)
        member = group.members[req.member_id]
        if group.state == PREPARING:
            return self._update_and_wait(group, member, req)
        if group.state == COMPLETING and member.same_protocols(req.profile.protocols):
            return self._current_generation(group, member)
        if group.state == STABLE and group.leader_id != member.member_id and member.same_protocols(
                req.profile.protocols):  # fmt: skip
            return self._current_generation(group, member)
        waiter = self._update_and_wait(group, member, req)
        self._prepare_rebalance(group, f"{member.member_id} rejoined with new metadata or as leader")
        return waiter

    def _new_member(self, req: JoinRequest, member_id: str) -> Member:
        member = Member(member_id, req.profile, is_new=True)
        member.extend_session(self.clock())
        return member

    def _add_and_rebalance(self, group: Group, req: JoinRequest, member_id: str) -> Waiter:
        group.pending_members.pop(member_id, None)
        member = self._new_member(req, member_id)
        member.join_waiter = waiter = Waiter()
        group.add_member(member)
        if group.state in (EMPTY, STABLE, COMPLETING):
            self._prepare_rebalance(group, f"adding member {member_id}")
        else:
            self._check_join_done(group)
        return waiter

    def _update_and_wait(self, group: Group, member: Member, req: JoinRequest) -> Waiter:
        member.profile = req.profile
        if member.join_waiter is not None:  # a second join replaces the first, as Kafka's callback does
            member.join_waiter.complete(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_waiter = waiter = Waiter()
        self._check_join_done(group)
        return waiter

    def _current_generation(self, group: Group, member: Member, skip: bool = False) -> JoinResult:
        leader = group.leader_id == member.member_id
        return JoinResult(
            ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
            group.leader_id or "", self._member_list(group) if leader else [], skip and leader,
        )  # fmt: skip

    def _member_list(self, group: Group) -> list[tuple[str, str | None, bytes]]:
        protocol = group.protocol_name or ""
        return [(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in group.members.values()]

    def unload(self) -> None:
        """The broker stops, or ``__consumer_offsets`` was deleted (``GroupManager.resign``): every parked
        JoinGroup and SyncGroup answers NOT_COORDINATOR now, as Kafka's ``GroupMetadataManager.onUnloaded``
        completes them, so its member looks for the coordinator again instead of waiting out the stop. Nothing
        else changes here: nothing is written, no timer runs after a stop."""
        for group in self.groups.values():
            for member in group.members.values() if isinstance(group, Group) else ():
                if member.join_waiter is not None:
                    member.join_waiter.complete(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_waiter is not None:
                    member.sync_waiter.complete(SyncResult(ErrorCode.NOT_COORDINATOR))

    # -- SyncGroup -------------------------------------------------------------------------

    async def sync(self, req: SyncRequest) -> SyncResult:
        self.timers_moved()
        mixed = self._mixed(req.group_id)
        if mixed is not None:
            return await self.mixed.sync(mixed, req)
        group, error = self._member_check(req.group_id, req.member_id, req.group_instance_id, req.generation_id)
        if error is not None:
            return SyncResult(error)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.state == PREPARING:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members[req.member_id]
        member.extend_session(self.clock())
        if group.state == STABLE:
            return self._sync_result(group, member.assignment)
        member.sync_waiter = waiter = Waiter()
        if group.leader_id == member.member_id:
            await self._apply_assignment(group, req.assignments)
        await waiter.event.wait()
        return waiter.result

    async def _apply_assignment(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation_id
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        error = await self.store.write_group(group)
        self.timers_moved()  # what follows ends parked syncs (their sessions run again) or starts a rebalance
        if group.state != COMPLETING or group.generation_id != generation:
            return  # a rebalance started while the assignment was being stored
        if error is not None:  # Kafka: the waiting syncs get the error first, then the group rebalances
            log.warning("could not store the assignment of group %s generation %d: %s", group.group_id,
                        generation, error.name)  # fmt: skip
            for member in group.members.values():
                member.assignment = b""
            self._answer_syncs(group, lambda _member: SyncResult(error))
            self._prepare_rebalance(group, f"storing the assignment failed ({error.name})")
            return
        group.transition(STABLE, self.clock())
        self._answer_syncs(group, lambda member: self._sync_result(group, member.assignment))

    def _sync_result(self, group: Group, assignment: bytes) -> SyncResult:
        return SyncResult(ErrorCode.NONE, assignment, group.protocol_type, group.protocol_name)

    def _member_check(self, group_id: str, member_id: str, instance_id: str | None,
                      generation_id: int) -> tuple[Group | None, ErrorCode | None]:  # fmt: skip
        """The checks SyncGroup, Heartbeat and OffsetCommit share, in Kafka's order."""
        group = self.groups.get(group_id)
        if not group_id:
            return None, ErrorCode.INVALID_GROUP_ID
        if group is None or not isinstance(group, Group):  # none, or a consumer group: no classic member
            return None, ErrorCode.UNKNOWN_MEMBER_ID
        if group.state == DEAD:
            return group, ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(member_id, instance_id)
        if error is not None or group.state == EMPTY:
            return group, error or ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return group, ErrorCode.ILLEGAL_GENERATION
        return group, None

    # -- Heartbeat and LeaveGroup ------------------------------------------------------

    def _mixed(self, group_id: str) -> Any:
        """The consumer group of this id, when classic requests for it go to its classic members."""
        group = self.groups.get(group_id)
        return group if group_id and not isinstance(group, (Group, type(None))) else None

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        mixed = self._mixed(group_id)
        if mixed is not None:
            self.timers_moved()  # it may arm the member's join timer; a classic one only moves a session on
            return self.mixed.heartbeat(mixed, member_id, instance_id, generation_id)
        group, error = self._member_check(group_id, member_id, instance_id, generation_id)
        if error is not None:
            return error
        group.members[member_id].extend_session(self.clock())
        return ErrorCode.REBALANCE_IN_PROGRESS if group.state == PREPARING else ErrorCode.NONE

    async def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        self.timers_moved()
        mixed = self._mixed(group_id)
        if mixed is not None:
            return await self.mixed.leave(mixed, leaving)
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        if group is None or not isinstance(group, Group):
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, [self._leave_one(group, m, i) for m, i in leaving]

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's order: by instance id alone (an admin removal), a pending member, else ``validate_member``."""
        if not member_id:
            member_id = group.static_members.get(instance_id, "") if instance_id is not None else ""
        elif member_id in group.pending_members:
            del group.pending_members[member_id]
            self._check_join_done(group)
            return ErrorCode.NONE
        elif (error := group.validate_member(member_id, instance_id)) is not None:
            return error
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self.remove_member(group, member, "the member left the group")
        return ErrorCode.NONE

    def loaded(self, group: Group) -> None:
        """A group rebuilt from ``__consumer_offsets`` with more members than ``group.max.size`` (lowered since)
        rebalances, so that its members may commit first (Kafka's ``onLoaded``); the last to rejoin are refused."""
        size, limit = len(group.members), self.config.group_max_size
        if size > limit:
            self._prepare_rebalance(group, f"freshly-loaded group {group.group_id} (size {size}) is over capacity "
                                    f"{limit}")  # fmt: skip

    def adopt_downgraded(self, group: Group) -> None:
        """A consumer group just turned classic (``migration``): its members must rejoin."""
        self._prepare_rebalance(group, "the consumer group was downgraded to a classic group as a member left")
