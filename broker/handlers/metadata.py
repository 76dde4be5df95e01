"""Metadata (key 3): v0-12, a single-node cluster.

Behaviour: this broker (``node.id``, advertised host and port) is the only
broker, the controller and the leader of every partition, with itself as the
only replica and ISR. Which topics: v0 answers all topics for an empty list;
v1+ answers all topics for a null list and none for an empty one. An unknown
topic is created on the spot when ``auto.create.topics.enable`` is true and the
request allows it (always before v4; ``allow_auto_topic_creation`` from v4),
with ``num.partitions`` partitions, and returned at once; otherwise it gets
UNKNOWN_TOPIC_OR_PARTITION, and an illegal name INVALID_TOPIC_EXCEPTION.

Version notes: v1 controller_id, is_internal, rack, null topics; v2
cluster_id; v3 throttle_time_ms; v4 allow_auto_topic_creation; v5
offline_replicas; v7 leader_epoch; v8 authorized operations; v9 flexible;
v10 topic ids; v12 topics may be named by id only. Before v12 a topic asked
for by id (or with a null name) makes the request invalid, as in Kafka: every
requested topic is answered INVALID_REQUEST (a null name as ""), no brokers.
"""

from __future__ import annotations

import uuid

from protocol import ErrorCode

from ..dispatch import RequestContext, handler
from ..topics import TopicError

API_KEY = 3


@handler(API_KEY, 0, 12)
async def handle(ctx: RequestContext, request) -> object:
    broker = ctx.broker
    if ctx.version < 12 and request.topics and any(t.name is None or t.topic_id != _NO_ID for t in request.topics):
        return _invalid(ctx, request)
    resp = ctx.response(cluster_id=broker.cluster_id, controller_id=broker.config.node_id)
    cls = type(resp)
    host, port = ctx.advertised
    resp.brokers = [cls.MetadataResponseBroker(node_id=broker.config.node_id, host=host, port=port, rack=None)]
    for name in _requested_names(ctx, request):
        error = None
        if name is not None and _may_create(ctx, request) and broker.topics.get(name) is None:
            error = await _auto_create(ctx, name)
        resp.topics.append(_topic(ctx, cls, name, error))
    return resp


_NO_ID = uuid.UUID(int=0)


def _invalid(ctx: RequestContext, request) -> object:
    """Kafka's error answer to a v10-11 request naming topics by id: INVALID_REQUEST per topic."""
    resp = ctx.response()
    Topic = type(resp).MetadataResponseTopic
    resp.topics = [Topic(error_code=ErrorCode.INVALID_REQUEST, name=t.name or "", topic_id=t.topic_id)
                   for t in request.topics]  # fmt: skip
    return resp


def _requested_names(ctx: RequestContext, request) -> list[str | None]:
    if request.topics is None or (ctx.version == 0 and not request.topics):
        return sorted(ctx.broker.topics.names())
    names = []
    for t in request.topics:
        if t.name is None:
            names.append(ctx.broker.topics.name_for_id(t.topic_id))
        else:
            names.append(t.name)
    return names


def _may_create(ctx: RequestContext, request) -> bool:
    allowed = request.allow_auto_topic_creation if ctx.version >= 4 else True
    return allowed and ctx.broker.config.auto_create_topics_enable


async def _auto_create(ctx: RequestContext, name: str) -> ErrorCode | None:
    """``auto.create.topics.enable``: create ``name`` with ``num.partitions``; the error if that failed."""
    topics = ctx.broker.topics
    async with topics.changes:
        if topics.get(name) is not None:  # made while this request waited
            return None
        try:
            await topics.create(name, num_partitions=ctx.broker.config.num_partitions, configs={})
        except TopicError as exc:
            return exc.error_code
    return None


def _topic(ctx: RequestContext, cls, name: str | None, error: ErrorCode | None) -> object:
    Topic = cls.MetadataResponseTopic
    if name is None:
        return Topic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None)
    if error is not None:
        return Topic(error_code=error, name=name)
    topic = ctx.broker.topics.get(name)
    if topic is None:
        return Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    node = ctx.broker.config.node_id
    Part = Topic.MetadataResponsePartition
    parts = [
        Part(partition_index=i, leader_id=node, leader_epoch=0, replica_nodes=[node], isr_nodes=[node])
        for i in range(topic.num_partitions)
    ]
    return Topic(name=name, topic_id=topic.topic_id, is_internal=topic.internal, partitions=parts)
