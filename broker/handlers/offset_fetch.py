"""OffsetFetch (key 9): v0-8, the offsets a group committed.

Behaviour: each partition asked for gets its committed offset, leader epoch
and metadata, or offset -1 with empty metadata when nothing is committed
(also for a group that does not exist), error NONE, as Kafka answers. From
v2 a null topic list means every partition the group committed. The empty
group id is accepted, as Kafka accepts it in the offset APIs. A group-level
error (COORDINATOR_NOT_AVAILABLE for a group being deleted) is top-level
from v2 and on every partition before, as v0-1 have nowhere else to put it.

With ``require_stable`` (v7+) a partition for which an open transaction
staged offsets (TxnOffsetCommit, KIP-98) answers offset -1 and
UNSTABLE_OFFSET_COMMIT, as Kafka does, so a consumer that must not miss
them waits for the transaction's end; without it the last committed offset
is answered.

Version notes: v2 top-level error; v5 leader epoch; v6 flexible; v7
``require_stable`` (KIP-447); v8 many groups in one request (KIP-709).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 9


def _wanted(topics) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]


def _topics(topic_cls, part_cls, found: list) -> list:
    by_topic: dict[str, list] = {}
    for topic, partition, value, error in found:
        part = part_cls(partition_index=partition, committed_offset=-1, metadata="", error_code=error)
        if value is not None:
            part.committed_offset, part.committed_leader_epoch = value.offset, value.leader_epoch
            part.metadata = value.metadata
        by_topic.setdefault(topic, []).append(part)
    return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]


@handler(API_KEY, 0, 8)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    stable = ctx.version >= 7 and request.require_stable
    if ctx.version >= 8:
        group_cls = type(resp).OffsetFetchResponseGroup
        topic_cls = group_cls.OffsetFetchResponseTopics
        for g in request.groups:
            error, found = ctx.broker.groups.fetch(g.group_id, _wanted(g.topics), stable)
            topics = _topics(topic_cls, topic_cls.OffsetFetchResponsePartitions, found)
            resp.groups.append(group_cls(group_id=g.group_id, topics=topics, error_code=error))
        return resp
    error, found = ctx.broker.groups.fetch(request.group_id, _wanted(request.topics), stable)
    topic_cls = type(resp).OffsetFetchResponseTopic
    if error != ErrorCode.NONE and ctx.version < 2:  # v0-1: the error goes on every partition asked for
        found = [(t, p, None, error) for t, parts in (_wanted(request.topics) or []) for p in parts]
        resp.topics = _topics(topic_cls, topic_cls.OffsetFetchResponsePartition, found)
        return resp
    resp.topics = _topics(topic_cls, topic_cls.OffsetFetchResponsePartition, found)
    resp.error_code = error
    return resp
