"""KIP-345: a static member (``group.instance.id``) rejoining without its member id.

Kafka's ``updateStaticMemberThenRebalanceOrCompleteJoin``, mixed into the
``GroupCoordinator``. The known instance's old member id is replaced at once
(``replaceStaticMember``): a JoinGroup or SyncGroup the old id has parked
answers FENCED_INSTANCE_ID; the new member keeps the old one's assignment,
client id and host, takes over the leadership when the old id led the group,
and gets the request's protocols and timeouts (``updateMember``). Then, by
the group's state:

* Stable, and the protocol the group would select now is its current one
  (the metadata may differ: a restarted consumer sends other owned
  partitions, KIP-345's point): no rebalance; the group is stored with
  the new member id (so a broker restart keeps it) and only then does the
  JoinGroup get the current generation; a failed write puts the old id
  back (valid again) and answers the write's error with no member id.
  From v9 (KIP-814) the leader named is the group's, so a restarted
  leader is told it leads, with the member list and
  ``skip_assignment`` (the assignment stands); before v9 the leader named is
  the one before the replacement, and no member list;
* Stable with another protocol selected, or CompletingRebalance (the old id may already be in the
  leader's assignment): a rebalance;
* PreparingRebalance: the join counts as the member's rejoin.
"""

from __future__ import annotations

import logging

import attrs
import trio

from protocol import ErrorCode

from .group import PREPARING, STABLE, Group, Member, Waiter
from .results import JoinRequest, JoinResult, SyncResult

log = logging.getLogger("minibroker.groups")


class StaticRejoin:
    """The static-member part of ``GroupCoordinator`` (which provides the methods used here)."""

    def _replace_static(self, group: Group, req: JoinRequest, old_id: str, new_id: str) -> Waiter:
        leader_before = group.leader_id
        old = group.members[old_id]
        profile = attrs.evolve(old.profile, session_timeout_ms=req.profile.session_timeout_ms,
                               rebalance_timeout_ms=req.profile.rebalance_timeout_ms, protocols=req.profile.protocols)
        member = Member(new_id, profile, assignment=old.assignment)
        member.extend_session(self.clock())
        _fence(group, old, member)
        member.join_waiter = waiter = Waiter()
        if group.state == STABLE and group.select_protocol() == group.protocol_name:
            trio.lowlevel.spawn_system_task(self._store_replacement, group, old, member, leader_before,
                                            req.skip_assignment_allowed, self.store.epoch)  # fmt: skip
        elif group.state == PREPARING:
            self._check_join_done(group)
        else:
            self._prepare_rebalance(group, f"static member {req.profile.group_instance_id} rejoined")
        return waiter

    async def _store_replacement(self, group: Group, old: Member, member: Member, leader_before: str | None,
                                 v9: bool, epoch: int) -> None:  # fmt: skip
        """Store the group with the new member id, then answer its JoinGroup; a failed write reverts the
        replacement and answers the error (Kafka's append future for this case). Run as a system task: the
        answer comes even if the request's connection is gone meanwhile. ``epoch``: the store's when the
        replacement was made; nothing is written once ``__consumer_offsets`` was deleted since."""
        error = await self.store.write_group(group, epoch)
        self.timers_moved()  # the member's parked join ends below: its session runs again
        waiter = member.join_waiter
        if waiter is None or group.members.get(member.member_id) is not member:
            return  # a rebalance answered the join meanwhile, or the new member is gone
        member.join_waiter = None
        if error is None:
            waiter.complete(self._static_rejoined(group, member, leader_before, v9))
            return
        log.warning("could not store the new member id %s of static member %s of group %s (%s): %s is "
                    "valid again", member.member_id, member.group_instance_id, group.group_id, error.name,
                    old.member_id)  # fmt: skip
        old.extend_session(self.clock())
        group.replace_member(member.member_id, old)
        waiter.complete(JoinResult(error, "", group.generation_id, group.protocol_type, group.protocol_name,
                                   leader_before or ""))  # fmt: skip

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
    old.join_waiter = old.sync_waiter = None
    group.replace_member(old.member_id, new)
