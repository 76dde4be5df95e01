"""DescribeProducers (key 61): v0, the active producers of each partition (KIP-664).

Behaviour (Kafka's ``KafkaApis.handleDescribeProducersRequest``): a topic
name Kafka's ``Topic.validate`` refuses answers each of its partitions
INVALID_TOPIC_EXCEPTION with Kafka's reason; then a topic the principal may
not READ answers them TOPIC_AUTHORIZATION_FAILED with Kafka's message for the
error, whether the topic exists or not; then an unknown topic
UNKNOWN_TOPIC_OR_PARTITION with its message, an unknown partition of a known
topic UNKNOWN_TOPIC_OR_PARTITION without one, a partition in a failed log
dir KAFKA_STORAGE_ERROR. Otherwise the partition's
producer state (``storage.producer_state``) is listed, by producer id: its
epoch, the last sequence written (-1 after a new epoch with no batch yet),
the largest timestamp written, the coordinator epoch of its last marker (-1
before any) and the first offset of its open transaction (-1 when none), which
``kafka-transactions.sh find-hanging`` looks for.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..topics import TopicError, check_topic_name
from ._admin import UNKNOWN_TOPIC_MESSAGE
from ._admin_authz import DEFAULT_MESSAGES
from ._error_answers import per_partition

API_KEY = 61


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Topic = type(resp).TopicResponse
    for topic in request.topics:
        error = _topic_error(ctx, topic.name)
        parts = [_partition(ctx, Topic.PartitionResponse, topic.name, index, error)
                 for index in topic.partition_indexes]  # fmt: skip
        resp.topics.append(Topic(name=topic.name, partitions=parts))
    return resp


def _topic_error(ctx: RequestContext, name: str) -> tuple[ErrorCode, str] | None:
    try:
        check_topic_name(name)
    except TopicError as exc:
        return exc.error_code, str(exc)
    if not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, DEFAULT_MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    if ctx.broker.topics.get(name) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
    return None


def _partition(ctx: RequestContext, Part: type, topic: str, index: int, error) -> Any:
    if error is not None:
        return Part(partition_index=index, error_code=error[0], error_message=error[1])
    partition = ctx.broker.topics.partition(topic, index)
    if partition is None:
        return Part(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if partition.log.offline:  # its log dir failed: Kafka's getPartitionOrError
        return Part(partition_index=index, error_code=ErrorCode.KAFKA_STORAGE_ERROR)
    State = Part.ProducerState
    producers = sorted(partition.log.producer_state.producers.items())
    return Part(partition_index=index, error_code=ErrorCode.NONE, active_producers=[
        State(producer_id=pid, producer_epoch=entry.epoch, last_sequence=entry.last_seq,
              last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
              current_txn_start_offset=_or_none(entry.current_txn_first_offset))
        for pid, entry in producers
    ])  # fmt: skip


def _or_none(offset: int | None) -> int:
    return -1 if offset is None else offset


@error_answer(API_KEY, throttled=False)  # Kafka's getErrorResponse sets no throttle time
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition asked, no message, no producers."""
    resp = ctx.response()
    asked = [({"name": t.name}, t.partition_indexes) for t in request.topics]
    resp.topics = per_partition(type(resp).TopicResponse, asked, error)
    return resp
