"""WriteTxnMarkers (key 27): v0-2, write the COMMIT/ABORT markers a coordinator or an admin client sends.

Our own transaction coordinator writes its markers in-process
(``transactions.markers``); this request comes from ``Admin.abortTransaction``
and ``kafka-transactions.sh abort`` (KIP-664), which end a hanging
transaction with the producer id, epoch and coordinator epoch that
DescribeProducers shows. Behaviour (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``, appending as the COORDINATOR
origin with ``ProducerAppendInfo.appendEndTxnMarker``'s checks), per marker
and each partition it names (a partition named twice in one marker is
written once):

* an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
* an epoch below the producer's epoch in that partition: INVALID_PRODUCER_EPOCH,
  and from v2 for a marker of ``transaction_version`` 2 (KIP-1228) also an
  equal epoch while the producer's transaction there is open (an equal
  epoch with none open is the retry of the marker that ended it, written
  again, as Kafka 4.3 lets it through);
  a coordinator epoch below that of the producer's last marker there:
  TRANSACTION_COORDINATOR_FENCED (``ProducerStateManager.check_marker``);
* otherwise the control batch is appended at the log end offset: the
  producer's open transaction there ends (the last stable offset moves on;
  an ABORT is indexed in ``.txnindex`` and listed by read_committed Fetch),
  and the producer takes the marker's epoch and coordinator epoch. A
  ``__consumer_offsets`` partition goes to the group coordinator
  (``GroupManager.complete_transaction``: the marker, then the producer's
  pending transactional offsets of the groups there committed or dropped);
  a failure there answers the append's error (a log dir gone offline:
  KAFKA_STORAGE_ERROR), as Kafka answers the group coordinator's
  ``completeTransaction`` failure, which only turns COORDINATOR_NOT_AVAILABLE,
  COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR into NOT_LEADER_OR_FOLLOWER.

The answer waits until the markers are durable (Kafka appends with acks -1);
a storage failure is KAFKA_STORAGE_ERROR, and so is a marker whose log is
offline after the wait (its dir failed before the fsync), as Kafka answers
an acks -1 append whose partition went offline meanwhile; one whose topic
was deleted meanwhile is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's purgatory
finds it. Each marker is answered for the log it went to, as Kafka appends
each marker of the request on its own (two producers' markers to one
partition that was created again between them: the first's log is gone, the
second's is there). Errors are grouped
by producer id (one entry per producer id, as Kafka's map gives), then
topic, in request order. The transaction coordinator's own state is left alone, as in Kafka.

Authorization, before anything is written: ALTER on the cluster (checked
without logging a denial), or else CLUSTER_ACTION on the cluster. Without
either the request fails as a whole, as Kafka's thrown
ClusterAuthorizationException does: every partition of every marker is
CLUSTER_AUTHORIZATION_FAILED, one entry per producer id holding the
partitions of its last marker (Kafka's error response keeps one map per
producer id, replaced marker by marker), a marker naming no partition
included.

Version notes: v1 is the v0 layout, flexible; v2 adds each marker's
``transaction_version``.
"""

from __future__ import annotations

import logging

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.manager import MarkerNotWritten
from ..groups.store import OFFSETS_TOPIC
from ..transactions.markers import append_marker
from ._error_answers import per_partition

log = logging.getLogger("minibroker.transactions")
API_KEY = 27
Errors = dict[tuple[str, int], ErrorCode]


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    if not _authorized(ctx):
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response(ctx, {m.producer_id: {(t.name, i): refused for t in m.topics for i in t.partition_indexes}
                               for m in request.markers})  # fmt: skip
    results: dict[int, Errors] = {}
    appended: list[tuple[int, tuple[str, int], object]] = []
    for marker in request.markers:
        for tp in dict.fromkeys((t.name, i) for t in marker.topics for i in t.partition_indexes):
            errors = results.setdefault(marker.producer_id, {})  # a marker naming no partition gets no entry
            errors[tp] = await _write(ctx, marker, *tp)  # a data partition's append awaits nothing: the
            if errors[tp] == ErrorCode.NONE and tp[0] != OFFSETS_TOPIC:  # partition now is the one written
                appended.append((marker.producer_id, tp, ctx.broker.topics.partition(*tp)))
    written = [(tp, part) for _pid, tp, part in appended]
    lost = await ctx.broker.not_durable(written, "transaction markers") if appended else []
    for (producer_id, tp, _partition), error in zip(appended, lost):  # each marker for its own log, as Kafka
        if error is not None:  # appends each marker of the request on its own
            results[producer_id][tp] = error
    return _response(ctx, results)


def _authorized(ctx: RequestContext) -> bool:
    """ALTER on the cluster (a denial not logged), or else CLUSTER_ACTION."""
    if ctx.authorized(AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        return True
    return ctx.authorized_cluster(AclOperation.CLUSTER_ACTION)


async def _write(ctx: RequestContext, marker, topic: str, index: int) -> ErrorCode:
    """Check and write ``marker`` into ``topic``-``index``; the partition's error code."""
    broker = ctx.broker
    partition = broker.topics.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    pid, epoch, commit = marker.producer_id, marker.producer_epoch, marker.transaction_result
    version = marker.transaction_version if ctx.version >= 2 else 0
    error = partition.log.producer_state.check_marker(pid, epoch, marker.coordinator_epoch, version)
    if error is not None:
        log.info("WriteTxnMarkers for producer %d (epoch %d, coordinator epoch %d) refused in %s-%d: %s", pid,
                 epoch, marker.coordinator_epoch, topic, index, error.name)  # fmt: skip
        return error
    if topic == OFFSETS_TOPIC:
        return await _write_offsets(ctx, marker, index)
    error = append_marker(broker, partition, pid, epoch, commit, marker.coordinator_epoch)
    if error is None:
        log.info("WriteTxnMarkers: %s of producer %d (epoch %d) written to %s-%d",
                 "COMMIT" if commit else "ABORT", pid, epoch, topic, index)  # fmt: skip
    return error or ErrorCode.NONE


async def _write_offsets(ctx: RequestContext, marker, index: int) -> ErrorCode:
    """The group coordinator writes the marker to ``__consumer_offsets``-``index`` and completes the
    producer's offsets there (waiting for durability)."""
    try:
        await ctx.broker.groups.complete_transaction(marker.producer_id, marker.producer_epoch,
                                                     marker.transaction_result, marker.coordinator_epoch,
                                                     set(), [index])  # fmt: skip
    except MarkerNotWritten as exc:
        log.error("WriteTxnMarkers: %s", exc)
        return _NOT_READY.get(exc.error, exc.error)
    return ErrorCode.NONE


# Kafka's handleWriteTxnMarkersRequest: a group coordinator not ready is NOT_LEADER_OR_FOLLOWER to the sender
_NOT_READY = dict.fromkeys((ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                            ErrorCode.NOT_COORDINATOR), ErrorCode.NOT_LEADER_OR_FOLLOWER)  # fmt: skip


def _response(ctx: RequestContext, results: dict[int, Errors]) -> object:
    resp = ctx.response()
    Result = type(resp).WritableTxnMarkerResult
    Topic = Result.WritableTxnMarkerTopicResult
    Part = Topic.WritableTxnMarkerPartitionResult
    for producer_id, errors in results.items():
        by_topic: dict[str, list] = {}
        for (topic, index), error in errors.items():
            by_topic.setdefault(topic, []).append(Part(partition_index=index, error_code=error))
        topics = [Topic(name=name, partitions=parts) for name, parts in by_topic.items()]
        resp.markers.append(Result(producer_id=producer_id, topics=topics))
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition of every marker, by producer id."""
    resp = ctx.response()
    Marker = type(resp).WritableTxnMarkerResult
    resp.markers = [Marker(producer_id=m.producer_id, topics=per_partition(
        Marker.WritableTxnMarkerTopicResult, [({"name": t.name}, t.partition_indexes) for t in m.topics], error))
        for m in request.markers]  # fmt: skip
    return resp
