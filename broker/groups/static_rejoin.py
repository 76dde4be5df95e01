"""KIP-345: a static member (``group.instance.id``) rejoining without its member id.

Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin``, mixed into the
``GroupCoordinator``. The known instance's old member id is replaced at once
(``replaceStaticMember``): a JoinGroup or SyncGroup the old id has parked
answers FENCED_INSTANCE_ID; the new member keeps the old one's assignment,
client id and host, takes over the leadership when the old id led the group,
and gets the request's protocols and timeouts (``updateMember``). Then, by
the group's state:

* Stable with the same protocols: no rebalance; the JoinGroup gets the
  current generation. From v9 (KIP-814) the leader named is the group's,
  so a restarted leader is told it leads, with the member list and
  ``skip_assignment`` (the assignment stands); before v9 the leader named is
  the one before the replacement, and no member list;
* Stable otherwise, or CompletingRebalance (the old id may already be in the
  leader's assignment): a rebalance;
* PreparingRebalance: the join counts as the member's rejoin.
"""

from __future__ import annotations

import attrs

from protocol import ErrorCode

from .group import PREPARING, STABLE, Group, Member, Waiter
from .results import JoinRequest, JoinResult, SyncResult


class StaticRejoin:
    """The static-member part of ``GroupCoordinator`` (which provides the methods used here)."""

    def _replace_static(self, group: Group, req: JoinRequest, old_id: str, new_id: str) -> JoinResult | Waiter:
        leader_before = group.leader_id
        old = group.members[old_id]
        profile = attrs.evolve(old.profile, session_timeout_ms=req.profile.session_timeout_ms,
                               rebalance_timeout_ms=req.profile.rebalance_timeout_ms, protocols=req.profile.protocols)
        member = Member(new_id, profile, assignment=old.assignment)
        member.extend_session(self.clock())
        _fence(group, old, member)
        if group.state == STABLE and member.same_protocols(old.profile.protocols):
            return self._static_rejoined(group, member, leader_before, req.skip_assignment_allowed)
        member.join_waiter = waiter = Waiter()
        if group.state == PREPARING:
            self._check_join_done(group)
        else:
            self._prepare_rebalance(group, f"static member {req.profile.group_instance_id} rejoined")
        return waiter

    def _static_rejoined(self, group: Group, member: Member, leader_before: str | None, v9: bool) -> JoinResult:
        """The answer to a static member's restart that needs no rebalance."""
        if v9:
            return self._current_generation(group, member, skip=True)
        return JoinResult(ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type,
                          group.protocol_name, leader_before or "")  # fmt: skip


def _fence(group: Group, old: Member, new: Member) -> None:
    """``new`` takes ``old``'s place; what ``old`` has parked answers FENCED_INSTANCE_ID."""
    if old.join_waiter is not None:
        old.join_waiter.complete(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old.member_id))
    if old.sync_waiter is not None:
        old.sync_waiter.complete(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
    group.replace_member(old.member_id, new)
