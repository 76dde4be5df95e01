"""DeleteRecords (key 21): v0-2, moving a partition's log start offset forward.

Behaviour, per partition (Kafka's ``Partition.deleteRecordsOnLeader``):

* a topic the principal may not DELETE (Kafka's ``handleDeleteRecordsRequest``
  asks once per topic, first): TOPIC_AUTHORIZATION_FAILED, whether the topic
  exists or not, and whether it is internal;
* an internal topic: INVALID_TOPIC_EXCEPTION (Kafka refuses to trim them);
* unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
* a topic whose ``cleanup.policy`` lacks ``delete`` (compact only):
  POLICY_VIOLATION;
* ``offset`` -1 means the high watermark; any other negative offset, or one
  above the high watermark, is OFFSET_OUT_OF_RANGE;
* otherwise records before ``offset`` become unreadable: the log start offset
  moves up to it (never down; Kafka's ``maybeIncrementLogStartOffset``), and
  ``low_watermark`` answers the new log start offset. Errors answer
  ``low_watermark`` -1. Segments wholly below it are not removed here: the
  next retention pass does it (``storage/retention.py``), renaming them
  ``.deleted`` for ``file.delete.delay.ms``, as Kafka's retention task does.
  Until then a Fetch below the new start is OFFSET_OUT_OF_RANGE, ListOffsets
  earliest answers it, and ``kafka_log_log_size`` still counts those segments.

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..topics import INTERNAL_TOPICS
from ._error_answers import partition_indexes, per_partition

API_KEY = 21
HIGH_WATERMARK = -1
_REFUSED = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Topic = type(resp).DeleteRecordsTopicResult
    Part = Topic.DeleteRecordsPartitionResult
    for topic in request.topics:
        parts = []
        allowed = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            code, low_watermark = _delete(ctx, topic.name, p) if allowed else _REFUSED
            parts.append(Part(partition_index=p.partition_index, low_watermark=low_watermark, error_code=code))
        resp.topics.append(Topic(name=topic.name, partitions=parts))
    return resp


def _delete(ctx: RequestContext, topic: str, p: Any) -> tuple[ErrorCode, int]:
    if topic in INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
    partition = ctx.broker.topics.partition(topic, p.partition_index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    if partition.log.offline:  # its log dir failed
        return ErrorCode.KAFKA_STORAGE_ERROR, -1
    if "delete" not in partition.config.cleanup_policy:
        return ErrorCode.POLICY_VIOLATION, -1
    log = partition.log
    offset = log.high_watermark if p.offset == HIGH_WATERMARK else p.offset
    if offset < 0 or offset > log.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    try:
        low_watermark = log.delete_records_before(offset)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR, -1
    return ErrorCode.NONE, low_watermark


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition of the request, low watermark -1."""
    resp = ctx.response()
    asked = [({"name": t.name}, partition_indexes(t.partitions)) for t in request.topics]
    resp.topics = per_partition(type(resp).DeleteRecordsTopicResult, asked, error, low_watermark=-1)
    return resp
