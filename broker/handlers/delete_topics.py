"""DeleteTopics (key 20): v0-6, deleting topics by name or (v6) by topic id.

Behaviour: with ``delete.topic.enable=false`` nothing is deleted and every
topic gets TOPIC_DELETION_DISABLED (v3+) or INVALID_REQUEST (v0-2, which
predate that error code), as Kafka answers. Otherwise, per topic:

* v6 entries must name a topic by exactly one of name and id, else
  INVALID_REQUEST, for each such entry;
* a name or id listed twice (entries naming both not counted):
  INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic id."), one
  answer for all its entries, as Kafka's controller gives;
* an unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id
  UNKNOWN_TOPIC_ID;
* v6, a name (listed once) of a topic whose id is listed too, once or more:
  once the name passed the authorization below (DESCRIBE and DELETE),
  INVALID_REQUEST "The provided topic name maps to an ID that was already
  supplied.", answered with the name and that id; the topic is not deleted,
  and an id listed once gets no answer of its own (Kafka's controller);
* else the topic is removed from storage (the registry forgets its cached
  partitions) and answered with its name and, v6, its id; every group's
  committed offsets of it are deleted too (tombstones in
  ``__consumer_offsets``), as Kafka's coordinator does, and its
  BrokerTopicMetrics series leave the metrics endpoint (Kafka's
  ``BrokerTopicStats.removeMetrics``). Internal topics may be deleted too,
  as Kafka's controller allows: the coordinator whose topic it was drops its
  state at once (``Broker.internal_topic_deleted``), and the topic is made
  again, empty, by the next request that needs it.

Authorization (Kafka's ``ControllerApis.deleteTopics``), after the first two
checks above (the request's shape): DELETE on the cluster allows every topic; else a
topic needs DELETE on itself, and DESCRIBE decides what a refusal reveals. A
topic named without DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether it exists
or not; with DESCRIBE, an unknown one is UNKNOWN_TOPIC_OR_PARTITION and one
without DELETE TOPIC_AUTHORIZATION_FAILED. A topic id is not secret: an
unknown one is UNKNOWN_TOPIC_ID for everyone; a known one without DELETE is
TOPIC_AUTHORIZATION_FAILED, answered with the topic's name only when the
principal may DESCRIBE it (else a null name, "" before v6).

Version notes: v1 throttle_time_ms; v3 TOPIC_DELETION_DISABLED; v4 flexible;
v5 error_message; v6 topics by name or id (``topics`` replaces
``topic_names``). Kafka 4.0 dropped v0.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..mutation_quota import THROTTLED, MutationQuota
from ..topics import TopicError
from ._admin import UNKNOWN_TOPIC_MESSAGE
from ._admin_authz import DEFAULT_MESSAGES, filter_authorized

API_KEY = 20
ZERO_ID = uuid.UUID(int=0)

_CLASH = "The provided topic name maps to an ID that was already supplied."
_MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: UNKNOWN_TOPIC_MESSAGE,
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: DEFAULT_MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED],
}


@handler(API_KEY, 0, 6)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Result = type(resp).DeletableTopicResult
    wanted = _wanted(ctx, request)
    if not ctx.broker.config.delete_topic_enable:
        code = ErrorCode.TOPIC_DELETION_DISABLED if ctx.version >= 3 else ErrorCode.INVALID_REQUEST
        for name, topic_id in wanted:
            resp.responses.append(_result(ctx, Result, name, topic_id, code, None))
        return resp
    names = Counter(n for n, i in wanted if n is not None and i == ZERO_ID)  # how often each is asked, in order
    ids = Counter(i for n, i in wanted if n is None and i != ZERO_ID)
    mutations = MutationQuota(ctx)
    access = _authorize(ctx, names, ids)
    clashes = _clashes(ctx, names, ids, access)
    for name, topic_id in _answered(wanted, names, ids, clashes):
        async with ctx.broker.topics.changes:  # not while a creation or growth is under way
            resp.responses.append(await _delete_one(ctx, Result, (name, topic_id), (names, ids, clashes),
                                                    mutations, access))  # fmt: skip
    mutations.answer(resp)
    for result in resp.responses:
        if result.error_code == ErrorCode.NONE:  # Kafka's handleDeletedPartitions: the topic's offsets go too
            await ctx.broker.groups.topic_deleted(result.name)
    return resp


def _wanted(ctx: RequestContext, request) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.version < 6:
        return [(name, ZERO_ID) for name in request.topic_names]
    return [(t.name, t.topic_id) for t in request.topics]


def _answered(wanted: list[tuple], names: Counter[str], ids: Counter[uuid.UUID],
              clashes: set[uuid.UUID]) -> list[tuple]:  # fmt: skip
    """The entries that get an answer: a repeated name or id once, an id given once that a name clashes with not."""
    seen: set[tuple] = set()
    answered = []
    for name, topic_id in wanted:
        repeated = names[name] > 1 if topic_id == ZERO_ID else name is None and ids[topic_id] > 1
        if repeated and (name, topic_id) in seen:
            continue
        if name is None and topic_id in clashes and ids[topic_id] == 1:
            continue  # answered with the name that maps to it
        seen.add((name, topic_id))
        answered.append((name, topic_id))
    return answered


def _clashes(ctx: RequestContext, names: Counter[str], ids: Counter[uuid.UUID],
             access: tuple[set[str], set[str]]) -> set[uuid.UUID]:  # fmt: skip
    """The listed ids of topics also listed by name (once, and allowed to be described and deleted)."""
    describable, deletable = access
    clashes = set()
    for name in names:
        topic = ctx.broker.topics.get(name) if name in describable and name in deletable else None
        if topic is not None and names[name] == 1 and topic.topic_id in ids:
            clashes.add(topic.topic_id)
    return clashes


def _authorize(ctx: RequestContext, names: Counter[str], ids: Counter[uuid.UUID]) -> tuple[set[str], set[str]]:
    """The topics, of those named once or by an id given once, the principal may describe and may delete."""
    topics = ctx.broker.topics
    resolved = (topics.name_for_id(i) for i in ids if ids[i] == 1)
    asked = [n for n in names if names[n] == 1] + [n for n in resolved if n is not None]
    if ctx.authorized(AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        return set(asked), set(asked)
    describable = filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, asked)
    return describable, filter_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, asked)


async def _delete_one(ctx: RequestContext, Result: type, wanted: tuple, asked: tuple, mutations: MutationQuota,
                access: tuple[set[str], set[str]]) -> Any:  # fmt: skip
    (name, topic_id), (names, ids, clashes), (describable, deletable) = wanted, asked, access
    if name is not None and topic_id != ZERO_ID:
        message = "You may not specify both topic name and topic id."
        return _result(ctx, Result, name, topic_id, ErrorCode.INVALID_REQUEST, message)
    if name is None and topic_id == ZERO_ID:
        message = "Neither topic name nor id were specified."
        return _result(ctx, Result, name, topic_id, ErrorCode.INVALID_REQUEST, message)
    if name is not None and names[name] > 1:
        return _result(ctx, Result, name, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    if name is None and ids[topic_id] > 1:
        return _result(ctx, Result, name, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    topics = ctx.broker.topics
    if name is None:
        name = topics.name_for_id(topic_id)
        if name is None:
            return _result(ctx, Result, None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, None)
        if name not in deletable:
            shown = name if name in describable else None
            return _result(ctx, Result, shown, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    elif name not in describable:
        return _result(ctx, Result, name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    topic = topics.get(name)
    if topic is not None and name not in deletable:
        return _result(ctx, Result, name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    if topic is not None and topic_id == ZERO_ID and topic.topic_id in clashes:
        return _result(ctx, Result, name, topic.topic_id, ErrorCode.INVALID_REQUEST, _CLASH)
    if topic is not None:
        topic_id = topic.topic_id
        if not mutations.charge(topic.num_partitions):
            return _result(ctx, Result, name, topic_id, *THROTTLED)
    try:
        await topics.delete(name)
    except TopicError as exc:
        return _result(ctx, Result, name, topic_id, exc.error_code, None)
    ctx.broker.metrics.remove_topic(name)
    ctx.broker.internal_topic_deleted(name)
    return _result(ctx, Result, name, topic_id, ErrorCode.NONE, None)


def _result(ctx: RequestContext, Result: type, name, topic_id, code: ErrorCode, message: str | None) -> Any:
    if message is None and code != ErrorCode.NONE:
        message = _MESSAGES.get(code)
    if ctx.version < 6 and name is None:
        name = ""
    return Result(name=name, topic_id=topic_id, error_code=code, error_message=message)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every topic of the request (v6: by name and id), no message."""
    resp = ctx.response()
    Result = type(resp).DeletableTopicResult
    if ctx.version >= 6:
        resp.responses = [Result(name=t.name, topic_id=t.topic_id, error_code=error) for t in request.topics]
    else:
        resp.responses = [Result(name=name, error_code=error) for name in request.topic_names]
    return resp
