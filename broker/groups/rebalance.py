"""Classic rebalances: preparing, completing, and the timers that drive them.

Mixed into ``GroupCoordinator`` (which provides the JoinGroup answers used
here). A rebalance moves the group to PreparingRebalance with a deadline:
the largest rebalance timeout of its members, or, for a group that was
empty, ``group.initial.rebalance.delay.ms`` first (capped by that timeout),
renewed by the same step while new members keep arriving and the rebalance
timeout has time left (Kafka's ``InitialDelayedJoin``). Parked syncs of a
group completing a rebalance are told REBALANCE_IN_PROGRESS. The join
completes when every member has rejoined (an initial delay always runs
out first) or at the deadline: a new leader is chosen among the members
that rejoined if the old one did not, dynamic members that did not rejoin
are dropped (static ones stay until their session expires, KIP-345), the
generation goes up, and each parked JoinGroup gets its answer; a group left
without members becomes Empty and is stored. Parked SyncGroups are answered
by ``_answer_syncs`` (the assignment, a storage error, or
REBALANCE_IN_PROGRESS), which, as Kafka's ``propagateAssignment``, starts
each answered member's session again from then: a store slower than the
session must not end it.

``remove_member`` (Kafka's ``removeMemberAndUpdateGroup``) answers the
member's parked requests UNKNOWN_MEMBER_ID and rebalances (or, during
one, checks whether the join is now complete). ``tick`` runs
the deadlines on the injected clock: KIP-394 pending members that did not
come back, member sessions, the rebalance deadline; ``next_deadline`` is the
earliest of them, passed or not (one that fell due while the timer task was
storing must not be skipped), for ``timers.GroupTimers``.
"""

from __future__ import annotations

import logging
from typing import Callable

from protocol import ErrorCode

from .group import COMPLETING, EMPTY, PREPARING, STABLE, Group, Member
from .results import JoinResult, SyncResult

log = logging.getLogger("minibroker.groups")


class Rebalancing:
    """The rebalance part of ``GroupCoordinator`` (which provides the methods used here)."""

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        now = self.clock()
        if group.state == COMPLETING:
            for member in group.members.values():
                member.assignment = b""
            self._answer_syncs(group, lambda _member: SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        initial = group.state == EMPTY
        group.transition(PREPARING, now)
        group.initial_rebalance, group.new_member_added = initial, False
        if initial:
            delay = min(self.config.group_initial_rebalance_delay_ms, group.max_rebalance_timeout())
            group.rebalance_remaining = group.max_rebalance_timeout() - delay
            group.rebalance_deadline = now + delay
        else:
            group.rebalance_deadline = now + group.max_rebalance_timeout()
        log.info("preparing to rebalance group %s (generation %d): %s", group.group_id, group.generation_id, reason)
        self._check_join_done(group)

    def _answer_syncs(self, group: Group, answer: Callable[[Member], SyncResult]) -> None:
        """Kafka's ``propagateAssignment``: each parked SyncGroup gets its answer, and its member's session
        starts again from now (while it waited, the session was held back, not run)."""
        now = self.clock()
        for member in group.members.values():
            if member.sync_waiter is not None:
                member.sync_waiter.complete(answer(member))
                member.sync_waiter = None
                member.extend_session(now)

    def _check_join_done(self, group: Group) -> None:
        if group.state != PREPARING or not group.all_joined():
            return
        if group.initial_rebalance and group.rebalance_deadline > self.clock():
            return  # the initial delay always runs out (Kafka's InitialDelayedJoin)
        self._complete_join(group)

    def _rebalance_timer(self, group: Group, now: int) -> None:
        if group.initial_rebalance and group.new_member_added and group.rebalance_remaining > 0:
            step = min(self.config.group_initial_rebalance_delay_ms, group.rebalance_remaining)
            group.rebalance_remaining -= step
            group.rebalance_deadline, group.new_member_added = now + step, False
            return
        self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        now = self.clock()
        leader = group.members.get(group.leader_id or "")
        if leader is None or leader.join_waiter is None:  # Kafka's maybeElectNewJoinedLeader
            group.leader_id = next((m.member_id for m in group.members.values() if m.join_waiter), group.leader_id)
        for member in [m for m in group.members.values() if m.join_waiter is None and m.group_instance_id is None]:
            log.info("member %s of group %s did not rejoin in time", member.member_id, group.group_id)
            group.remove_member(member.member_id)  # static members stay until their session expires (KIP-345)
        group.rebalance_deadline, group.initial_rebalance = None, False
        group.generation_id += 1
        if not group.members:
            group.protocol_name, group.leader_id = None, None
            group.transition(EMPTY, now)
            self.store.write_group_soon(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition(COMPLETING, now)
        for member in group.members.values():
            waiter, member.join_waiter, member.is_new = member.join_waiter, None, False
            if waiter is not None:
                member.extend_session(now)
                waiter.complete(self._current_generation(group, member))
        log.info("group %s generation %d: %d members, protocol %s", group.group_id, group.generation_id,
                 len(group.members), group.protocol_name)  # fmt: skip

    def remove_member(self, group: Group, member: Member, reason: str) -> None:
        """Kafka's ``removeMemberAndUpdateGroup``: parked joins answer UNKNOWN_MEMBER_ID, then rebalance."""
        if member.join_waiter is not None:
            member.join_waiter.complete(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        if member.sync_waiter is not None:
            member.sync_waiter.complete(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove_member(member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._prepare_rebalance(group, f"removing member {member.member_id}: {reason}")
        elif group.state == PREPARING:
            self._check_join_done(group)

    def next_deadline(self) -> int | None:
        """The earliest deadline of the classic groups (``tick``'s next work), passed or not; None when none."""
        due = []
        for group in [g for g in self.groups.values() if isinstance(g, Group)]:
            due += group.pending_members.values()
            due += [e for e in (m.expiry() for m in group.members.values()) if e is not None]
            if group.state == PREPARING and group.rebalance_deadline is not None:
                due.append(group.rebalance_deadline)
        return min(due, default=None)

    def tick(self) -> None:
        """Each group's due timers, each group on its own: one whose handling raises is logged
        (``timer_failed``) and the groups after it still run, as each of Kafka's timers runs on its own."""
        now = self.clock()
        for group in [g for g in self.groups.values() if isinstance(g, Group)]:
            try:
                self._group_timers(group, now)
            except Exception:
                self.timer_failed(f"the timers of classic group {group.group_id}")

    def _group_timers(self, group: Group, now: int) -> None:
        for member_id, expiry in list(group.pending_members.items()):
            if expiry <= now:
                del group.pending_members[member_id]
                self._check_join_done(group)
        for member in list(group.members.values()):
            if not member.keep_alive(now):
                self.remove_member(group, member, "its session timed out")
        if group.state == PREPARING and group.rebalance_deadline is not None and group.rebalance_deadline <= now:
            self._rebalance_timer(group, now)
