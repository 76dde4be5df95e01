"""OffsetFetch (key 9): v0-10, the offsets a group committed.

Behaviour: each partition asked for gets its committed offset, leader epoch
and metadata, or offset -1 with empty metadata when nothing is committed
(also for a group that does not exist), error NONE, as Kafka answers. From
v2 a null topic list means every partition the group committed. The empty
group id is accepted, as Kafka accepts it in the offset APIs. A group-level
error (COORDINATOR_NOT_AVAILABLE for a group being deleted) is top-level
from v2 and on every partition before, as v0-1 have nowhere else to put it
(Kafka's KAFKA-19246 fix; before it 3.x answered such a v1 fetch empty).

v0 read offsets from ZooKeeper in Kafka; a KRaft broker has none: a group
the principal may DESCRIBE is answered UNSUPPORTED_VERSION on every
partition asked for (offset -1), GROUP_AUTHORIZATION_FAILED otherwise
(``handleOffsetFetchRequestFromZookeeper``). Kafka 4.0 dropped v0, as
``legacy.protocol.versions.enable=false`` does here.

With ``require_stable`` (v7+) a partition for which an open transaction
staged offsets (TxnOffsetCommit, KIP-98) answers offset -1 and
UNSTABLE_OFFSET_COMMIT, as Kafka does, so a consumer that must not miss
them waits for the transaction's end; without it the last committed offset
is answered.

v9 adds each group's ``member_id`` and ``member_epoch`` (KIP-848). Kafka
validates them only for consumer groups of the new protocol: a fetch naming
a member must come from a current member (UNKNOWN_MEMBER_ID) at its current
epoch (STALE_MEMBER_EPOCH), a group-level error; a classic group's
``validateOffsetFetch`` only refuses a dead group. v10 names topics by
id: each id is resolved first, as Kafka's ``handleOffsetFetchRequest`` does,
an id of no topic here answering its partitions UNKNOWN_TOPIC_ID (offset -1,
no metadata); the answer names topics by id, and for a null topic list each
committed topic is named by its current id (offsets are stored by name).

Authorization, per group (Kafka's ``handleOffsetFetchRequest``): DESCRIBE
on the GROUP; refused, the group is GROUP_AUTHORIZATION_FAILED (top-level
from v2, with no topics; before v2 on every partition asked for) and is not
looked at. Then DESCRIBE on each TOPIC: a topic named in the request that the
principal may not describe answers TOPIC_AUTHORIZATION_FAILED (offset -1) for
each of its partitions (v10: after its id is resolved, an unknown id staying
UNKNOWN_TOPIC_ID), while a fetch of every partition (null topics) silently
leaves out the topics the principal may not describe. Answers keep the
order of the request.

Version notes: v2 top-level error; v5 leader epoch; v6 flexible; v7
``require_stable`` (KIP-447); v8 many groups in one request (KIP-709); v9
member id and epoch; v10 topic ids.
"""

from __future__ import annotations

import uuid

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import per_partition

API_KEY = 9
_NO_ID = uuid.UUID(int=0)
# One partition's answer: (topic name, or id from v10; partition; committed value or None; error).
Entry = tuple[object, int, object, ErrorCode]


def _topics(topic_cls, part_cls, entries: list[Entry], key: str) -> list:
    """The answer's topics from ``entries``, named by ``key`` ("name", or "topic_id" from v10)."""
    by_topic: dict[object, list] = {}
    for topic, partition, value, error in entries:
        part = part_cls(partition_index=partition, committed_offset=-1, metadata="", error_code=error)
        if value is not None:
            part.committed_offset, part.committed_leader_epoch = value.offset, value.leader_epoch
            part.metadata = value.metadata
        by_topic.setdefault(topic, []).append(part)
    return [topic_cls(**{key: topic}, partitions=parts) for topic, parts in by_topic.items()]


@handler(API_KEY, 0, 10)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    stable = ctx.version >= 7 and request.require_stable
    if ctx.version >= 8:
        group_cls = type(resp).OffsetFetchResponseGroup
        topic_cls = group_cls.OffsetFetchResponseTopics
        key = "topic_id" if ctx.version >= 10 else "name"
        for g in request.groups:
            member = (g.member_id, g.member_epoch) if ctx.version >= 9 else (None, -1)
            error, entries = _fetch_group(ctx, g.group_id, g.topics, stable, member)
            topics = _topics(topic_cls, topic_cls.OffsetFetchResponsePartitions, entries, key)
            resp.groups.append(group_cls(group_id=g.group_id, topics=topics, error_code=error))
        return resp
    if ctx.version == 0:  # ZooKeeper's storage in Kafka: a KRaft broker fails every partition
        error, entries = _zookeeper_fetch(ctx, request.group_id), []
    else:
        error, entries = _fetch_group(ctx, request.group_id, request.topics, stable)
    if error != ErrorCode.NONE and ctx.version < 2:  # v0-1: the error goes on every partition asked for
        entries = [(t.name, p, None, error) for t in request.topics or [] for p in t.partition_indexes]
    topic_cls = type(resp).OffsetFetchResponseTopic
    resp.topics = _topics(topic_cls, topic_cls.OffsetFetchResponsePartition, entries, "name")
    resp.error_code = error
    return resp


def _zookeeper_fetch(ctx: RequestContext, group_id: str) -> ErrorCode:
    """v0's answer: Kafka read these offsets from ZooKeeper, and a KRaft broker throws UNSUPPORTED_VERSION
    once the group passed its DESCRIBE check (``handleOffsetFetchRequestFromZookeeper``)."""
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ErrorCode.UNSUPPORTED_VERSION


def _fetch_group(ctx: RequestContext, group_id: str, topics, stable: bool,
                 member: tuple[str | None, int] = (None, -1)) -> tuple[ErrorCode, list[Entry]]:  # fmt: skip
    """One group's error and answers: every partition it committed (``topics`` None), or those asked for;
    ``member`` (v9: id and epoch) is checked for a consumer group."""
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if topics is None:
        return _every_partition(ctx, group_id, stable, member)
    return _named(ctx, group_id, topics, stable, member)


def _every_partition(ctx: RequestContext, group_id: str, stable: bool,
                     member: tuple[str | None, int]) -> tuple[ErrorCode, list[Entry]]:  # fmt: skip
    """Every committed partition of a topic the principal may describe; by its current id from v10."""
    error, found = ctx.broker.groups.fetch(group_id, None, stable, *member)
    if error != ErrorCode.NONE:
        return error, []
    names = dict.fromkeys(f[0] for f in found)
    allowed = {t: ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t) for t in names}
    found = [f for f in found if allowed[f[0]]]
    if ctx.version < 10:
        return error, found
    ids = {name: topic_id for topic_id, name in ctx.broker.topics.names_by_id().items()}
    return error, [(ids.get(t, _NO_ID), p, value, e) for t, p, value, e in found]


def _named(ctx: RequestContext, group_id: str, topics, stable: bool,
           member: tuple[str | None, int]) -> tuple[ErrorCode, list[Entry]]:  # fmt: skip
    """The partitions asked for, in order: an unknown id (v10) or a topic the principal may not describe
    answers its error, the others what the group committed."""
    by_id = ctx.broker.topics.names_by_id() if ctx.version >= 10 else None
    asked = [(t.name if by_id is None else by_id.get(t.topic_id), t.name if by_id is None else t.topic_id,
              list(t.partition_indexes)) for t in topics]  # fmt: skip
    refused = [ErrorCode.UNKNOWN_TOPIC_ID if name is None
               else None if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
               else ErrorCode.TOPIC_AUTHORIZATION_FAILED for name, _key, _parts in asked]  # fmt: skip
    wanted = [(name, parts) for (name, _key, parts), error in zip(asked, refused) if error is None]
    error, found = ctx.broker.groups.fetch(group_id, wanted, stable, *member)
    if error != ErrorCode.NONE:
        return error, []
    answers = iter(found)
    entries: list[Entry] = []
    for (_name, key, parts), refusal in zip(asked, refused):
        entries += [(key, p, None, refusal) if refusal else (key, *next(answers)[1:]) for p in parts]
    return error, entries


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: from v8 ``error`` for every group asked, with no topics; v2-v7 at the top
    alone; v0-v1, which have no top-level error, for every partition asked (offset -1, metadata "")."""
    resp = ctx.response(error_code=error)
    cls = type(resp)
    if ctx.version >= 8:
        resp.groups = [cls.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error) for g in request.groups]
    elif ctx.version < 2:
        asked = [({"name": t.name}, t.partition_indexes) for t in request.topics]
        resp.topics = per_partition(cls.OffsetFetchResponseTopic, asked, error, committed_offset=-1, metadata="")
    return resp
