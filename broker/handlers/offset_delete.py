"""OffsetDelete (key 47): v0, deleting a group's committed offsets (KIP-496).

Behaviour, as Kafka: an empty group may lose any of its offsets; a consumer
group with members keeps the offsets of topics its members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the others; a group of
another protocol type with members is NON_EMPTY_GROUP; an unknown group
GROUP_ID_NOT_FOUND; an unknown partition UNKNOWN_TOPIC_OR_PARTITION. The
deletions are tombstones in ``__consumer_offsets``.

Authorization (Kafka's ``handleOffsetDeleteRequest``): DELETE on the GROUP
first; refused, the answer is GROUP_AUTHORIZATION_FAILED at the top level
and nothing else. Then READ on each TOPIC: a refused topic's partitions are
TOPIC_AUTHORIZATION_FAILED and keep their offsets; the group is reached
with the rest (even none, so its own error, such as GROUP_ID_NOT_FOUND,
still replaces the whole answer, as Kafka's merge does).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 47


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    allowed = [ctx.authorized(AclOperation.READ, ResourceType.TOPIC, t.name) for t in request.topics]
    wanted = [(t.name, p.partition_index) for t, ok in zip(request.topics, allowed) if ok for p in t.partitions]
    error, errors = await ctx.broker.groups.delete_offsets(request.group_id, wanted)
    resp = ctx.response(error_code=error)
    if error != ErrorCode.NONE:
        return resp
    topic_cls = type(resp).OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    answers = iter(errors)
    for t, ok in zip(request.topics, allowed):
        parts = [part_cls(partition_index=p.partition_index,
                          error_code=next(answers) if ok else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                 for p in t.partitions]  # fmt: skip
        resp.topics.append(topic_cls(name=t.name, partitions=parts))
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
