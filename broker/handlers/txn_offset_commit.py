"""TxnOffsetCommit (key 28): v0-5, a transactional producer commits a group's offsets in its transaction.

Behaviour, in Kafka's order (``KafkaApis.handleTxnOffsetCommitRequest``, then
``GroupCoordinator.handleTxnCommitOffsets``):

* without WRITE on the TRANSACTIONAL_ID every partition is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then without READ on the GROUP every
  partition is GROUP_AUTHORIZATION_FAILED (nothing else is looked at);
* the partitions of a topic the principal may not READ are
  TOPIC_AUTHORIZATION_FAILED and not committed, the others go on (a refused
  topic does not stop the rest: there is no OPERATION_NOT_ATTEMPTED here,
  unlike AddPartitionsToTxn);
* partitions of unknown topics, or beyond a topic's partitions, get
  UNKNOWN_TOPIC_OR_PARTITION; the others go on;
* the empty group id is INVALID_GROUP_ID; while ``__consumer_offsets`` is
  still being created the answer is COORDINATOR_NOT_AVAILABLE (the client
  looks the coordinator up again and retries);
* the transaction coordinator checks that AddOffsetsToTxn put the group in
  this producer's open transaction
  (``TransactionCoordinator.check_offsets_allowed``); its error goes on every
  partition, PRODUCER_FENCED as INVALID_PRODUCER_EPOCH (what Kafka's
  verification answers producers) and, before v4, TRANSACTION_ABORTABLE as
  INVALID_TXN_STATE. From v5 (KIP-890 part 2) the broker adds the group's
  ``__consumer_offsets`` partition to the transaction itself instead
  (``TransactionCoordinator.add_offsets``, what AddOffsetsToTxn does), as
  Kafka's coordinator runtime does for any v5 request whatever the finalized
  ``transaction.version`` and ``transaction.partition.verification.enable``;
  a refusal goes on every partition the same way;
* the group checks (``broker.groups.offsets.commit_error``) and metadata
  longer than ``offset.metadata.max.bytes`` (OFFSET_METADATA_TOO_LARGE) as for OffsetCommit;
* the offsets are written in a transactional batch of the producer to the
  group's ``__consumer_offsets`` partition and answered once durable; they
  become the group's committed offsets only when EndTxn's COMMIT marker is
  written (``GroupManager.complete_transaction``).

Version notes: v2 ``committed_leader_epoch``; v3 flexible, with
``generation_id``, ``member_id`` and ``group_instance_id`` (KIP-447: a
zombie member of an old generation is refused); v4 TRANSACTION_ABORTABLE; v5
adds the offsets partition to the transaction.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import partition_indexes, per_partition

API_KEY = 28


async def _verify(ctx: RequestContext, request) -> ErrorCode | None:
    """The group-level errors before the group itself is looked at."""
    if not request.group_id:
        return ErrorCode.INVALID_GROUP_ID
    if not ctx.broker.groups.store.ensure_topic():
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    txns, producer = ctx.broker.transactions, (request.producer_id, request.producer_epoch)
    if ctx.version >= 5:
        error = await txns.add_offsets(request.transactional_id, *producer, request.group_id)
        error = None if error == ErrorCode.NONE else error
    else:
        error = txns.check_offsets_allowed(request.transactional_id, *producer, request.group_id)
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.version < 4:
        return ErrorCode.INVALID_TXN_STATE
    return error


async def _commit(ctx: RequestContext, request, wanted: list) -> list[ErrorCode]:
    if not wanted:
        return []
    error = await _verify(ctx, request)
    if error is not None:
        return [error] * len(wanted)
    return await ctx.broker.groups.txn_commit(
        request.group_id, (request.producer_id, request.producer_epoch), request.member_id,
        request.group_instance_id, request.generation_id, wanted,
    )  # fmt: skip


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return _response(ctx, request, {}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(ctx, request, {}, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    topics = ctx.broker.topics
    readable = {name: ctx.authorized(AclOperation.READ, ResourceType.TOPIC, name)
                for name in dict.fromkeys(t.name for t in request.topics)}  # fmt: skip
    everything = [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
                  for t in request.topics if readable[t.name] for p in t.partitions]  # fmt: skip
    known = [w for w in everything if topics.partition(w[0], w[1]) is not None]
    answers = dict(zip(((w[0], w[1]) for w in known), await _commit(ctx, request, known)))
    for t in request.topics:
        if not readable[t.name]:
            answers.update(((t.name, p.partition_index), ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions)
    return _response(ctx, request, answers, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _response(ctx: RequestContext, request, answers: dict, otherwise: ErrorCode) -> object:
    """Each partition asked for with its answer, ``otherwise`` for those without one."""
    resp = ctx.response()
    topic_cls = type(resp).TxnOffsetCommitResponseTopic
    part_cls = topic_cls.TxnOffsetCommitResponsePartition
    for t in request.topics:
        codes = [answers.get((t.name, p.partition_index), otherwise) for p in t.partitions]
        parts = [part_cls(partition_index=p.partition_index, error_code=c) for p, c in zip(t.partitions, codes)]
        resp.topics.append(topic_cls(name=t.name, partitions=parts))
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition of the request."""
    resp = ctx.response()
    asked = [({"name": t.name}, partition_indexes(t.partitions)) for t in request.topics]
    resp.topics = per_partition(type(resp).TxnOffsetCommitResponseTopic, asked, error)
    return resp
