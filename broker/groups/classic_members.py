"""Classic members of a KIP-848 consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup served by it.

After an online upgrade (``migration``) the classic consumers of the group
stay in it, and more may join while it has members: Kafka's
``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup`` and ``classicGroupLeaveToConsumerGroup``:

* JoinGroup answers at once (no waiting for others): the member's
  subscription is read from its first protocol's embedded
  ``ConsumerProtocolSubscription``, the group epoch bumped if it changed,
  a new target assignment made if needed, and the member reconciled with
  the partitions the subscription says it owns, as a ConsumerGroupHeartbeat
  would; the answer's generation is the member's epoch, its protocol the
  first the member offered, its leader nobody. A member id is made (Kafka's
  random Uuid) and, from v4 for a dynamic member, handed back with
  MEMBER_ID_REQUIRED. The member must sync within its rebalance timeout.
* SyncGroup gives the member its assigned partitions (without those
  pending revocation) in the consumer protocol's layout, the version of its
  subscription; REBALANCE_IN_PROGRESS when the group epoch moved past the
  member's and it is not revoking (it must rejoin). It writes nothing but,
  as in Kafka, is answered once the group's writes in flight are durable,
  and only then is its sync deadline cleared: a failed write answers the
  sync its error and leaves the deadline (the member syncs again).
* Heartbeat restarts the member's classic session; REBALANCE_IN_PROGRESS
  tells it to rejoin when its epoch is behind the group's, it must revoke,
  or partitions it waited for were released; from then it has its rebalance
  timeout to rejoin.
* LeaveGroup fences the members named (one epoch bump); when only classic
  members are left the group may go back to being a classic group.

Errors are Kafka's: UNKNOWN_MEMBER_ID (unknown member or instance, or a
member of the consumer protocol), FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
INCONSISTENT_GROUP_PROTOCOL, GROUP_MAX_SIZE_REACHED. Every change is stored
(``GroupManager.store_consumer_groups``) before the answer; a JoinGroup or
LeaveGroup whose write fails is answered its error and undone
(``consumer_rollback``), as Kafka reverts a failed write.
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

import attrs

from protocol import ErrorCode

from . import consumer_protocol as cp
from .consumer_coordinator import ConsumerCoordinator
from .consumer_group import CONSUMER, ConsumerGroup
from .consumer_member import UNRELEASED, UNREVOKED, ClassicMetadata, ConsumerMember
from .consumer_requests import GroupError, check_room, new_member_id, static_member
from .consumer_rollback import Pending
from .migration import as_named
from .results import JoinRequest, JoinResult, SyncRequest, SyncResult

log = logging.getLogger("minibroker.groups")


class ClassicMembers:
    def __init__(self, consumer: ConsumerCoordinator,
                 store: Callable[[str, Pending], Awaitable[ErrorCode | None]]) -> None:  # fmt: skip
        self.consumer, self.store = consumer, store

    # -- JoinGroup -------------------------------------------------------------------------------

    async def join(self, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
        try:
            with self.consumer.rollback.changing(group.group_id) as pending:
                result = self._join(group, req)
        except GroupError as exc:
            return JoinResult(exc.code, req.member_id)
        error = await self.store(group.group_id, pending)
        return result if error is None else JoinResult(error, req.member_id)

    def _join(self, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
        cc, now, profile = self.consumer, self.consumer.clock(), req.profile
        member_id = req.member_id or new_member_id()
        check_room(group, member_id, cc.config.group_consumer_max_size)
        if not group.supports_classic(profile.protocol_type, {name for name, _ in profile.protocols}):
            raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not "
                             "supported.")  # fmt: skip
        if req.require_known_member_id and not req.member_id and profile.group_instance_id is None:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        try:  # before _joining, which may replace a static member: nothing changes before every check passed
            subscription = cp.parse_subscription(profile.protocols[0][1])
        except cp.SchemaError:
            raise GroupError(ErrorCode.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in subscription "
                             "deserialization.") from None  # fmt: skip
        member = self._joining(group, member_id, req)
        updated = attrs.evolve(
            member, instance_id=profile.group_instance_id, rebalance_timeout_ms=profile.rebalance_timeout_ms,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            subscribed_topic_names=subscription.topics, subscribed_topic_regex=None,
            client_id=profile.client_id, client_host=profile.client_host,
            classic=ClassicMetadata(profile.session_timeout_ms, profile.protocols),
        )  # fmt: skip
        changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                   or member.subscribed_topic_regex is not None)  # fmt: skip
        result = cc.update_member(group, member, updated, changed, self._owned(subscription), now)
        group.join_deadlines.pop(member_id, None)
        cc.restart_session(group, result, now)  # the session timeout it joined with
        group.sync_deadlines[member_id] = now + profile.rebalance_timeout_ms
        log.info("classic member %s joined consumer group %s at epoch %d", member_id, group.group_id,
                 result.member_epoch)  # fmt: skip
        return JoinResult(ErrorCode.NONE, member_id, result.member_epoch, CONSUMER, result.classic.protocol_name)

    def _joining(self, group: ConsumerGroup, member_id: str, req: JoinRequest) -> ConsumerMember:
        """The member joining (Kafka's ``getOrMaybeSubscribe...ConsumerGroupMember`` for a classic member)."""
        instance_id = req.profile.group_instance_id
        if instance_id is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if req.member_id:
            return static_member(group, instance_id, member_id)
        old = group.static_member(instance_id)
        if old is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        new = attrs.evolve(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self.consumer.replace_static(group, old.member_id, new, self.consumer.clock())
        return new

    def _owned(self, subscription: cp.Subscription) -> list:
        ids, snap = {}, self.consumer.topics.snapshot()
        for name, parts in subscription.owned:
            topic = snap.get(name)
            if topic is not None:
                ids.setdefault(topic.topic_id, set()).update(parts)
        return [(t, sorted(ps)) for t, ps in ids.items()]

    # -- SyncGroup, Heartbeat --------------------------------------------------------------------

    async def sync(self, group: ConsumerGroup, req: SyncRequest) -> SyncResult:
        try:
            member = self._checked(group, req.member_id, req.group_instance_id, req.generation_id)
            protocol = member.classic.protocol_name
            if req.protocol_type is not None and req.protocol_type != CONSUMER:
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if req.protocol_name is not None and req.protocol_name != protocol:
                raise GroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > member.member_epoch and member.state != UNREVOKED:
                self._must_rejoin(group, member)
                raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        except GroupError as exc:
            return SyncResult(exc.code)
        error = await self.store(group.group_id, None)  # the group's writes in flight: their error, once settled
        if error is not None:
            return SyncResult(error)  # its sync deadline stays: the member syncs again
        if self.consumer.groups.get(group.group_id) is group and member.member_id in group.members:  # not fenced
            group.sync_deadlines.pop(member.member_id, None)
            self.consumer.restart_session(group, member, self.consumer.clock())
        version = cp.version_of(member.classic.protocols[0][1])
        assignment = cp.encode_assignment(as_named(member.assigned, self.consumer.topics.names_by_id()), version)
        return SyncResult(ErrorCode.NONE, assignment, req.protocol_type, req.protocol_name)

    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> ErrorCode:
        try:
            member = self._checked(group, member_id, instance_id, generation)
        except GroupError as exc:
            return exc.code
        self.consumer.restart_session(group, member, self.consumer.clock())
        if member.member_epoch < group.group_epoch or member.state == UNREVOKED or (
                member.state == UNRELEASED and not group.waiting_on_unreleased(member)):  # fmt: skip
            self._must_rejoin(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def _must_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Kafka's join timeout, armed if absent: the member must rejoin within its rebalance timeout."""
        group.join_deadlines.setdefault(member.member_id, self.consumer.clock() + member.rebalance_timeout_ms)

    def _checked(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int,
                 ) -> ConsumerMember:  # fmt: skip
        member = self._validated(group, member_id, instance_id)
        if not member.uses_classic:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if generation != member.member_epoch:
            raise GroupError(ErrorCode.ILLEGAL_GENERATION, f"The request generation id {generation} is not equal "
                             f"to the member epoch {member.member_epoch} of member {member_id}.")  # fmt: skip
        return member

    def _validated(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        """Kafka's ``validateConsumerGroupMember``."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                 f"{group.group_id}.")  # fmt: skip
            return member
        return static_member(group, instance_id, member_id, f"Member with instance id {instance_id} is not a "
                             f"member of group {group.group_id}.")  # fmt: skip

    # -- LeaveGroup ------------------------------------------------------------------------------

    async def leave(self, group: ConsumerGroup, leaving: list[tuple[str, str | None]],
                    ) -> tuple[ErrorCode, list[ErrorCode]]:  # fmt: skip
        errors, gone = [], []
        for member_id, instance_id in leaving:
            try:
                if instance_id is None:
                    member = self._validated(group, member_id, None)
                else:
                    member = static_member(group, instance_id, member_id or None)  # only codes are answered
            except GroupError as exc:
                errors.append(exc.code)
                continue
            errors.append(ErrorCode.NONE)
            gone.append(member.member_id)
        if gone:
            with self.consumer.rollback.changing(group.group_id) as pending:
                self.consumer.fence_members(group, gone, "the member left the group through LeaveGroup")
            error = await self.store(group.group_id, pending)
            if error is not None:
                return error, []
        return ErrorCode.NONE, errors
