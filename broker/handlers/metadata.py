"""Metadata (key 3): v0-13, a single-node cluster.

Behaviour: this broker (``node.id``, advertised host and port, from v1
``broker.rack``, null without it) is the only broker, the controller and the leader of every partition, with itself as the
only replica and ISR. Which topics: v0 answers all topics for an empty list;
v1+ answers all topics for a null list and none for an empty one. Named
topics are answered once each, in the order asked. An unknown topic is created
on the spot when ``auto.create.topics.enable`` is true and the request allows
it (always before v4; ``allow_auto_topic_creation`` from v4), with
``num.partitions`` partitions, and returned at once; otherwise it gets
UNKNOWN_TOPIC_OR_PARTITION, and an illegal name INVALID_TOPIC_EXCEPTION.
``__consumer_offsets`` and ``__transaction_state`` are created as their
coordinators create them (Kafka's ``AutoTopicCreationManager.creatableTopic``:
``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions``,
compacted), in the background: UNKNOWN_TOPIC_OR_PARTITION (``is_internal``
set) until they exist, which is what a KRaft broker answers while its
creation request is with the controller.

By topic id (v12+), as Kafka's ``handleTopicMetadataRequest``: if any
requested topic has a non-zero ``topic_id`` the request is resolved by id
alone (topics asked for by name only, with a zero id, are dropped; a name
sent with an id is ignored). Unknown ids come first, each as
UNKNOWN_TOPIC_ID with a null name and the id echoed; then the known ids'
topics, named. Nothing is ever created for an id. A null name with no id
anywhere in the request makes Kafka fail (a NullPointerException): every
requested topic is answered UNKNOWN_SERVER_ERROR (a null name as ""), no
brokers.

The top-level ``error_code`` (v13+, KIP-1102) stays NONE in every answer of
the normal path: like Kafka 4.x, this broker never asks a client to
re-bootstrap. Only the whole-request error answers (Kafka's
``getErrorResponse``: the UNKNOWN_SERVER_ERROR just above) carry their error
there as well as on every topic.

Authorization (Kafka's ``handleTopicMetadataRequest``), after the
whole-request checks above:

* each topic needs DESCRIBE. When all topics are asked for, the others are
  left out of the answer (and their denial is not logged); a topic asked for
  by name that the principal may not describe is TOPIC_AUTHORIZATION_FAILED
  with a zero id and no partitions, whether it exists or not, so the answer
  does not tell which topics exist; one asked for by id (ids are not
  secret) is TOPIC_AUTHORIZATION_FAILED with a null name and its id echoed.
  An unknown id is UNKNOWN_TOPIC_ID whoever asks;
* auto-creating a missing topic also needs CREATE, on the cluster (its
  denial not logged) or else on the topic; a topic it may describe but not
  create is TOPIC_AUTHORIZATION_FAILED (zero id, ``is_internal`` by name)
  and is not created;
* the answer lists, as Kafka does, the unknown ids, the described topics,
  the topics it may not create, then the topics it may not describe.

Authorized operations (v8+): with ``include_topic_authorized_operations``
every described topic (an unknown one too) carries the bit field of the TOPIC
operations the principal may do to it (``RequestContext.authorized_operations``;
all of them without an authorizer); the refused and unknown-id entries keep
INT32_MIN. With ``include_cluster_authorized_operations`` (v8-10) the
response carries the CLUSTER operations it may do, or 0 when it may not
DESCRIBE the cluster. Otherwise, and before v8, the fields keep INT32_MIN.

A partition whose log dir failed (``storage.log_dir_failure``) is answered as
Kafka's controller leaves it: LEADER_NOT_AVAILABLE, leader -1, this node
its offline replica.

Version notes: v1 controller_id, is_internal, rack, null topics; v2
cluster_id; v3 throttle_time_ms; v4 allow_auto_topic_creation; v5
offline_replicas; v7 leader_epoch; v8 authorized operations; v9 flexible;
v10 topic ids; v12 topics may be named by id only; v13 the top-level
error_code. Before v12 a topic asked
for by id (or with a null name) makes the request invalid, as in Kafka: every
requested topic is answered INVALID_REQUEST (a null name as ""), no brokers.
"""

from __future__ import annotations

import uuid

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..topics import INTERNAL_TOPICS, TopicError, missing_topic_error

API_KEY = 3

_NO_ID = uuid.UUID(int=0)


@handler(API_KEY, 0, 13)
async def handle(ctx: RequestContext, request) -> object:
    broker = ctx.broker
    asked = request.topics if _names_topics(ctx, request) else []
    if ctx.version < 12 and any(t.name is None or t.topic_id != _NO_ID for t in asked):
        return _error_answer(ctx, request, ErrorCode.INVALID_REQUEST)
    topic_ids = list(dict.fromkeys(t.topic_id for t in asked if t.topic_id != _NO_ID))
    if not topic_ids and any(t.name is None for t in asked):
        return _error_answer(ctx, request, ErrorCode.UNKNOWN_SERVER_ERROR)
    resp = ctx.response(cluster_id=broker.cluster_id, controller_id=broker.config.node_id)
    cls = type(resp)
    host, port = ctx.advertised
    resp.brokers = [cls.MetadataResponseBroker(node_id=broker.config.node_id, host=host, port=port,
                                               rack=broker.config.broker_rack)]
    if topic_ids:
        names = _known_names(ctx, cls, topic_ids, resp.topics)
    else:
        names = _requested_names(ctx, request)
    await _describe_topics(ctx, request, cls, names, bool(topic_ids), resp.topics)
    _set_cluster_operations(ctx, request, resp)
    return resp


async def _describe_topics(ctx: RequestContext, request, cls, names: list[str], by_id: bool, entries: list) -> None:
    """Append the entries of the topics ``names`` (authorized ones described, missing ones perhaps created,
    then the refused ones) to ``entries``."""
    Topic = cls.MetadataResponseTopic
    describable, hidden = _split_describable(ctx, request, names)
    uncreatable = set() if by_id else _uncreatable(ctx, request, describable)
    for name in describable:
        if name in uncreatable:
            continue
        error = None
        if not by_id and _may_create(ctx, request) and ctx.broker.topics.get(name) is None:
            error = await _auto_create(ctx, name)
        entries.append(_topic(ctx, cls, name, error, request))
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    entries.extend(Topic(error_code=refused, name=name, is_internal=name in INTERNAL_TOPICS)
                   for name in describable if name in uncreatable)  # fmt: skip
    if not _names_topics(ctx, request):
        return  # a listing of all topics leaves out the ones the principal may not describe
    for name in hidden:
        if by_id:
            entries.append(Topic(error_code=refused, name=None, topic_id=ctx.broker.topics.get(name).topic_id))
        else:
            entries.append(Topic(error_code=refused, name=name))


def _split_describable(ctx: RequestContext, request, names: list[str]) -> tuple[list[str], list[str]]:
    """``names`` split by DESCRIBE: (allowed, refused); denials of an all-topics listing are not logged."""
    log_denied = _names_topics(ctx, request)
    allowed, refused = [], []
    for name in names:
        may = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_denied=log_denied)
        (allowed if may else refused).append(name)
    return allowed, refused


def _uncreatable(ctx: RequestContext, request, describable: list[str]) -> set[str]:
    """The missing topics auto-creation would make but the principal may not CREATE: neither on the cluster
    (a denial not logged) nor on the topic."""
    if not _may_create(ctx, request):
        return set()
    missing = [name for name in describable if ctx.broker.topics.get(name) is None]
    if not missing or ctx.authorized(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        return set()
    return {name for name in missing if not ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, name)}


def _names_topics(ctx: RequestContext, request) -> bool:
    """Whether the request lists its topics (Kafka's ``!isAllTopics``)."""
    return request.topics is not None and not (ctx.version == 0 and not request.topics)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every requested topic (a null name as "") and, from v13, at
    the top level; no brokers."""
    resp = ctx.response(error_code=error)
    Topic = type(resp).MetadataResponseTopic
    resp.topics = [Topic(error_code=error, name=t.name or "", topic_id=t.topic_id)
                   for t in request.topics or []]  # fmt: skip
    return resp


def _known_names(ctx: RequestContext, cls, topic_ids: list[uuid.UUID], entries: list) -> list[str]:
    """The names of the known ``topic_ids``; an UNKNOWN_TOPIC_ID entry in ``entries`` for each unknown one."""
    names = []
    for topic_id in topic_ids:
        name = ctx.broker.topics.name_for_id(topic_id)
        if name is None:
            entries.append(cls.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                                     topic_id=topic_id, is_internal=False))  # fmt: skip
        else:
            names.append(name)
    return names


def _requested_names(ctx: RequestContext, request) -> list[str]:
    if not _names_topics(ctx, request):
        return sorted(ctx.broker.topics.names())
    return list(dict.fromkeys(t.name for t in request.topics))


def _may_create(ctx: RequestContext, request) -> bool:
    allowed = request.allow_auto_topic_creation if ctx.version >= 4 else True
    return _names_topics(ctx, request) and allowed and ctx.broker.config.auto_create_topics_enable


async def _auto_create(ctx: RequestContext, name: str) -> ErrorCode | None:
    """``auto.create.topics.enable``: create ``name`` with ``num.partitions``; the error if that failed.

    An internal topic is made by its coordinator's ``InternalTopic`` (its own partition count, compacted),
    in the background: UNKNOWN_TOPIC_OR_PARTITION until it exists, as a KRaft broker answers while its
    CreateTopics request to the controller is in flight."""
    internal = _internal_topic(ctx, name)
    if internal is not None:
        return None if internal.ensure_topic() else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    topics = ctx.broker.topics
    async with topics.changes:
        if topics.get(name) is not None:  # made while this request waited
            return None
        try:
            await topics.create(name, num_partitions=ctx.broker.config.num_partitions, configs={})
        except TopicError as exc:
            return exc.error_code
    return None


def _internal_topic(ctx: RequestContext, name: str) -> object | None:
    """The coordinator's ``InternalTopic`` for ``__consumer_offsets`` / ``__transaction_state``, else None."""
    for internal in (ctx.broker.groups.store, ctx.broker.transactions.topic):
        if internal.name == name:
            return internal
    return None


def _topic(ctx: RequestContext, cls, name: str, error: ErrorCode | None, request) -> object:
    """The entry for the topic ``name`` (an error entry if ``error`` is set or it does not exist)."""
    entry = _topic_entry(ctx, cls.MetadataResponseTopic, name, error)
    if ctx.version >= 8 and request.include_topic_authorized_operations:
        entry.topic_authorized_operations = ctx.authorized_operations(ResourceType.TOPIC, name)
    return entry


def _topic_entry(ctx: RequestContext, Topic, name: str, error: ErrorCode | None) -> object:
    topic = ctx.broker.topics.get(name) if error is None else None
    if topic is None:
        return Topic(error_code=error or missing_topic_error(name), name=name, is_internal=name in INTERNAL_TOPICS)
    node = ctx.broker.config.node_id
    Part = Topic.MetadataResponsePartition
    parts = [
        Part(partition_index=i, leader_id=node, leader_epoch=0, replica_nodes=[node], isr_nodes=[node])
        for i in range(topic.num_partitions)
    ]
    for i in ctx.broker.topics.offline_partitions(name):  # its log dir failed: Kafka's leaderless partition
        parts[i].error_code, parts[i].leader_id, parts[i].offline_replicas = ErrorCode.LEADER_NOT_AVAILABLE, -1, [node]
    return Topic(name=name, topic_id=topic.topic_id, is_internal=topic.internal, partitions=parts)


def _set_cluster_operations(ctx: RequestContext, request, resp) -> None:
    """v8-10 ``include_cluster_authorized_operations``: the CLUSTER operations allowed, 0 without DESCRIBE."""
    if 8 <= ctx.version <= 10 and request.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = 0
        if ctx.authorized_cluster(AclOperation.DESCRIBE):
            resp.cluster_authorized_operations = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
