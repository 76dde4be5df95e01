"""KIP-848 online migration: a classic group with members becomes a consumer group, and back.

``group.consumer.migration.policy`` says which way is allowed
(``bidirectional``, ``upgrade``, ``downgrade``, ``disabled``), as Kafka's
``ConsumerGroupMigrationPolicy``.

Upgrade (Kafka's ``validateOnlineUpgrade`` and ``ConsumerGroup.fromClassicGroup``):
a ConsumerGroupHeartbeat joining a classic group with members converts it
when the policy allows it, the group's protocol type is ``consumer`` and it
has no more members than ``group.consumer.max.size``; otherwise
GROUP_ID_NOT_FOUND with Kafka's message. Each classic member becomes a
classic member of the consumer group (``ConsumerMember.classic``) at the
classic generation as its epoch, state stable, subscribed to the topics of
its embedded subscription (``consumer_protocol``), holding, and targeted
at, the partitions of its last assignment; group and assignment epoch are
the generation. An unreadable subscription or assignment is
GROUP_ID_NOT_FOUND ("... the embedded consumer protocol is malformed."),
and so is an assignment with user data (a custom client assignor, whose
data would be lost).

Downgrade (Kafka's ``validateOnlineDowngradeWithFencedMembers`` and
``ClassicGroup.fromConsumerGroup``): when the members left after some leave
are all classic (at least one, and no more than ``group.max.size``) and the
policy allows it, the consumer group
becomes a classic group in state Stable at the group epoch, protocol type
``consumer``, each member with the protocols it joined with and, as its
assignment, its target assignment in the consumer protocol's layout; the
coordinator then starts a rebalance (``GroupCoordinator.adopt_downgraded``).
"""

from __future__ import annotations

import logging
from typing import Any

from protocol import ErrorCode

from . import consumer_protocol as cp
from .consumer_group import CONSUMER, ConsumerGroup
from .consumer_member import ClassicMetadata, ConsumerMember
from .consumer_requests import GroupError
from .group import STABLE, Group, Member, MemberProfile

log = logging.getLogger("minibroker.groups")
UPGRADE, DOWNGRADE = ("bidirectional", "upgrade"), ("bidirectional", "downgrade")


def _cannot_upgrade(group_id: str, why: str) -> GroupError:
    return GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                      f"because {why}.")  # fmt: skip


def check_upgrade(group: Group, config: Any) -> None:
    """Kafka's ``validateOnlineUpgrade``: raises GROUP_ID_NOT_FOUND with its message when the group cannot."""
    if config.group_consumer_migration_policy not in UPGRADE:
        raise _cannot_upgrade(group.group_id, "online upgrade is disabled")
    if group.protocol_type != CONSUMER:
        raise _cannot_upgrade(group.group_id, "the group does not use the consumer embedded protocol")
    if len(group.members) > config.group_consumer_max_size:
        raise _cannot_upgrade(group.group_id, "the group size exceeds the consumer group maximum size")


def _ids(partitions: cp.TopicPartitions, snap: dict) -> dict:
    """Partitions by topic name -> by topic id (topics that no longer exist left out; ``snap``: topics by name)."""
    out: dict = {}
    for name, parts in partitions:
        topic = snap.get(name)
        if topic is not None and parts:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(parts)
    return out


def _converted_member(group: Group, member: Member, snap: dict) -> ConsumerMember:
    protocol = group.protocol_name or member.profile.protocols[0][0]
    subscription = cp.parse_subscription(member.metadata(protocol))
    assigned: dict = {}
    if member.assignment:
        assignment = cp.parse_assignment(member.assignment)
        if assignment.user_data:
            raise ValueError("userData from a custom assignor would be lost")
        assigned = _ids(assignment.partitions, snap)
    p = member.profile
    return ConsumerMember(
        member.member_id, instance_id=p.group_instance_id, rack_id=subscription.rack_id,
        member_epoch=group.generation_id, previous_member_epoch=group.generation_id,
        rebalance_timeout_ms=p.rebalance_timeout_ms, client_id=p.client_id, client_host=p.client_host,
        subscribed_topic_names=subscription.topics, assigned=assigned,
        classic=ClassicMetadata(p.session_timeout_ms, p.protocols),
    )  # fmt: skip


def from_classic_group(group: Group, topics: Any, now: int) -> ConsumerGroup:
    """The consumer group a classic group becomes (offsets kept); raises GROUP_ID_NOT_FOUND as Kafka does."""
    out = ConsumerGroup(group.group_id, group_epoch=group.generation_id, assignment_epoch=group.generation_id,
                        state_timestamp=now, **group.kept_offsets())  # fmt: skip
    snap = topics.snapshot()
    for member in group.members.values():
        try:
            converted = _converted_member(group, member, snap)
        except cp.SchemaError:
            raise _cannot_upgrade(group.group_id, "the embedded consumer protocol is malformed") from None
        except ValueError:
            raise _cannot_upgrade(group.group_id, "an unsupported custom assignor is in use. Please refer to the "
                                  "documentation or switch to a default assignor before re-attempting the upgrade"
                                  ) from None  # fmt: skip
        out.target[converted.member_id] = dict(converted.assigned)
        out.replace_member(None, converted, now)
    return out


def may_downgrade(group: ConsumerGroup, leaving: set[str], config: Any) -> bool:
    """Kafka's ``validateOnlineDowngradeWithFencedMembers``."""
    staying = [m for m in group.members.values() if m.member_id not in leaving]
    if not staying or not all(m.uses_classic for m in staying):
        return False
    if config.group_consumer_migration_policy not in DOWNGRADE:
        log.info("cannot downgrade consumer group %s: online downgrade is disabled", group.group_id)
        return False
    if len(staying) > config.group_max_size:
        log.info("cannot downgrade consumer group %s: its size is greater than group.max.size", group.group_id)
        return False
    return True


def to_classic_group(group: ConsumerGroup, leaving: set[str], names: dict, now: int) -> Group:
    """The classic group (Stable, at the group epoch) the members staying make; ``names``: topic id -> name."""
    out = Group(group.group_id, state=STABLE, protocol_type=CONSUMER, generation_id=group.group_epoch,
                state_timestamp=now, **group.kept_offsets())  # fmt: skip
    for m in group.members.values():
        if m.member_id in leaving:
            continue
        profile = MemberProfile(m.instance_id, m.client_id, m.client_host, m.classic.session_timeout_ms,
                                m.rebalance_timeout_ms, CONSUMER, m.classic.protocols)  # fmt: skip
        member = Member(m.member_id, profile)
        member.extend_session(now)
        out.add_member(member)
    out.protocol_name = out.select_protocol()
    for member in out.members.values():
        version = cp.version_of(member.metadata(out.protocol_name))
        member.assignment = cp.encode_assignment(as_named(group.target.get(member.member_id, {}), names), version)
    return out


def as_named(assignment: dict, names: dict) -> cp.TopicPartitions:
    """An assignment by topic id as (topic name, sorted partitions), topics by name (unknown ids left out)."""
    return sorted((names[t], sorted(ps)) for t, ps in assignment.items() if t in names and ps)
