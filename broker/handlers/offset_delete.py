"""OffsetDelete (key 47): v0, deleting a group's committed offsets (KIP-496).

Behaviour, as Kafka: an empty group may lose any of its offsets; a consumer
group with members keeps the offsets of topics its members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the others; a group of
another protocol type with members is NON_EMPTY_GROUP; an unknown group
GROUP_ID_NOT_FOUND; an unknown partition UNKNOWN_TOPIC_OR_PARTITION. The
deletions are tombstones in ``__consumer_offsets``.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 47


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, errors = await ctx.broker.groups.delete_offsets(request.group_id, wanted)
    resp = ctx.response(error_code=error)
    if error != ErrorCode.NONE:
        return resp
    topic_cls = type(resp).OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    answers = iter(errors)
    for t in request.topics:
        parts = [part_cls(partition_index=p.partition_index, error_code=next(answers)) for p in t.partitions]
        resp.topics.append(topic_cls(name=t.name, partitions=parts))
    return resp
