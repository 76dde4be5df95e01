"""The coordinator of KIP-848 consumer groups: ConsumerGroupHeartbeat, member timers, describing groups.

Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``, step by step:

1. the group is looked up, or made when a member joins (epoch 0): an empty
   classic group becomes a consumer group (its offsets kept); a classic
   group with members is upgraded online, its members staying as classic
   members, when ``group.consumer.migration.policy`` and Kafka's conditions
   allow, else refused with GROUP_ID_NOT_FOUND (``migration``);
2. the member is looked up or made (static members by instance id: a new
   member replaces one that left with epoch -2, else UNRELEASED_INSTANCE_ID),
   and its epoch checked (FENCED_MEMBER_EPOCH unless it is the current one,
   or the previous one with owned partitions within its assignment, as a
   lost answer leaves it); nothing changes before every check has passed;
3. the member takes what the heartbeat changed; the group epoch is bumped
   when the group is new, a subscription changed, or the subscribed topics
   (names, ids, partition counts) differ from what the last bump saw;
4. a group epoch ahead of the assignment epoch gets a new target
   assignment from the server assignor the members prefer (``assignors``);
5. the member reconciles toward its target (``consumer_member.reconcile``);
   waiting for revocations arms its rebalance timeout;
6. its session timeout restarts; the answer carries the assignment when the
   member joined, sent a full heartbeat, or its assignment changed.

Leaving (epochs -1 and -2), fencing and the member timers (``tick``) are
in ``consumer_fencing``, mixed into the coordinator. What changed is
reported (``dirty``: (group, member id or None for the group's own
records)), so ``GroupManager`` can store it in ``__consumer_offsets``
(``consumer_records``); as Kafka writes a record only when its content
changes, a member is reported when it differs after the heartbeat (its
metadata or current assignment), the group when its epoch, metadata hash or
target assignment epoch moves, and every member with the new target
assignment: a steady heartbeat reports nothing. ``rollback`` keeps what a
group was before changes not yet written, and puts it back when their
write fails (``consumer_rollback``).

After a restart the groups come back with their members, epochs, target
and current assignments (``replay``); ``loaded`` restarts every member's
session timer (and the rebalance timer of those revoking) from the load
time, as Kafka's ``onLoaded`` does: members that keep heartbeating carry
on with their ids and epochs, the others are fenced when their session
expires, and until then keep their partitions from everybody else.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

import attrs

from protocol import ErrorCode

from . import assignors
from . import consumer_records as cr
from . import migration
from .consumer_fencing import MemberFencing
from .consumer_group import ConsumerGroup
from .consumer_member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, UNREVOKED, ConsumerMember, Target, is_subset, reconcile
from .consumer_requests import (GroupError, Heartbeat, HeartbeatResult, check_room, fenced_epoch, new_member_id,
                                not_a_member, static_member, topic_pattern)  # fmt: skip
from .consumer_rollback import Rollback, release_waiters
from .group import EMPTY as CLASSIC_EMPTY
from .group import Group
from .timers import log_timer_failure

log = logging.getLogger("minibroker.groups")


class ConsumerCoordinator(MemberFencing):
    def __init__(self, config: Any, groups: dict, topics: Any, clock: Callable[[], int],
                 setting: Callable[[str, str], int]) -> None:  # fmt: skip
        self.config, self.groups, self.topics, self.clock = config, groups, topics, clock
        self.setting = setting  # (group id, "session.timeout.ms" | "heartbeat.interval.ms") -> ms
        self.dirty: set[tuple[str, str | None]] = set()  # (group, member or None) to store again
        self.converted: set[str] = set()  # classic groups turned into consumer groups (their record goes)
        self.downgraded: dict[str, frozenset[bytes]] = {}  # groups turned classic: the stored keys to delete
        self.on_downgrade: Callable[[Group], None] = lambda _group: None
        self.timer_failed: Callable[[str], None] = log_timer_failure  # GroupManager's: the timers' rate limit
        self.rollback = Rollback(self)  # what a change was before, undone when its write fails

    # -- lookups ---------------------------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if not isinstance(group, ConsumerGroup):
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return group

    def _group_for(self, group_id: str, create: bool) -> ConsumerGroup:
        """Kafka's ``getOrMaybeCreateConsumerGroup``; a new group is not in ``groups`` until the heartbeat is done."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id, state_timestamp=self.clock())
        if isinstance(group, ConsumerGroup):
            return group
        if create and group.state == CLASSIC_EMPTY and not group.members:
            return ConsumerGroup(group_id, state_timestamp=self.clock(), **group.kept_offsets())
        if create:
            migration.check_upgrade(group, self.config)
            return migration.from_classic_group(group, self.topics, self.clock())
        raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _check_epoch(self, member: ConsumerMember, hb: Heartbeat) -> None:
        if hb.member_epoch > member.member_epoch:
            raise fenced_epoch(hb.member_epoch, member.member_epoch, "greater")
        if hb.member_epoch < member.member_epoch and (
                hb.member_epoch != member.previous_member_epoch or not is_subset(hb.owned, member.assigned)):
            raise fenced_epoch(hb.member_epoch, member.member_epoch, "smaller")  # fmt: skip

    def _member_for(self, group: ConsumerGroup, hb: Heartbeat, member_id: str) -> tuple[ConsumerMember, str | None]:
        """The member the heartbeat is from, and the id of a static member it replaces (if any)."""
        joining = hb.member_epoch == 0
        if hb.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise not_a_member(member_id, group.group_id)
                member = ConsumerMember(member_id)
            self._check_epoch(member, hb)
            return member, None
        if not joining:
            old = static_member(group, hb.instance_id, member_id)
            self._check_epoch(old, hb)
            return old, None
        old = group.static_member(hb.instance_id)
        if old is None:
            return group.members.get(member_id) or ConsumerMember(member_id), None
        if old.member_epoch != STATIC_LEAVE_EPOCH and not old.uses_classic:  # a classic holder is replaced
            raise GroupError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                             f"{hb.instance_id} cannot join the group because the instance id is owned by "
                             f"{old.member_id} member.")  # fmt: skip
        return attrs.evolve(old, member_id=member_id, member_epoch=0, previous_member_epoch=0), old.member_id

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------

    def heartbeat(self, hb: Heartbeat, may_describe: Callable[[str], bool] = lambda _t: True) -> HeartbeatResult:
        """One heartbeat (validated: ``consumer_requests.validate``); raises ``GroupError``.

        ``may_describe`` tells whether the member may see a topic (its regex resolves to those only)."""
        if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(hb)
        now = self.clock()
        group = self._group_for(hb.group_id, create=hb.member_epoch == 0)
        member_id = hb.member_id or new_member_id()
        check_room(group, member_id, self.config.group_consumer_max_size)
        member, replaced = self._member_for(group, hb, member_id)
        updated = self._updated(member, hb)
        regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex
        if regex_changed and updated.subscribed_topic_regex:
            topic_pattern(updated.subscribed_topic_regex)  # INVALID_REGULAR_EXPRESSION before anything changes
        if self.groups.get(group.group_id) is not group:  # new, or a classic group converted
            self._install(group)
        if replaced is not None:
            self.replace_static(group, replaced, member, now)
        changed = updated.subscribed_topic_names != member.subscribed_topic_names or regex_changed
        result = self.update_member(group, member, updated, changed, hb.owned, now, may_describe,
                                    bump=group.group_epoch == 0)  # fmt: skip
        self.restart_session(group, result, now)
        full = hb.rebalance_timeout_ms != -1 and hb.owned is not None and (
            hb.subscribed_topic_names is not None or hb.subscribed_topic_regex is not None)  # fmt: skip
        send = hb.member_epoch == 0 or full or result.assigned != member.assigned
        return HeartbeatResult(member_id, result.member_epoch, self.setting(group.group_id, "heartbeat.interval.ms"),
                               dict(result.assigned) if send else None)  # fmt: skip

    def update_member(self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, changed: bool,
                      owned, now: int, may_describe: Callable[[str], bool] = lambda _t: True,
                      bump: bool = False) -> ConsumerMember:  # fmt: skip
        """Steps 3-5 for a heartbeat or a classic member's join: epoch bump, target, reconciliation."""
        snap = self.topics.snapshot()  # read once: every lookup below uses it
        self._resolve_regexes(group, [updated], may_describe, snap)
        self._maybe_bump(group, updated, changed or bump, snap)
        target = self._target_for(group, updated, snap)
        result = self._reconcile(group, updated, target, changed, owned, now)
        old = group.members.get(member.member_id)
        group.replace_member(old, result, now)
        if result != old:  # its metadata or current assignment record changes (the group's: marked where made)
            self.dirty.add((group.group_id, member.member_id))
        return result

    def restart_session(self, group: ConsumerGroup, member: ConsumerMember, now: int) -> None:
        """The member's session timer from ``now``: its classic session timeout for a classic member, else the
        group's ``consumer.session.timeout.ms``."""
        timeout_ms = member.classic.session_timeout_ms if member.uses_classic else self.setting(
            group.group_id, "session.timeout.ms")  # fmt: skip
        group.session_deadlines[member.member_id] = now + timeout_ms

    def _install(self, group: ConsumerGroup) -> None:
        """A new consumer group, or one a classic group became: the classic group's parked joins and syncs
        are told to rejoin (Kafka's ``convertToConsumerGroup``), its record goes, every member is stored."""
        old = self.groups.get(group.group_id)
        if isinstance(old, Group):
            self.converted.add(group.group_id)
            release_waiters(old)
        now = self.clock()
        for member in group.members.values():  # classic members of an upgraded group
            self.restart_session(group, member, now)
            self.dirty.add((group.group_id, member.member_id))
        if group.members:
            log.info("upgraded classic group %s to a consumer group (%d classic members)", group.group_id,
                     len(group.members))  # fmt: skip
        self.dirty.add((group.group_id, None))
        self.groups[group.group_id] = group

    def _updated(self, member: ConsumerMember, hb: Heartbeat) -> ConsumerMember:
        """The member with what the heartbeat changed (Kafka's ``maybeUpdate...``: null means unchanged); a
        classic member sending it uses the consumer protocol from then on, as in Kafka."""
        changes: dict[str, Any] = {"client_id": hb.client_id, "client_host": hb.client_host, "classic": None}
        optional = (("instance_id", hb.instance_id), ("rack_id", hb.rack_id), ("server_assignor", hb.server_assignor),
                    ("subscribed_topic_regex", hb.subscribed_topic_regex))
        for name, value in optional:
            if value is not None:
                changes[name] = value
        if hb.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = hb.rebalance_timeout_ms
        if hb.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = hb.subscribed_topic_names  # kept sorted by the member
        return attrs.evolve(member, **changes)

    def replace_static(self, group: ConsumerGroup, old_id: str, new: ConsumerMember, now: int) -> None:
        """A static member rejoined under a new member id: it takes the old one's place and target."""
        old = group.members[old_id]
        log.info("static member %s of group %s rejoined as %s", new.instance_id, group.group_id, new.member_id)
        target = group.target.pop(old_id, None)
        group.replace_member(old, new, now)
        self.dirty.update({(group.group_id, old_id), (group.group_id, new.member_id)})
        if target is not None:
            group.target[new.member_id] = target
        group.drop_timers(old_id)

    def _maybe_bump(self, group: ConsumerGroup, updated: ConsumerMember, bump: bool, snap: dict) -> None:
        """Bump the group epoch for a changed subscription, or subscribed topics that changed."""
        others = [m for m in group.members.values() if m.member_id != updated.member_id]
        metadata_hash = cr.subscribed_hash(group.subscribed_topic_names([*others, updated]), snap)
        if bump or metadata_hash != group.metadata_hash:
            group.group_epoch += 1
            group.metadata_hash = metadata_hash
            self.dirty.add((group.group_id, None))
            log.info("group %s: epoch %d", group.group_id, group.group_epoch)

    def _resolve_regexes(self, group: ConsumerGroup, extra: list[ConsumerMember],
                         may_describe: Callable[[str], bool], snap: dict | None = None) -> None:  # fmt: skip
        """Resolve every regex the members use against the topics now (the ones the member may describe)."""
        regexes = {m.subscribed_topic_regex for m in [*group.members.values(), *extra] if m.subscribed_topic_regex}
        if not regexes:
            group.resolved_regexes = {}
            return
        names = list(snap) if snap is not None else self.topics.names()
        resolved = {}
        for regex in regexes:
            pattern = topic_pattern(regex)
            resolved[regex] = frozenset(n for n in names if pattern.fullmatch(n) and may_describe(n))
        group.resolved_regexes = resolved

    @staticmethod
    def _subscribed_ids(group: ConsumerGroup, member: ConsumerMember, snap: dict) -> dict[uuid.UUID, int]:
        """The partition count of each topic the member subscribes to that exists, by topic id."""
        found = (snap.get(name) for name in group.subscribed_topic_names([member]))
        return {topic.topic_id: topic.num_partitions for topic in found if topic is not None}

    def _target_for(self, group: ConsumerGroup, updated: ConsumerMember, snap: dict) -> Target:
        """The member's target: a new target assignment first when the group epoch moved past it."""
        subscribed = self._subscribed_ids(group, updated, snap)
        if group.group_epoch > group.assignment_epoch:
            members = {**group.members, updated.member_id: updated}
            specs, counts = [], {}
            for m in members.values():
                ids = subscribed if m is updated else self._subscribed_ids(group, m, snap)
                counts.update(ids)
                current = group.target.get(m.member_id, {})
                specs.append(assignors.MemberSpec(m.member_id, m.instance_id, frozenset(ids), current))
            name = group.preferred_assignor(self.config.group_consumer_assignors[0])
            self.dirty.update((group.group_id, m) for m in {None, *group.target, *members})
            group.target = assignors.assign(name, specs, counts)
            group.assignment_epoch = group.group_epoch
            log.info("group %s: target assignment of epoch %d by the %s assignor", group.group_id,
                     group.group_epoch, name)  # fmt: skip
        return Target(group.assignment_epoch, group.target.get(updated.member_id, {}), frozenset(subscribed),
                      group.partition_epoch)  # fmt: skip

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, target: Target, changed: bool,
                   owned, now: int) -> ConsumerMember:  # fmt: skip
        """Kafka's ``maybeReconcile``: the next state, and the rebalance timeout armed while revoking."""
        if not changed and member.is_reconciled_to(target.epoch):
            return member
        result = reconcile(member, target, changed, owned)
        if result != member:
            if result.state == UNREVOKED:
                group.rebalance_deadlines[member.member_id] = (now + result.rebalance_timeout_ms, result.member_epoch)
            else:
                group.rebalance_deadlines.pop(member.member_id, None)
        return result

    # -- after a restart -------------------------------------------------------------------------

    def unload(self) -> None:
        """Every group is gone (``GroupManager.resign``): nothing queued is written, and the requests whose
        changes are not yet durable answer NOT_COORDINATOR."""
        self.dirty.clear()
        self.converted.clear()
        self.downgraded.clear()
        self.rollback.unload(ErrorCode.NOT_COORDINATOR)

    def loaded(self, group: ConsumerGroup) -> None:
        """A group just rebuilt from ``__consumer_offsets``: its regexes resolved (against every topic: the
        next heartbeat resolves them with its member's rights), each member's session timer started from now,
        and the rebalance timer of each member revoking partitions (Kafka's ``onLoaded``)."""
        now = self.clock()
        self._resolve_regexes(group, [], lambda _topic: True)
        for member in group.members.values():
            self.restart_session(group, member, now)
            if member.state == UNREVOKED:
                group.rebalance_deadlines[member.member_id] = (now + member.rebalance_timeout_ms, member.member_epoch)
        for key in group.stored:  # checked at the next store: records of members not restored get deleted
            self.dirty.add((group.group_id, cr.parse_key(int.from_bytes(key[:2], "big"), key).member_id))
        log.info("loaded consumer group %s with %d members", group.group_id, len(group.members))
