"""ListOffsets (key 2): v0-11, offsets by time and the log's boundaries.

Behaviour, per partition (v1+, Kafka's ``Partition.fetchOffsetForTimestamp``):

* the limit of what may be returned: for a consumer (``replica_id`` -1) the
  high watermark, or with ``isolation_level`` 1 (read committed, v2+) the
  last stable offset, below the first open transaction; for a debug tool
  (-2) or a follower, the log end offset;
* ``timestamp`` -1 (latest): that limit, timestamp -1;
* -2 (earliest) and -4 (earliest local, v8; there is no tiered storage): the
  log start offset, timestamp -1;
* -3 (max timestamp, v7+): the first record with the largest timestamp, its
  offset and timestamp; with no batch to find (an empty log, or one whose
  every segment retention deleted) offset -1, timestamp -1 and leader epoch
  -1, Kafka's answer when ``fetchOffsetByTimestamp`` finds nothing;
* -5 (latest tiered, v9+) and -6 (earliest pending upload, v11+): what Kafka
  answers for a log without tiered storage, offset -1, timestamp -1 and
  leader epoch -1, no error;
* any other negative timestamp, or one of the above sent in a version older
  than the one that introduced it: UNSUPPORTED_VERSION, offset -1 and
  timestamp -1 (Kafka's ``isListOffsetsTimestampUnsupported``);
* anything else: the first record whose timestamp is >= ``timestamp``
  (``Log.offset_for_timestamp``), if it lies below the limit; otherwise
  offset -1, timestamp -1.

A found offset carries leader epoch 0 (v4+), a not-found one -1. Latest and
earliest carry 0 on an empty log too: Kafka answers latest with the
partition's leader epoch, and earliest with its leader epoch cache's first
entry, which ``Partition.makeLeader`` writes when the partition takes epoch 0,
before any append; the entry outlives restarts and deleted records (its
start offset follows the log start offset). In Kafka's
order, a partition listed twice is INVALID_REQUEST, then an unsupported
timestamp UNSUPPORTED_VERSION, an unknown partition UNKNOWN_TOPIC_OR_PARTITION,
and a given ``current_leader_epoch`` other than 0 FENCED/UNKNOWN_LEADER_EPOCH.
``timeout_ms`` (v10+) bounds a wait for tiered storage; a single node with
none answers at once.

Authorization (Kafka's ``handleListOffsetRequest``): each topic needs
DESCRIBE, checked first: every partition of a topic the principal may not
describe is TOPIC_AUTHORIZATION_FAILED (offset -1, timestamp -1), whether the
topic exists or not and whatever else is wrong with the partition. As in
Kafka, the answer lists the topics it may describe first, then the refused
ones, each group in the order asked.

v0 answers ``old_style_offsets`` instead (``_legacy_offsets``): up to
``max_num_offsets`` segment boundary offsets older than the timestamp,
newest first, as Kafka's ``legacyFetchOffsetsBefore`` does; a timestamp below
-2 is UNSUPPORTED_VERSION there, as in Kafka 3.x, and a negative
``max_num_offsets`` (of a partition that exists) UNKNOWN_SERVER_ERROR, Kafka's
answer to the exception its negative-sized array throws. v0 does not refuse a
partition listed twice.

Version notes: v1 single offset and timestamp; v2 isolation_level and
throttle_time_ms; v4 current_leader_epoch and leader_epoch; v6 flexible;
v7 max timestamp (-3); v8 earliest local (-4); v9 latest tiered (-5); v10
timeout_ms; v11 earliest pending upload (-6). Kafka 4.0 dropped v0.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._admin import LEADER_EPOCH, NO_EPOCH, leader_epoch_error
from ._error_answers import partition_indexes, per_partition
from ._legacy_offsets import legacy_offsets

API_KEY = 2
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6
# The first version that may send each negative timestamp (Kafka's timestampMinSupportedVersion).
TIMESTAMP_MIN_VERSION = {
    LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11,
}  # fmt: skip
CONSUMER, DEBUGGING = -1, -2
READ_COMMITTED = 1
NOT_FOUND = (-1, -1, NO_EPOCH)


@handler(API_KEY, 0, 11)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Topic = type(resp).ListOffsetsTopicResponse
    Part = Topic.ListOffsetsPartitionResponse
    seen = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    refused = []
    for topic in request.topics:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            refused.append(Topic(name=topic.name, partitions=[
                Part(partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for p in topic.partitions]))  # fmt: skip
            continue
        parts = []
        for p in topic.partitions:
            part = Part(partition_index=p.partition_index)
            if ctx.version >= 1 and seen[topic.name, p.partition_index] > 1:
                part.error_code = ErrorCode.INVALID_REQUEST
            elif timestamp_unsupported(p.timestamp, ctx.version):
                part.error_code = ErrorCode.UNSUPPORTED_VERSION
            else:
                _answer(ctx, request, topic.name, p, part)
            parts.append(part)
        resp.topics.append(Topic(name=topic.name, partitions=parts))
    resp.topics.extend(refused)
    return resp


def timestamp_unsupported(timestamp: int, version: int) -> bool:
    """A negative timestamp this version may not send: Kafka answers UNSUPPORTED_VERSION (v0: below -2)."""
    if version == 0:
        return timestamp < EARLIEST
    minimum = TIMESTAMP_MIN_VERSION.get(timestamp)
    return timestamp < 0 and (minimum is None or version < minimum)


def _answer(ctx: RequestContext, request, topic: str, p: Any, part: Any) -> None:
    partition = ctx.broker.topics.partition(topic, p.partition_index)
    if partition is None or partition.log.offline:  # offline: its log dir failed
        part.error_code = ErrorCode.KAFKA_STORAGE_ERROR if partition else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return
    if ctx.version == 0:
        if p.max_num_offsets < 0:  # Kafka's answer array of a negative size throws: an unexpected error
            part.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
            return
        from_consumer = request.replica_id == CONSUMER
        part.old_style_offsets = legacy_offsets(partition.log, p.timestamp, p.max_num_offsets, from_consumer,
                                                ctx.broker.clock())
        return
    error = leader_epoch_error(p.current_leader_epoch)
    if error is not None:
        part.error_code = error
        return
    committed = ctx.version >= 2 and request.isolation_level == READ_COMMITTED
    part.timestamp, part.offset, part.leader_epoch = _lookup(partition.log, p.timestamp, request.replica_id, committed)


def _lookup(log: Any, timestamp: int, replica_id: int, committed: bool = False) -> tuple[int, int, int]:
    """``(timestamp, offset, leader_epoch)`` for one v1+ request (read_committed: below the last stable offset)."""
    limit = log.high_watermark if replica_id == CONSUMER else log.log_end_offset
    if committed and replica_id == CONSUMER:
        limit = log.last_stable_offset
    if timestamp == LATEST:
        return -1, limit, LEADER_EPOCH
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log.log_start_offset, LEADER_EPOCH
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return NOT_FOUND  # nothing is tiered: Kafka's answer without remote storage
    if timestamp == MAX_TIMESTAMP:
        found = log.max_timestamp_offset()
        if found is None:
            return NOT_FOUND
        # Storage knows the batch holding the max timestamp; Kafka (since KAFKA-16310)
        # answers the first record carrying it, which is the first record >= it.
        max_timestamp = found[1]
        exact = log.offset_for_timestamp(max_timestamp)
        offset = exact[0] if exact is not None else found[0]
        return (max_timestamp, offset, LEADER_EPOCH) if offset < limit else NOT_FOUND
    found = log.offset_for_timestamp(timestamp)
    if found is None:
        return NOT_FOUND
    offset, record_timestamp = found
    return (record_timestamp, offset, LEADER_EPOCH) if offset < limit else NOT_FOUND


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition asked, with no offsets (v0) or offset and
    timestamp -1."""
    resp = ctx.response()
    asked = [({"name": t.name}, partition_indexes(t.partitions)) for t in request.topics]
    resp.topics = per_partition(type(resp).ListOffsetsTopicResponse, asked, error)
    return resp
