"""OffsetFetch (key 9): v0-10, the offsets a group committed.

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

v9 adds each group's ``member_id`` and ``member_epoch`` (KIP-848). Kafka
validates them only for consumer groups of the new protocol; a classic
group's ``validateOffsetFetch`` only refuses a dead group, and every group
here is a classic one, so they are read and not used. v10 names topics by
id: each id is resolved first, as Kafka's ``handleOffsetFetchRequest`` does,
an id of no topic here answering its partitions UNKNOWN_TOPIC_ID (offset -1,
no metadata); the answer names topics by id, and for a null topic list each
committed topic is named by its current id (offsets are stored by name).

Version notes: v2 top-level error; v5 leader epoch; v6 flexible; v7
``require_stable`` (KIP-447); v8 many groups in one request (KIP-709); v9
member id and epoch; v10 topic ids.
"""

from __future__ import annotations

import uuid

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 9
_NO_ID = uuid.UUID(int=0)


def _wanted(topics) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]


def _topics(topic_cls, part_cls, found: list, ids: dict[str, uuid.UUID] | None = None) -> list:
    """The answer's topics from ``found``; named by id (``ids``: name -> id) from v10."""
    by_topic: dict[str, list] = {}
    for topic, partition, value, error in found:
        part = part_cls(partition_index=partition, committed_offset=-1, metadata="", error_code=error)
        if value is not None:
            part.committed_offset, part.committed_leader_epoch = value.offset, value.leader_epoch
            part.metadata = value.metadata
        by_topic.setdefault(topic, []).append(part)
    if ids is None:
        return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
    return [topic_cls(topic_id=ids.get(name, _NO_ID), partitions=parts) for name, parts in by_topic.items()]


@handler(API_KEY, 0, 10)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    stable = ctx.version >= 7 and request.require_stable
    if ctx.version >= 10:
        return _by_topic_id(ctx, request, resp, stable)
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


def _by_topic_id(ctx: RequestContext, request, resp, stable: bool) -> object:
    """v10: topics by id; an unknown id answers its partitions UNKNOWN_TOPIC_ID, in the order asked."""
    names = ctx.broker.topics.names_by_id()
    ids = {name: topic_id for topic_id, name in names.items()}
    group_cls = type(resp).OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    part_cls = topic_cls.OffsetFetchResponsePartitions
    for g in request.groups:
        asked = None if g.topics is None else [(names.get(t.topic_id), t) for t in g.topics]
        wanted = None if asked is None else [(name, list(t.partition_indexes)) for name, t in asked if name]
        error, found = ctx.broker.groups.fetch(g.group_id, wanted, stable)
        topics = _topics(topic_cls, part_cls, found, ids)
        if asked is not None and error == ErrorCode.NONE:
            topics = _with_unknown_ids(topics, asked, topic_cls, part_cls)
        resp.groups.append(group_cls(group_id=g.group_id, topics=topics, error_code=error))
    return resp


def _with_unknown_ids(topics: list, asked: list, topic_cls, part_cls) -> list:
    """``topics`` (the known ones) with an UNKNOWN_TOPIC_ID entry for each unknown id, in the order asked."""
    by_id = {t.topic_id: t for t in topics}
    out = []
    for name, t in asked:
        if name is None:
            out.append(topic_cls(topic_id=t.topic_id, partitions=[
                part_cls(partition_index=p, committed_offset=-1, metadata="", error_code=ErrorCode.UNKNOWN_TOPIC_ID)
                for p in t.partition_indexes]))  # fmt: skip
        elif t.topic_id in by_id:
            out.append(by_id.pop(t.topic_id))
    return out
