"""OffsetForLeaderEpoch (key 23): v0-4, the end offset of a leader epoch.

Behaviour: this node has led every partition since it was created, in one
leader epoch, 0, whose start offset is the log start offset. So the leader
epoch cache Kafka would consult holds the single entry (0, log_start_offset)
(``Partition.makeLeader`` writes it when the partition takes epoch 0, before
any append, so an empty log has it too; deleting records moves its start),
and Kafka's lookup (``LeaderEpochFileCache.endOffsetFor``) gives:

* requested epoch 0 (the latest): ``end_offset`` = log end offset, epoch 0;
* requested epoch -1 (undefined), or above 0 (newer than any known): -1, -1;
* requested epoch below -1 (older than every entry): the first entry's start,
  ``end_offset`` = log start offset, with the requested epoch echoed.

Unknown partitions are UNKNOWN_TOPIC_OR_PARTITION. From v2 a given
``current_leader_epoch`` (not -1) is checked against 0: lower is
FENCED_LEADER_EPOCH, higher UNKNOWN_LEADER_EPOCH. ``replica_id`` (v3+)
changes nothing on a single node: consumers (-1), debug tools (-2) and
followers get the same answer.

Authorization (Kafka's ``handleOffsetForLeaderEpochRequest``): a principal
with CLUSTER_ACTION on the cluster (a broker) may ask about any topic; any
other needs DESCRIBE on each topic (KIP-320 opened the API to consumers).
Kafka goes by the principal, not by ``replica_id``, and so does this
handler; a denied CLUSTER_ACTION is not logged, as it is only the first of
two ways in. Every partition of a refused topic is TOPIC_AUTHORIZATION_FAILED
(epoch -1, end offset -1), whether the topic exists or not; the answer lists
the allowed topics first, then the refused ones.

Version notes: v1 leader_epoch in the answer; v2 current_leader_epoch and
throttle_time_ms; v3 replica_id; v4 flexible.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._admin import LEADER_EPOCH, NO_EPOCH, leader_epoch_error
from ._error_answers import partition_indexes, per_partition

API_KEY = 23


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Topic = type(resp).OffsetForLeaderTopicResult
    Part = Topic.EpochEndOffset
    any_topic = ctx.authorized(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
    refused = []
    for topic in request.topics:
        if not any_topic and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic):
            refused.append(Topic(topic=topic.topic, partitions=[
                Part(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition)
                for p in topic.partitions]))  # fmt: skip
            continue
        parts = []
        for p in topic.partitions:
            code, epoch, end_offset = _end_offset(ctx, topic.topic, p)
            parts.append(Part(error_code=code, partition=p.partition, leader_epoch=epoch, end_offset=end_offset))
        resp.topics.append(Topic(topic=topic.topic, partitions=parts))
    resp.topics.extend(refused)
    return resp


def _end_offset(ctx: RequestContext, topic: str, p: Any) -> tuple[ErrorCode, int, int]:
    partition = ctx.broker.topics.partition(topic, p.partition)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_EPOCH, -1
    if partition.log.offline:  # its log dir failed
        return ErrorCode.KAFKA_STORAGE_ERROR, NO_EPOCH, -1
    error = leader_epoch_error(p.current_leader_epoch)
    if error is not None:
        return error, NO_EPOCH, -1
    log = partition.log
    if p.leader_epoch == LEADER_EPOCH:
        return ErrorCode.NONE, LEADER_EPOCH, log.log_end_offset
    if p.leader_epoch < NO_EPOCH:
        return ErrorCode.NONE, p.leader_epoch, log.log_start_offset
    return ErrorCode.NONE, NO_EPOCH, -1


@error_answer(API_KEY, throttled=False)  # Kafka's getErrorResponse sets no throttle time
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition asked, epoch and end offset -1."""
    resp = ctx.response()
    asked = [({"topic": t.topic}, partition_indexes(t.partitions, "partition")) for t in request.topics]
    resp.topics = per_partition(type(resp).OffsetForLeaderTopicResult, asked, error, index="partition")
    return resp
