"""KIP-848 members leaving a consumer group: leave heartbeats, fencing, and the member timers.

Mixed into ``ConsumerCoordinator`` (which provides the attributes and
lookups used here). Leaving (epoch -1) removes the member and bumps the
group epoch (``fence_members``, Kafka's ``consumerGroupFenceMembers``; the
target is recomputed at the next heartbeat). When only classic members
would be left, the group may go back to being a classic group
(``migration``): ``on_downgrade`` hands it to the classic coordinator and
``downgraded`` tells ``ConsumerStore`` to store it (the keys the consumer
group stored, to be deleted; a group downgraded again before its first
downgrade was written queues the keys of both, ``queue_downgrade``). A static member leaving
with -2 keeps its partitions (epoch -2, their assignment epochs reset to 0,
as Kafka does) until it rejoins or its session expires.

``tick`` fences members whose session or rebalance timeout passed (the
clock is the broker's injected one; a rebalance timer fires once, and only
for the epoch it was armed for), and classic members that did not rejoin or
sync in time (``classic_members``). ``next_deadline`` is the earliest of
these timers, passed or not (one that fell due while the timer task was
storing must not be skipped), so ``timers.GroupTimers`` knows how long to sleep.
Every member fenced is reported in ``dirty`` for ``GroupManager`` to store;
each group's due timers run as one change (``consumer_rollback``), so a
fencing whose write fails is undone, its deadline still due: the next round
runs it again, as Kafka reschedules a timer whose write failed.
"""

from __future__ import annotations

import logging
from typing import Iterable

import attrs

from . import consumer_records as cr
from . import migration
from .consumer_group import ConsumerGroup
from .consumer_member import STATIC_LEAVE_EPOCH
from .consumer_requests import Heartbeat, HeartbeatResult, not_a_member, static_member

log = logging.getLogger("minibroker.groups")


class MemberFencing:
    """The leaving and fencing part of ``ConsumerCoordinator``."""

    def _leave(self, hb: Heartbeat) -> HeartbeatResult:
        """Kafka's ``consumerGroupLeave``: epoch -1 removes the member, -2 parks a static member."""
        group = self.consumer_group(hb.group_id)
        if hb.instance_id is None:
            member = group.members.get(hb.member_id)
            if member is None:
                raise not_a_member(hb.member_id, group.group_id)
            self.fence(group, member.member_id, "the member left the group")
            return HeartbeatResult(hb.member_id, hb.member_epoch)
        member = static_member(group, hb.instance_id, hb.member_id)
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            log.info("static member %s of group %s left for now", hb.instance_id, group.group_id)
            parked = attrs.evolve(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={},
                                  assignment_epochs=dict.fromkeys(member.assignment_epochs, 0))  # KIP-1251: reset
            group.replace_member(member, parked, self.clock())
            self.dirty.add((group.group_id, member.member_id))
            group.rebalance_deadlines.pop(member.member_id, None)
            return HeartbeatResult(member.member_id, STATIC_LEAVE_EPOCH)
        self.fence(group, member.member_id, "the static member left the group")
        return HeartbeatResult(hb.member_id, hb.member_epoch)

    def fence(self, group: ConsumerGroup, member_id: str, reason: str) -> None:
        self.fence_members(group, [member_id], reason)

    def fence_members(self, group: ConsumerGroup, member_ids: list[str], reason: str) -> None:
        """Remove members and bump the group epoch once (the target is recomputed at the next heartbeat); or,
        when only classic members would be left, turn the group into a classic group (Kafka's
        ``consumerGroupFenceMembers``)."""
        log.info("members %s fenced from group %s because %s", member_ids, group.group_id, reason)
        if migration.may_downgrade(group, set(member_ids), self.config):
            self._downgrade(group, set(member_ids))
            return
        for member_id in member_ids:
            group.remove_member(member_id, self.clock())
            self.dirty.add((group.group_id, member_id))
        regexes = {m.subscribed_topic_regex for m in group.members.values()}
        group.resolved_regexes = {r: t for r, t in group.resolved_regexes.items() if r in regexes}
        snap = self.topics.snapshot()
        group.metadata_hash = cr.subscribed_hash(group.subscribed_topic_names(), snap)
        group.group_epoch += 1
        self.dirty.add((group.group_id, None))

    def _downgrade(self, group: ConsumerGroup, leaving: set[str]) -> None:
        classic = migration.to_classic_group(group, leaving, self.topics.names_by_id(), self.clock())
        self.groups[group.group_id] = classic
        queue_downgrade(self.downgraded, group.group_id, group.stored)
        log.info("downgraded consumer group %s to a classic group (%d members)", group.group_id,
                 len(classic.members))  # fmt: skip
        self.on_downgrade(classic)

    def tick(self) -> None:
        """Fence members whose session expired or who did not revoke within their rebalance timeout."""
        now = self.clock()
        for group in [g for g in self.groups.values() if isinstance(g, ConsumerGroup)]:
            try:  # each group on its own: one that raises must not hold back the others (Kafka's own timers)
                self._group_timers(group, now)
            except Exception:
                self.timer_failed(f"the timers of consumer group {group.group_id}")

    def _group_timers(self, group: ConsumerGroup, now: int) -> None:
        """A group's due timers, as one change (``rollback``: a fencing whose write fails is undone, and due again)."""
        if not self._due(group, now):
            return
        with self.rollback.changing(group.group_id):
            self._run_timers(group, now)

    @staticmethod
    def _due(group: ConsumerGroup, now: int) -> bool:
        deadlines = [*group.session_deadlines.values(), *(d for d, _epoch in group.rebalance_deadlines.values()),
                     *group.join_deadlines.values(), *group.sync_deadlines.values()]  # fmt: skip
        return any(d <= now for d in deadlines)

    def _run_timers(self, group: ConsumerGroup, now: int) -> None:
        for member_id, deadline in list(group.session_deadlines.items()):
            if deadline <= now and member_id in group.members and self.groups.get(group.group_id) is group:
                self.fence(group, member_id, "the member session expired")
        for member_id, (deadline, epoch) in list(group.rebalance_deadlines.items()):
            if deadline > now:
                continue
            del group.rebalance_deadlines[member_id]  # fires once, as Kafka's timer
            member = group.members.get(member_id)
            if member is not None and member.member_epoch == epoch and self.groups.get(group.group_id) is group:
                self.fence(group, member_id, f"it failed to transition from epoch {epoch} in time")
        self._classic_timers(group, now)

    def next_deadline(self) -> int | None:
        """The earliest member timer of the consumer groups (``tick``'s next work), passed or not; None when none."""
        due: list[int] = []
        for group in [g for g in self.groups.values() if isinstance(g, ConsumerGroup)]:
            due += [d for m, d in group.session_deadlines.items() if m in group.members]
            due += [d for d, _epoch in group.rebalance_deadlines.values()]
            due += [*group.join_deadlines.values(), *group.sync_deadlines.values()]
        return min(due, default=None)

    def _classic_timers(self, group: ConsumerGroup, now: int) -> None:
        """Kafka's join and sync timeouts of classic members."""
        for timers, reason in ((group.join_deadlines, "the classic member failed to join within the rebalance "
                                "timeout"), (group.sync_deadlines, "the member failed to sync within timeout")):
            for member_id, deadline in list(timers.items()):
                if deadline <= now and self.groups.get(group.group_id) is group:
                    timers.pop(member_id, None)
                    if member_id in group.members:
                        self.fence(group, member_id, reason)


def queue_downgrade(downgraded: dict[str, frozenset[bytes]], group_id: str, stored: Iterable[bytes]) -> None:
    """Queue the deletion of the records a consumer group stored; with those of a downgrade of the same group
    still queued (not yet written), so that neither group's records are left behind."""
    downgraded[group_id] = downgraded.get(group_id, frozenset()) | frozenset(stored)
