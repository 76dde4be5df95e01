"""OffsetCommit (key 8): v0-10, committed offsets stored in ``__consumer_offsets``.

Behaviour: a topic or partition that does not exist is answered
UNKNOWN_TOPIC_OR_PARTITION here, before the group is looked at, as Kafka's
``handleOffsetCommitRequest`` filters them out: a group error never covers
them, and when no partition is left (an empty commit too) the group is not
reached, so no "simple" group is made. ``GroupManager.commit`` then checks
the group and member as Kafka does (see ``broker.groups.offsets``), and each
partition: metadata longer than ``offset.metadata.max.bytes`` (4096; Java chars, as Kafka
counts) is OFFSET_METADATA_TOO_LARGE. The rest
are written as one batch and answered once it is durable.

A group that does not exist takes a commit with a negative generation (a
"simple" group is made); with a generation it is ILLEGAL_GENERATION before
v9 and GROUP_ID_NOT_FOUND from v9, as Kafka's ``OffsetMetadataManager``
answers every protocol. A KIP-848 consumer group checks the member id and
member epoch instead (``broker.groups.consumer_offsets``): UNKNOWN_MEMBER_ID,
STALE_MEMBER_EPOCH, and UNSUPPORTED_VERSION for a member committing with a
version before 9; an epoch older than the member's commits only partitions
the member has held since then (KIP-1251's assignment epochs), and one
partition that fails refuses every partition that reached the group.

v10 names topics by id (KIP-848): each id is resolved first, as Kafka's
``handleOffsetCommitRequest`` does; an id of no topic here is
UNKNOWN_TOPIC_ID for each of its partitions and never reaches the group.
The answer names topics by id. Offsets are stored by topic name, as in
Kafka, so a commit by id and a fetch by name (or the reverse) meet.

Authorization, in Kafka's order (``handleOffsetCommitRequest``): READ on
the GROUP first; refused, every partition asked for is
GROUP_AUTHORIZATION_FAILED and the group is not looked at. Then each topic
(after v10's ids are resolved: an unknown id stays UNKNOWN_TOPIC_ID) needs
READ on the TOPIC; a refused one is TOPIC_AUTHORIZATION_FAILED for each of its
partitions and is not committed. When nothing is left to commit the group is
not reached. Answers keep the order of the request.

v0 (no generation or member) stored offsets in ZooKeeper in Kafka; a KRaft
broker has none and fails it (``commitOffsetsToZookeeper``'s
``requireZkOrThrow``): once anything is left to commit after the checks
above, every partition of the request, the refused and unknown ones too, is
UNSUPPORTED_VERSION, and nothing is stored. Kafka 4.0 dropped v0-1
altogether, as ``legacy.protocol.versions.enable=false`` does here.

Version notes: v1 adds the generation and member id; v1's
per-partition commit timestamp, when not -1, is stored as the commit's time
instead of the broker's clock, as Kafka's ``OffsetAndMetadata.fromRequest``
(and the older ``GroupCoordinatorAdapter``) do, so offset expiry counts
from it; v2-4 ``retention_time_ms`` sets an
explicit expiry; v6 leader epoch; v7 ``group_instance_id``; v8 flexible; v9
GROUP_ID_NOT_FOUND; v10 topic ids.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import partition_indexes, per_partition

API_KEY = 8


@handler(API_KEY, 0, 10)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(ctx, request, [[ErrorCode.GROUP_AUTHORIZATION_FAILED] * len(t.partitions)
                                        for t in request.topics])  # fmt: skip
    early = _early_errors(ctx, request)
    wanted = [(name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata,
               p.commit_timestamp if ctx.version == 1 else -1)
              for t, (name, errors) in zip(request.topics, early) for p, error in zip(t.partitions, errors)
              if error is None]  # fmt: skip
    if not wanted:  # nothing left to commit: the group is not reached (not even made)
        return _response(ctx, request, [errors for _name, errors in early])
    if ctx.version == 0:  # ZooKeeper's storage in Kafka: a KRaft broker fails the whole request
        return _response(ctx, request, [[ErrorCode.UNSUPPORTED_VERSION] * len(t.partitions) for t in request.topics])
    generation = request.generation_id_or_member_epoch
    missing = ErrorCode.GROUP_ID_NOT_FOUND if ctx.version >= 9 else ErrorCode.ILLEGAL_GENERATION
    answers = iter(await ctx.broker.groups.commit(
        request.group_id, request.member_id, request.group_instance_id, generation,
        request.retention_time_ms if 2 <= ctx.version <= 4 else -1, wanted, missing, ctx.version,
    ))  # fmt: skip
    return _response(ctx, request, [[error or next(answers) for error in errors] for _name, errors in early])


def _response(ctx: RequestContext, request, answers: list[list[ErrorCode]]) -> object:
    """The answer: per requested topic, the error of each of its partitions."""
    resp = ctx.response()
    topic_cls = type(resp).OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    for t, errors in zip(request.topics, answers):
        parts = [part_cls(partition_index=p.partition_index, error_code=error)
                 for p, error in zip(t.partitions, errors)]  # fmt: skip
        resp.topics.append(topic_cls(name=t.name, topic_id=t.topic_id, partitions=parts))
    return resp


def _early_errors(ctx: RequestContext, request) -> list[tuple[str | None, list[ErrorCode | None]]]:
    """Per requested topic its name (v10 resolves ids) and, per partition, the error that keeps it from the
    group, or None: Kafka's ``handleOffsetCommitRequest`` checks the topic, then the partition exists."""
    if ctx.version < 10:
        names: list[str | None] = [t.name for t in request.topics]
    else:
        by_id = ctx.broker.topics.names_by_id()
        names = [by_id.get(t.topic_id) for t in request.topics]
    out = []
    for t, name in zip(request.topics, names):
        if name is None:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        elif not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            error = None
        out.append((name, [error or _unknown(ctx, name, p.partition_index) for p in t.partitions]))
    return out


def _unknown(ctx: RequestContext, topic: str, partition: int) -> ErrorCode | None:
    if ctx.broker.topics.partition(topic, partition) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition of the request, each topic as named."""
    resp = ctx.response()
    asked = [({"name": t.name, "topic_id": t.topic_id}, partition_indexes(t.partitions)) for t in request.topics]
    resp.topics = per_partition(type(resp).OffsetCommitResponseTopic, asked, error)
    return resp
