"""DescribeTopicPartitions (key 75): v0, KIP-966's paged topic description.

As Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`` answer it:

* **Which topics.** The names asked for, each once, or every topic when the
  list is empty; with a ``cursor``, only names at or after the cursor's topic
  (Java's ``String.compareTo``: UTF-16 code units), in that order.
* **Whole-request errors** (Kafka throws, and answers every requested topic
  with the error, no partitions, a zero id; the message goes to the log at
  ERROR): a cursor whose topic is not among the named topics, and then a
  cursor whose partition index is negative, are INVALID_REQUEST
  ("DescribeTopicPartitionsRequest topic list should contain the cursor
  topic: t", "... cursor partition must be valid: Cursor(topicName='t',
  partitionIndex=-1)"); a topic named "" asked for with no cursor, when the
  principal may describe it, is UNKNOWN_SERVER_ERROR (Kafka reads the absent
  cursor's partition for it: a NullPointerException).
* **Authorization.** DESCRIBE on every such topic (each denial logged, the
  whole list's, not only the answered page's). An all-topics request leaves
  the refused ones out; named ones come after the page as
  TOPIC_AUTHORIZATION_FAILED with a zero id and ``is_internal`` false,
  whether they exist or not, so existence is not told (sorted by name here;
  Kafka's order is a hash set's). Names are not checked before this.
* **The page.** The limit is ``response_partition_limit`` capped by
  ``max.request.partition.size.limit`` and at least 1. The cursor's topic
  starts at the cursor's partition, every other one at 0. Topics are taken
  in order while partitions are left: a topic cut short ends the page with
  ``next_cursor`` = (topic, first partition left out); when the limit is used
  up exactly, the next topic in order (even one that does not exist) becomes
  ``next_cursor`` at partition 0. A cursor past a topic's last partition
  gives it with no partitions. Java's int arithmetic is kept: a cursor
  partition near 2^31 overflows ``start + limit``, and the topic comes back
  with no partitions and a negative ``next_cursor``, as from Kafka.
* **A topic that does not exist** (deleted, or never made) is left out of an
  all-topics answer; a named one is UNKNOWN_TOPIC_OR_PARTITION, or
  INVALID_TOPIC_EXCEPTION when its name is not legal, with a zero id. It
  takes none of the limit. A cursor on a topic deleted since therefore goes
  on with the next topic.
* **Each topic answered** (errors too, not the refused) carries the TOPIC
  operations the principal may do (``topic_authorized_operations``).
  Partitions: this node leads each, at leader epoch 0, and is its only
  replica and ISR; the eligible leader replicas and last known ELR are empty
  lists, as is ``offline_replicas``. A partition whose log dir failed has no
  leader (-1, LEADER_NOT_AVAILABLE) and this node as its offline replica,
  as Kafka's controller leaves it.
"""

from __future__ import annotations

import logging

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..topics import INTERNAL_TOPICS, missing_topic_error
from ._admin import LEADER_EPOCH

API_KEY = 75
log = logging.getLogger(__name__)
_INVALID_REQUEST = "org.apache.kafka.common.errors.InvalidRequestException: "


def java_order(name: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit)."""
    return name.encode("utf-16-be", "surrogatepass")


def _int32(n: int) -> int:
    """``n`` wrapped as a Java int."""
    return (n + 2**31) % 2**32 - 2**31


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    all_topics = not request.topics
    known = ctx.broker.topics.snapshot()
    names = sorted(_asked(request, known), key=java_order)
    problem = _cursor_problem(request, names)
    if problem is not None:
        return _failed(ctx, request, ErrorCode.INVALID_REQUEST, _INVALID_REQUEST + problem)
    resp = ctx.response()
    Topic = type(resp).DescribeTopicPartitionsResponseTopic
    allowed, refused = [], []
    for name in names:
        if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            allowed.append(name)
        elif not all_topics:
            refused.append(Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name))
    if request.cursor is None and "" in allowed:
        return _failed(ctx, request, ErrorCode.UNKNOWN_SERVER_ERROR, "java.lang.NullPointerException")
    limit = max(min(ctx.broker.config.max_request_partition_size_limit, request.response_partition_limit), 1)
    _fill_page(ctx, request, resp, [(name, known.get(name)) for name in allowed], limit)
    for topic in resp.topics:
        topic.topic_authorized_operations = ctx.authorized_operations(ResourceType.TOPIC, topic.name)
    resp.topics.extend(refused)
    return resp


def _asked(request, known: dict) -> set[str]:
    """The topics the request is about: those named (or all ``known``), from the cursor's topic on."""
    start = java_order(request.cursor.topic_name) if request.cursor is not None else b""
    names = [t.name for t in request.topics] if request.topics else known
    return {name for name in names if java_order(name) >= start}


def _cursor_problem(request, names: list[str]) -> str | None:
    """Kafka's InvalidRequestException message for a cursor it refuses, or None."""
    cursor = request.cursor
    if cursor is None:
        return None
    if request.topics and cursor.topic_name not in names:
        return f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {cursor.topic_name}"
    if cursor.partition_index < 0:
        return ("DescribeTopicPartitionsRequest cursor partition must be valid: "
                f"Cursor(topicName='{cursor.topic_name}', partitionIndex={cursor.partition_index})")  # fmt: skip
    return None


def _failed(ctx: RequestContext, request, error: ErrorCode, exception: str) -> object:
    """The request failed as Kafka's handler throws ``exception``: logged, and answered ``error``."""
    log.error("Unexpected error handling request DescribeTopicPartitions v%d (client %s, principal %s): %s",
              ctx.version, ctx.request.header.client_id, ctx.principal, exception)  # fmt: skip
    return _error_answer(ctx, request, error)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every requested topic, in the request's order."""
    resp = ctx.response()
    Topic = type(resp).DescribeTopicPartitionsResponseTopic
    resp.topics = [Topic(error_code=error, name=t.name) for t in request.topics]
    return resp


def _fill_page(ctx: RequestContext, request, resp, topics: list[tuple], limit: int) -> None:
    """Append to ``resp`` the ``(name, Topic or None)`` of ``topics`` in order while ``limit`` partitions are
    left; set ``next_cursor`` where the page stops short."""
    cls = type(resp)
    cursor = request.cursor
    remaining = limit
    for name, topic in topics:
        if remaining == 0:
            resp.next_cursor = cls.Cursor(topic_name=name, partition_index=0)
            return
        if topic is None:  # only a named topic can be missing: all topics are listed from the same snapshot
            resp.topics.append(_missing(cls.DescribeTopicPartitionsResponseTopic, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        upper = min(topic.num_partitions, _int32(start + remaining))
        entry = _topic(ctx, cls.DescribeTopicPartitionsResponseTopic, topic, range(start, upper))
        resp.topics.append(entry)
        if upper < topic.num_partitions:
            resp.next_cursor = cls.Cursor(topic_name=name, partition_index=upper)
            return
        remaining -= len(entry.partitions)


def _topic(ctx: RequestContext, Topic, topic, indexes: range) -> object:
    node = ctx.broker.config.node_id
    Part = Topic.DescribeTopicPartitionsResponsePartition
    parts = [Part(partition_index=i, leader_id=node, leader_epoch=LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node],
                  eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[]) for i in indexes]  # fmt: skip
    for part in parts:
        if part.partition_index in ctx.broker.topics.offline_partitions(topic.name):  # a failed log dir
            part.error_code, part.leader_id, part.offline_replicas = ErrorCode.LEADER_NOT_AVAILABLE, -1, [node]
    return Topic(name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal, partitions=parts)


def _missing(Topic, name: str) -> object:
    """A named topic that does not exist: INVALID_TOPIC_EXCEPTION if its name is not legal."""
    return Topic(error_code=missing_topic_error(name), name=name, is_internal=name in INTERNAL_TOPICS)
