"""Produce (key 0): v0-13.

Behaviour: per partition, the records are validated and given offsets by
``log_validator`` (in place for v2 batches whose codec is kept; rebuilt as one
v2 batch for magic 0/1 (Produce v0-2, KIP-724 up-conversion) or when the
topic's ``compression.type`` differs) and appended at the log end offset.
The whole request fails with INVALID_REQUIRED_ACKS when acks is not -1, 0 or
1. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION (Produce never creates
topics), internal topics INVALID_TOPIC_EXCEPTION, disk failures
KAFKA_STORAGE_ERROR. Idempotent batches (producer id >= 0) go through the
partition's producer state first (``storage.producer_state``): a retried
batch is answered with its original offsets and max timestamp (as
``log_append_time_ms``, whatever the timestamp type, as Kafka answers it)
and not written again, a sequence gap gets OUT_OF_ORDER_SEQUENCE_NUMBER, a fenced epoch
INVALID_PRODUCER_EPOCH. A transactional batch needs its partition
added to that producer's open transaction, as Kafka 3.6+ verifies (KIP-890
part 1): INVALID_TXN_STATE otherwise, and the coordinator's error for a
stale epoch or producer id.
acks=-1 never gets NOT_ENOUGH_REPLICAS, whatever ``min.insync.replicas`` says:
Kafka 3.7+ holds the ISR to ``min(min.insync.replicas, replicas)``
(``Partition.effectiveMinIsr``, KAFKA-15583), and this node is the only replica.
From v12 (KIP-890 part 2) the broker first adds those partitions to the
transaction itself, as Kafka's ReplicaManager does for any v12+ request (it
goes by the request version, not by the finalized ``transaction.version``,
and whatever ``transaction.partition.verification.enable`` says): every
existing partition whose records are one transactional v2 batch goes to the
coordinator's ``add_partitions`` at once, before ``acks`` is looked at (an
internal topic's too, which the append then refuses, as in Kafka); if
the coordinator refuses, those partitions get its error as Kafka translates
it (PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, a transaction being ended or
coordinator trouble as NOT_ENOUGH_REPLICAS) and nothing is written to them.
v13 names topics by id (KIP-516): an id of no topic here is UNKNOWN_TOPIC_ID
for each of its partitions, and the answer names its topics by id.
The request's size then counts against the client's ``producer_byte_rate``
quota (``broker/quotas.py``): over it, the answer carries
``throttle_time_ms`` and the connection is muted that long (with ``acks=0``
too, while such a request's time counts against no ``request_percentage``,
as in Kafka). With ``acks=0`` nothing is answered, and when any
partition failed the connection is closed so the producer notices (Kafka's
rule). With ``acks=-1`` in durable mode the answer waits for the group-commit
fsync, a duplicate's too (until its original is on disk, as Kafka holds it
until the high watermark passes the original). Whatever ``acks`` says, an
append after which ``flush.messages`` messages are unflushed is answered once
that flush is done, as Kafka's ``UnifiedLog.append`` flushes before it
returns (``flush.ms`` is the timer's, as Kafka's scheduler's, and delays no
answer); the fsync runs in a group-commit round on a worker thread, so the
event loop serves every other connection meanwhile. A flush that fails, or a
log whose dir goes offline while it waits, answers those partitions
KAFKA_STORAGE_ERROR (with ``acks=0`` the connection is closed). A partition
deleted while its ``acks=-1`` answer waits is UNKNOWN_TOPIC_OR_PARTITION, as
Kafka's purgatory finds it (``DelayedProduce.tryComplete``), the append's
offsets kept in the answer as that sets the error alone; with ``acks`` 0
or 1 it is answered as appended, as Kafka answers once its append (and the
flush in it) returned, before any deletion could remove the partition.

The BrokerTopicMetrics (messages and bytes in, produce requests, failed
ones, rejected bytes, conversions) are marked where Kafka's
``appendToLocalLog`` marks them (``_produce_metrics``).

Authorization (Kafka's ``handleProduceRequest``), before anything else:

* if the first batch of any partition is transactional, the request needs a
  ``transactional_id`` and WRITE on that TRANSACTIONAL_ID; otherwise the
  whole request fails: every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  (with ``acks=0`` the connection is closed), nothing written, no byte quota
  recorded. This holds without an authorizer too (no id, no write);
* each topic needs WRITE: the partitions of the others get
  TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not (so the
  answer tells nothing about topics the principal may not write), and are
  not added to a transaction (v12+). With topic ids (v13) an id of no topic
  is UNKNOWN_TOPIC_ID first: there is no name to authorize;
* with v3-6, a first batch naming codec id 5-7 in any partition that exists
  and may be written fails the whole request: UNKNOWN_SERVER_ERROR for every
  partition, nothing written (``validateRecords`` throws there; from v7 the
  append refuses that partition alone, with the same code);
* an idempotent, non-transactional batch needs nothing more: since Kafka 3.0
  (KIP-679) IDEMPOTENT_WRITE is checked by InitProducerId, not here.

Version notes: v1 throttle_time_ms; v2 log_append_time_ms (message format
v1); v3 transactional_id and magic 2 only; v5 log_start_offset; v7 zstd; v8
record_errors and error_message; v9 flexible; v12 adds transactional
partitions to the transaction; v13 topics by id.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from protocol import ErrorCode
from protocol.records import is_single_v2_batch, iter_batches
from storage.producer_state import BatchInfo, Duplicate

from ..acl_model import AclOperation, ResourceType
from ..dispatch import NO_RESPONSE, CloseConnection, RequestContext, error_answer, handler
from ..log_validator import ValidationError, first_batch_codec_unknown, validate_and_assign
from ..quotas import request_identity, throttle
from . import _produce_metrics as metered
from ._produce_txn import PRODUCER, enroll, has_transactional_records, transaction_check

log = logging.getLogger(__name__)
API_KEY = 0


@handler(API_KEY, 0, 13)
async def handle(ctx: RequestContext, request) -> object:
    txn_id = _txn_id(ctx, request)
    if has_transactional_records(request) and not _may_write_transactional_id(ctx, txn_id):
        return _refuse_all(ctx, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    names = _topic_names(ctx, request)
    unwritable = _unwritable(ctx, names)
    if 3 <= ctx.version < 7 and _codec_fails_all(ctx, request, names, unwritable):
        return _refuse_all(ctx, request, ErrorCode.UNKNOWN_SERVER_ERROR)
    enrolled = await enroll(ctx, request, names, unwritable, txn_id)
    resp, failed = await _write_and_wait(ctx, request, names, unwritable, enrolled, txn_id)
    user, client_id = request_identity(ctx)
    resp.throttle_time_ms = ctx.broker.quotas.record("producer_byte_rate", user, client_id, ctx.size, ctx.broker.clock())
    throttle(ctx, resp.throttle_time_ms)
    if request.acks == 0:
        ctx.request_time_recorded = True  # Kafka exempts it from the request quota: its time is no client's
        if failed:
            raise CloseConnection("acks=0 produce failed", resp)
        return NO_RESPONSE
    return resp


async def _write_and_wait(ctx: RequestContext, request, names: list[str | None], unwritable: set[str],
                          enrolled: dict, txn_id: str | None) -> tuple[object, bool]:  # fmt: skip
    """Append every partition, then wait for the flushes the flush policy wants and, with ``acks=-1``, for
    durability; the answer and whether any partition failed. The group commit keeps a round covering these
    appends that fails whole for this request from before its first append (``LogManager.waiting``)."""
    flushes: list[tuple[object, object, int]] = []
    with ctx.broker.topics.manager.waiting():
        resp, failed, written = _produce_all(ctx, request, names, unwritable, enrolled, txn_id, flushes)
        appended = _appended_to(ctx, resp, names) if request.acks == -1 and written else []
        if flushes:
            failed |= await _wait_flushed(ctx, flushes)
        if appended:
            waiting = time.perf_counter()
            failed |= await _wait_durable(ctx, appended)
            ctx.waited(waiting)  # Kafka's produce purgatory: RemoteTimeMs
    return resp, failed


def _appended_to(ctx: RequestContext, resp, names: list[str | None]) -> list[tuple[object, tuple[str, int], Any]]:
    """(answer, (topic, index), partition) of each append answered NONE, the partition it went to taken before
    any wait (``Broker.not_durable``)."""
    return [(part, (name, part.index), ctx.broker.topics.partition(name, part.index))
            for topic, name in zip(resp.responses, names) if name is not None
            for part in topic.partition_responses if part.error_code == ErrorCode.NONE]  # fmt: skip


async def _wait_durable(ctx: RequestContext, appended: list[tuple[object, tuple[str, int], object]]) -> bool:
    """``acks=-1``: in durable mode, wait for the fsync of what was written; whether a partition failed. A
    KAFKA_STORAGE_ERROR fails the append, its offsets -1, as Kafka answers an append whose flush (the fsync
    durable mode adds to it) failed: every partition when the round failed whole, else each whose log is
    offline now (its fsync failed, or its dir failed while it waited: its records left the group commit and
    were never fsynced; another log's failure in the round fails none of them). A partition deleted meanwhile
    is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's purgatory finds it (``DelayedProduce.tryComplete``,
    ``ReplicaManager.getPartitionOrError``), which sets the error alone: the append's offsets stay; so is one
    deleted and created again meanwhile (``Broker.not_durable``)."""
    written = [(tp, partition) for _part, tp, partition in appended]
    errors = await ctx.broker.not_durable(written, "produced records")
    for (part, _tp, _partition), error in zip(appended, errors):
        if error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:  # the purgatory sets the error alone: the
            part.error_code = error  # append's offsets stay in the answer (DelayedProduce.tryComplete)
        elif error is not None:
            _refused(part, error)
    return any(error is not None for error in errors)


async def _wait_flushed(ctx: RequestContext, flushes: list[tuple[object, object, int]]) -> bool:
    """The flushes the topics' ``flush.messages`` wanted after these appends, done by the group commit on a
    worker thread; whether one failed. A failed fsync of one of these logs took its dir offline: the
    partitions answer KAFKA_STORAGE_ERROR (found offline after the wait), as Kafka's append answers a flush
    that failed in it; another log's failure in the round fails none of them. So does a
    partition whose log went offline while it waited (another append in its dir failed, or an earlier round):
    the group commit dropped it, its records were never fsynced."""
    try:
        await ctx.broker.wait_flushed(max(generation for _part, _log, generation in flushes))
    except OSError as exc:
        log.error("Produce: the flush the flush policy wanted failed: %s", exc)
        lost = [part for part, _log, _generation in flushes]
    else:
        lost = [part for part, log_, _generation in flushes if log_.offline]  # type: ignore[attr-defined]
    for part in lost:
        _refused(part, ErrorCode.KAFKA_STORAGE_ERROR)
    return bool(lost)


def _refused(part, error: ErrorCode) -> None:
    part.error_code, part.base_offset, part.log_append_time_ms = error, -1, -1
    part.log_start_offset = -1


def _produce_all(ctx: RequestContext, request, names: list[str | None], unwritable: set[str], enrolled: dict,
                 txn_id: str | None, flushes: list) -> tuple[object, bool, bool]:  # fmt: skip
    """The answer of every partition; whether any failed, whether any answer is of written records (appended
    now or a duplicate's original: with ``acks=-1`` in durable mode it waits for them to be on disk).
    ``flushes`` gets (answer, log, generation) for each append after which the flush policy wants a flush."""
    resp = ctx.response()
    Topic, Part = type(resp).TopicProduceResponse, type(resp).TopicProduceResponse.PartitionProduceResponse
    acks_ok = request.acks in (-1, 0, 1)
    failed = written = False
    for topic, name in zip(request.topic_data, names):
        parts = []
        for pd in topic.partition_data:
            part = Part(index=pd.index, base_offset=-1)
            error = _refusal(name, pd.index, unwritable, enrolled, acks_ok)
            if error is not None:
                part.error_code = error
            else:
                written |= _produce_one(ctx, name, pd, part, txn_id, flushes)  # type: ignore[arg-type]
            failed |= part.error_code != ErrorCode.NONE
            parts.append(part)
        resp.responses.append(Topic(name=topic.name, topic_id=topic.topic_id, partition_responses=parts))
    return resp, failed, written


def _refusal(name: str | None, index: int, unwritable: set[str], enrolled: dict, acks_ok: bool) -> ErrorCode | None:
    """Why a partition is not even tried, in Kafka's order; None to try it."""
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if name in unwritable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    error = enrolled.get((name, index))
    if error is not None:
        return error
    return None if acks_ok else ErrorCode.INVALID_REQUIRED_ACKS


def _may_write_transactional_id(ctx: RequestContext, txn_id: str | None) -> bool:
    return txn_id is not None and ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)


def _unwritable(ctx: RequestContext, names: list[str | None]) -> set[str]:
    """The requested topics the principal may not WRITE (each asked once, as Kafka's ``filterByAuthorized``)."""
    topics = (name for name in dict.fromkeys(names) if name is not None)
    return {name for name in topics if not ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, name)}


def _codec_fails_all(ctx: RequestContext, request, names: list[str | None], unwritable: set[str]) -> bool:
    """Kafka's ``validateRecords`` (v3-6) reads the codec of each writable, existing partition's first batch:
    ids 5-7 throw IllegalArgumentException, no ApiException, so the whole request fails, nothing written."""
    for topic, name in zip(request.topic_data, names):
        for pd in topic.partition_data if name is not None and name not in unwritable else ():
            if ctx.broker.topics.partition(name, pd.index) and first_batch_codec_unknown(pd.records):
                return True
    return False


@error_answer(API_KEY)
def _refuse_all(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``ProduceRequest.getErrorResponse``: ``error`` for every partition; with ``acks=0`` the
    connection is closed instead."""
    resp = ctx.response()
    Topic, Part = type(resp).TopicProduceResponse, type(resp).TopicProduceResponse.PartitionProduceResponse
    for topic in request.topic_data:
        parts = [Part(index=pd.index, error_code=error, base_offset=-1) for pd in topic.partition_data]
        resp.responses.append(Topic(name=topic.name, topic_id=topic.topic_id, partition_responses=parts))
    if request.acks == 0:
        raise CloseConnection(f"acks=0 produce refused: {error.name}", resp)
    return resp


def _topic_names(ctx: RequestContext, request) -> list[str | None]:
    """Each requested topic's name: v13+ names topics by id (None for an id of no topic here)."""
    if ctx.version < 13:
        return [t.name for t in request.topic_data]
    names = ctx.broker.topics.names_by_id()
    return [names.get(t.topic_id) for t in request.topic_data]


def _txn_id(ctx: RequestContext, request) -> str | None:
    return request.transactional_id if ctx.version >= 3 else None


def _produce_one(ctx: RequestContext, topic: str, pd, part, txn_id: str | None, flushes: list) -> bool:
    """Validate and append one partition's records; fills ``part``; True if appended or a duplicate.
    ``flushes`` gets ``(part, log, generation)`` when the append made ``flush.messages`` due.
    The BrokerTopicMetrics are marked as Kafka marks them (``_produce_metrics``)."""
    broker, size = ctx.broker, len(pd.records) if pd.records is not None else 0
    partition = _partition(ctx, topic, pd, part)
    if partition is None:
        return False
    started = time.perf_counter()
    try:
        validated = validate_and_assign(pd.records, produce_version=ctx.version, now_ms=broker.clock(),
                                        next_offset=partition.log.log_end_offset,
                                        config=partition.validation_config,
                                        topic_partition=f"{topic}-{pd.index}")  # fmt: skip
    except ValidationError as exc:
        _fail(ctx, topic, part, exc, None if metered.refused_before_append(ctx.version, pd.records) else size)
        return False
    conversion = (validated.converted_count, time.perf_counter() - started)
    verdict = transaction_check(broker, txn_id, topic, pd.index, validated.data)
    if verdict is None:
        verdict = _producer_check(partition.log.producer_state, validated.data)
    if isinstance(verdict, Duplicate):  # a retry of a batch already written: answer its offsets again
        # and, as Kafka does whatever the topic's timestamp type, its max timestamp as the log append time
        part.base_offset, part.log_append_time_ms = verdict.first_offset, verdict.timestamp
        part.log_start_offset = partition.log.log_start_offset
        metered.count_append(ctx, topic, size, verdict.first_offset, verdict.last_offset, conversion)
        return True  # Kafka answers it once the original is past the high watermark
    if verdict is not None:
        part.error_code = verdict
        metered.count_failure(broker.metrics, topic, verdict, size)
        return False
    generations: list[int] = []
    error = broker.append(partition, validated, generations)
    if error is not None:
        part.error_code = error
        return False
    flushes.extend((part, partition.log, generation) for generation in generations)
    _appended(part, partition, validated)
    metered.count_append(ctx, topic, size, validated.first_offset, validated.last_offset, conversion)
    return True


def _partition(ctx: RequestContext, topic: str, pd, part):
    """The partition to append to, with ``TotalProduceRequestsPerSec`` marked when Kafka's append would see
    it; None (``part`` answered) when there is none, or no records."""
    broker = ctx.broker
    partition = broker.partition_for_produce(topic, pd.index)
    counted = not metered.refused_before_append(ctx.version, pd.records)
    if isinstance(partition, ErrorCode):
        if counted and partition == ErrorCode.INVALID_TOPIC_EXCEPTION and broker.topics.partition(topic, pd.index):
            metered.count_attempt(broker.metrics, topic)  # Kafka counts it before refusing the internal topic
        part.error_code = partition
        return None
    if counted:
        metered.count_attempt(broker.metrics, topic)
    if pd.records is None:
        part.error_code = ErrorCode.INVALID_RECORD
        return None
    return partition


def _appended(part, partition, validated) -> None:
    """Answer an appended partition."""
    part.base_offset = validated.first_offset
    part.log_append_time_ms = validated.log_append_time
    part.log_start_offset = partition.log.log_start_offset


def _producer_check(state, data) -> Duplicate | ErrorCode | None:
    """Kafka's idempotence checks for the request's batches (duplicates only for a single batch)."""
    if is_single_v2_batch(data) and PRODUCER.unpack_from(data, 43)[0] < 0:  # one batch, not idempotent
        return None
    infos = [BatchInfo.of(v) for v in iter_batches(memoryview(data)) if v.magic == 2 and v.producer_id >= 0]
    for info in infos:
        verdict = state.check(info)
        if isinstance(verdict, Duplicate) and len(infos) > 1:
            return ErrorCode.DUPLICATE_SEQUENCE_NUMBER
        if verdict is not None:
            return verdict
    return None


def _fail(ctx: RequestContext, topic: str, part, exc: ValidationError, size: int | None) -> None:
    """Answer records the validation refused; ``size`` is None when Kafka refuses them before the append,
    where no meter sees them."""
    part.error_code = exc.error_code
    if ctx.version >= 8:  # Kafka sends a message only for errors of records (RecordValidationException)
        part.error_message = str(exc) if exc.record_errors else None
        Err = type(part).BatchIndexAndErrorMessage
        part.record_errors = [Err(batch_index=i, batch_index_error_message=m) for i, m in exc.record_errors]
    if size is not None:
        metered.count_failure(ctx.broker.metrics, topic, exc.error_code, size)
    log.debug("produce to %s-%d refused: %s", topic, part.index, exc)
