"""CreatePartitions (key 37): v0-3, growing a topic's partition count.

Behaviour, per topic (Kafka's controller checks and messages):

* a topic listed twice: INVALID_REQUEST "Duplicate topic name.";
* an unknown topic: UNKNOWN_TOPIC_OR_PARTITION;
* ``count`` below the current count, or equal to it: INVALID_PARTITIONS
  (partitions are never removed);
* ``assignments``, when given, must list one replica list per new partition,
  each exactly ``[node.id]``, else INVALID_REPLICA_ASSIGNMENT;
* a topic whose new partitions would take the request past
  ``MAX_PARTITIONS_PER_REQUEST`` (10,000, the KRaft controller's bound):
  POLICY_VIOLATION "Unable to perform excessively large batch operation.";
* otherwise the storage layer creates the new partitions (empty logs), all
  or none: one it cannot create (no space, no file descriptors left) undoes
  the others and the topic gets KAFKA_STORAGE_ERROR. ``validate_only`` runs
  the checks and changes nothing.

Authorization (Kafka's ``ControllerApis.createPartitions``), after the
duplicate check and before every other: each topic needs ALTER on itself
(ALTER on the cluster does not stand in for it); one without is
TOPIC_AUTHORIZATION_FAILED with no message, whether it exists or not.

Version notes: v1 answers before throttling; v2 flexible; v3 same as v2.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..mutation_quota import THROTTLED, MutationQuota
from ..topics import TopicError
from ._admin import INVALID_REPLICA_ASSIGNMENT, MAX_PARTITIONS_PER_REQUEST
from ._admin_authz import filter_authorized

API_KEY = 37


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Result = type(resp).CreatePartitionsTopicResult
    names = Counter(t.name for t in request.topics)  # how often each is asked, in order
    answered: set[str] = set()
    room = MAX_PARTITIONS_PER_REQUEST  # partitions this request may still create
    mutations = MutationQuota(ctx)
    once = [name for name, count in names.items() if count == 1]
    alterable = filter_authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC, once)
    for topic in request.topics:
        if topic.name in answered:
            continue
        answered.add(topic.name)
        if names[topic.name] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        elif topic.name not in alterable:
            code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
        else:
            async with ctx.broker.topics.changes:
                code, message, added = await _grow(ctx, topic, request.validate_only, room, mutations)
            room -= added
        resp.results.append(Result(name=topic.name, error_code=code, error_message=message))
    mutations.answer(resp)
    return resp


async def _grow(ctx: RequestContext, topic, validate_only: bool, room: int,
                mutations: MutationQuota) -> tuple[ErrorCode, str | None, int]:  # fmt: skip
    """The topic's answer and the partitions it added (or would add, ``validate_only``)."""
    topics = ctx.broker.topics
    current = topics.get(topic.name)
    if current is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, 0
    have, want = current.num_partitions, topic.count
    if want < have:
        message = f"The topic {topic.name} currently has {have} partition(s); {want} would not be an increase."
        return ErrorCode.INVALID_PARTITIONS, message, 0
    if want == have:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).", 0
    if topic.assignments is not None:
        message = _assignment_error(ctx, topic.assignments, want - have)
        if message:
            return INVALID_REPLICA_ASSIGNMENT, message, 0
    if want - have > room:
        return ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.", 0
    if not mutations.charge(want - have):
        return *THROTTLED, 0
    if not validate_only:
        try:
            await topics.add_partitions(topic.name, want)
        except TopicError as exc:
            return exc.error_code, str(exc), 0
    return ErrorCode.NONE, None, want - have


def _assignment_error(ctx: RequestContext, assignments: list[Any], added: int) -> str | None:
    if len(assignments) != added:
        return (
            f"Attempted to add {added} additional partition(s), but only {len(assignments)} assignment(s) "
            "were specified."
        )
    node = ctx.broker.config.node_id
    for a in assignments:
        if not a.broker_ids:
            return "The manual partition assignment includes an empty replica list."
        for broker_id in a.broker_ids:
            if broker_id != node:
                return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
        if len(a.broker_ids) > 1:
            return f"The manual partition assignment includes the broker {node} more than once."
    return None


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every topic of the request, no message."""
    resp = ctx.response()
    Result = type(resp).CreatePartitionsTopicResult
    resp.results = [Result(name=topic.name, error_code=error, error_message=None) for topic in request.topics]
    return resp
