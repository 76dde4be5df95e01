"""ConsumerGroupDescribe (key 69): v0-1, KIP-848 consumer groups with their members.

Behaviour: each group's state (Empty, Assigning, Reconciling, Stable), group
epoch, assignment epoch and assignor (the one its members prefer, else the
first of ``group.consumer.assignors``); each member's epoch, client, host,
instance and rack, its subscription, its current assignment (partitions
pending revocation left out, as Kafka) and its target assignment, topics
named by id and name, in name order. The empty id is INVALID_GROUP_ID; an
unknown group and a classic group are GROUP_ID_NOT_FOUND with Kafka's
messages ("Group <id> not found.", "Group <id> is not a consumer group.").
With ``include_authorized_operations`` a group answered without error
reports the operations the principal may do to it.

Authorization (Kafka's ``handleConsumerGroupDescribe``): DESCRIBE on each
GROUP, a refused group answered GROUP_AUTHORIZATION_FAILED and not looked
at; with an authorizer, a group whose members' assignments name a topic the
principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED with
Kafka's message and no members. Refused groups come first, then the
invalid ids, then the rest in the order asked (Kafka orders the last by
``__consumer_offsets`` partition).

Without ``consumer`` in ``group.coordinator.rebalance.protocols`` the API is
not advertised and answers UNSUPPORTED_VERSION for every group.

Version notes: v1 adds ``member_type`` (1: a member of the consumer protocol,
0: a classic member, KIP-848's online migration).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.consumer_requests import GroupError
from .consumer_group_heartbeat import consumer_protocol_enabled

API_KEY = 69
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # KIP-1099's member_type: a member of the classic, consumer protocol
_HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    group_cls = type(resp).DescribedGroup
    if not consumer_protocol_enabled(ctx):
        return _error_answer(ctx, request, ErrorCode.UNSUPPORTED_VERSION)
    allowed = [g for g in request.group_ids if ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    refused = [g for g in request.group_ids if g not in allowed]
    resp.groups = [group_cls(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused]
    resp.groups += [group_cls(group_id="", error_code=ErrorCode.INVALID_GROUP_ID) for g in allowed if not g]
    for group_id in [g for g in allowed if g]:
        described = _described(ctx, group_cls, group_id)
        if request.include_authorized_operations and described.error_code == ErrorCode.NONE:
            described.authorized_operations = ctx.authorized_operations(ResourceType.GROUP, group_id)
        resp.groups.append(described)
    return resp


def _described(ctx: RequestContext, group_cls, group_id: str) -> object:
    groups = ctx.broker.groups
    try:
        group = groups.consumer.consumer_group(group_id)
    except GroupError as exc:
        return group_cls(group_id=group_id, error_code=exc.code, error_message=exc.message)
    names = ctx.broker.topics.names_by_id()
    member_cls = group_cls.Member
    members = [member_cls(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
        client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, member_type=CLASSIC_MEMBER if m.uses_classic else CONSUMER_MEMBER,
        assignment=_assignment(member_cls, m.assigned, names),
        target_assignment=_assignment(member_cls, group.target.get(m.member_id, {}), names),
    ) for m in group.members.values()]  # fmt: skip
    if ctx.broker.authorizer is not None and not _may_see(ctx, members):
        return group_cls(group_id=group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         error_message=_HIDDEN_TOPICS)  # fmt: skip
    assignor = group.preferred_assignor(ctx.broker.config.group_consumer_assignors[0])
    return group_cls(group_id=group_id, group_state=group.state, group_epoch=group.group_epoch,
                     assignment_epoch=group.assignment_epoch, assignor_name=assignor, members=members)  # fmt: skip


def _assignment(member_cls, partitions: dict, names: dict) -> object:
    cls = member_cls.Assignment
    found = sorted((names[t], t) for t in partitions if t in names)
    return cls(topic_partitions=[cls.TopicPartitions(topic_id=t, topic_name=name, partitions=sorted(partitions[t]))
                                 for name, t in found])  # fmt: skip


def _may_see(ctx: RequestContext, members: list) -> bool:
    topics = {tp.topic_name for m in members for a in (m.assignment, m.target_assignment) for tp in a.topic_partitions}
    return all(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t) for t in sorted(topics))


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every group of the request, no message."""
    resp = ctx.response()
    resp.groups = [type(resp).DescribedGroup(group_id=g, error_code=error) for g in request.group_ids]
    return resp
