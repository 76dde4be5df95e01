"""AddPartitionsToTxn (key 24): v0-3, the partitions a transactional producer is about to write.

Behaviour: the request is checked as Kafka's KafkaApis does before it reaches
the coordinator: without WRITE on the TRANSACTIONAL_ID every partition is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then a partition of an internal topic
(clients may not write one) or of a topic the principal may not WRITE is
TOPIC_AUTHORIZATION_FAILED (before its existence is looked at), one that
does not exist UNKNOWN_TOPIC_OR_PARTITION, and if any partition failed, the
others get OPERATION_NOT_ATTEMPTED and none is added. Otherwise the
transaction coordinator adds them all and every partition gets its answer (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
CONCURRENT_TRANSACTIONS ...). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v2.

Version notes: v1 identical (throttling); v2 PRODUCER_FENCED; v3 flexible.
v4+ batch many transactions and are for brokers (KIP-890); clients use v0-3.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..topics import INTERNAL_TOPICS
from ..transactions import for_version
from ._error_answers import per_partition

API_KEY = 24


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    wanted = [(t.name, p) for t in request.topics for p in t.partitions]
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return _response(ctx, request, dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    writable = {t: t not in INTERNAL_TOPICS and ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, t)
                for t in dict.fromkeys(t for t, _p in wanted)}  # fmt: skip
    errors = {tp: _precheck(ctx, *tp, writable[tp[0]]) for tp in wanted}
    if any(e is not None for e in errors.values()):
        errors = {tp: e or ErrorCode.OPERATION_NOT_ATTEMPTED for tp, e in errors.items()}
    else:
        error = await ctx.broker.transactions.add_partitions(
            request.transactional_id, request.producer_id, request.producer_epoch, set(wanted))
        errors = dict.fromkeys(wanted, for_version(error, ctx.version, 2))
    return _response(ctx, request, errors)


def _precheck(ctx: RequestContext, topic: str, index: int, writable: bool) -> ErrorCode | None:
    if not writable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if ctx.broker.topics.partition(topic, index) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return None


def _response(ctx: RequestContext, request, errors: dict) -> object:
    resp = ctx.response()
    Topic = type(resp).AddPartitionsToTxnTopicResult
    Part = Topic.AddPartitionsToTxnPartitionResult
    for t in request.topics:
        parts = [Part(partition_index=p, partition_error_code=errors[(t.name, p)]) for p in t.partitions]
        resp.results_by_topic.append(Topic(name=t.name, results_by_partition=parts))
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse`` (v0-v3): ``error`` for every partition of the request."""
    resp = ctx.response()
    asked = [({"name": t.name}, t.partitions) for t in request.topics]
    resp.results_by_topic = per_partition(type(resp).AddPartitionsToTxnTopicResult, asked, error,
                                          parts="results_by_partition", code="partition_error_code")  # fmt: skip
    return resp
