"""Fetch (key 1): v0-18, long poll, byte limits, zero-copy sends, down-conversion.

Behaviour:

* Each partition is read from the batch that contains ``fetch_offset``; the
  slice may end in a partial batch, which clients ignore. Offsets below the
  log start or above the log end give OFFSET_OUT_OF_RANGE; offset == high
  watermark gives empty data. A partition in error carries -1 for its high
  watermark, last stable offset and log start offset, as in Kafka.
* Limits: ``partition_max_bytes`` per partition and (v3+) ``max_bytes`` for the
  response, itself capped at the broker's ``fetch.max.bytes`` (KIP-541, default
  55 MiB; Kafka caps every Fetch with it, a follower's too, and v0-2, which
  carry no ``max_bytes``). From v3 the first batch of the first non-empty
  partition is sent whole even when it is larger (KIP-74), and a later
  partition whose first batch the limit cuts gets no records (Kafka's
  ``readFromLocalLog``); v0-2 cut it hard, as Kafka does.
* Long poll: while fewer than ``min_bytes`` are available (counted as stored,
  before any down-conversion, as Kafka's ``ReplicaManager.fetchMessages``
  counts them) the request waits, up to ``max_wait_ms``, and is woken by every append (``Broker.wait_for_append``).
  A fetch with nothing to read (no partition, or only refused or unknown ones;
  an incremental one reads all of its session's partitions) is answered at
  once; an unknown partition next to readable ones does not end the wait.
  ``min_bytes`` is capped at the effective max bytes (``max_bytes``, and the
  quota cap below), as Kafka's ``fetchMinBytes`` is.
* v4+ slices go out with ``os.sendfile`` (``FileRegion`` chunks). v0-3 need
  message format 0 (v0-1) or 1 (v2-3): the slice is down-converted (KIP-724),
  tombstones included (KIP-87: a flagged tombstone becomes a null value), and
  sized as Kafka sizes it (KIP-283): the first batches are converted here and
  fix the partition's length, the rest is converted while it is sent, cut at
  that length or padded with an overflow entry (``broker.converted_send``).
  ``message.downconversion.enable=false`` answers UNSUPPORTED_VERSION for
  that partition.
* A topic with ``compression.type=zstd`` is UNSUPPORTED_COMPRESSION_TYPE for
  v0-9 (zstd came with v10), whatever else the partition would answer; zstd
  batches in a ``producer`` topic go to v4-9 as stored, as Kafka sends them.
* ``isolation_level`` 1 (read_committed, v4+) reads up to the last stable
  offset and lists the aborted transactions in range (``fetch_reader``);
  every answer carries the partition's ``last_stable_offset``.
* Metrics, where Kafka marks them: ``TotalFetchRequestsPerSec`` once per
  Fetch for each partition read (an incremental fetch's whole session, a
  throttled fetch's too), ``BytesOutPerSec`` with the record bytes of the
  answer sent (down-converted: the converted size).
* Client quotas (``broker/quotas.py``): the size of the answer counts
  against the client's ``consumer_byte_rate``, as Kafka's
  ``FetchResponse.sizeOf`` has it for the version (``_response_size``: the
  body plus 4 bytes of header, the records at their stored size, before any
  down-conversion; for an incremental fetch only the partitions it would
  answer, the session left as it is). A fetch that goes over (this quota or
  ``request_percentage``) is answered without topics and with
  ``throttle_time_ms`` (session id 0 but for an incremental fetch, as
  Kafka's ``getThrottledResponse``), the recorded size taken back, and the
  connection is muted that long. A fetch refused at once for its session
  (FETCH_SESSION_ID_NOT_FOUND ...) goes through the same check with an
  empty answer's size, and a throttled one is answered empty without the
  error, as Kafka's ``SessionErrorContext`` is. A fetch never reads more
  than the quota allows in one window.
* Fetch sessions (v7+, KIP-227, ``fetch_sessions.py``): epoch 0 opens one
  (the answer's ``session_id``), later fetches name only what changed and
  are answered with only the partitions that have something new; epoch -1
  fetches without a session. An incremental fetch whose session another
  fetch moved on while it waited is answered INVALID_FETCH_SESSION_EPOCH
  (with the session's id, its bytes not counted against a quota), as
  Kafka's ``IncrementalFetchContext`` checks again before answering.
* Topic ids (v13+, KIP-516): the request names each topic by id and the
  answer does too; an id of no topic here is UNKNOWN_TOPIC_ID for its
  partitions. A fetch session's partition is read by the name its id had
  when it joined (``fetch_sessions``): after the topic is deleted it is
  UNKNOWN_TOPIC_OR_PARTITION, after a topic of that name is made again
  INCONSISTENT_TOPIC_ID (answered at once, as a read error). The fields for followers (``replica_state``, the directory id
  and high watermark per partition) are read and not used: there are none.

Authorization (Kafka's ``handleFetchRequest``), decided once per request
over every partition it reads (for an incremental fetch, all of the
session's partitions, not only the ones it names):

* a consumer needs READ on each topic. The partitions of a topic it may not
  read are TOPIC_AUTHORIZATION_FAILED whether the topic exists or not; with
  topic ids (v13+) an id of no topic is UNKNOWN_TOPIC_ID first (no name to
  authorize);
* a follower (``replica_id`` >= 0; from v15 ``replica_state.replica_id``)
  needs CLUSTER_ACTION on the cluster; without it every partition, unknown
  ids included, is TOPIC_AUTHORIZATION_FAILED.

A refused partition is answered with its error and -1 offsets, like an
unknown one, and stays in a fetch session: as Kafka's sessions always answer
a partition in error, every incremental fetch answers it again until a grant
lets it be read. A refused partition does not end the long poll by itself:
the request waits for the partitions it may read, and is answered at once
only when there are none.

Version notes: v1 throttle_time_ms; v3 max_bytes; v4 isolation_level,
last_stable_offset, aborted_transactions; v5 log_start_offset; v7 sessions;
v9 current_leader_epoch; v11 rack_id, preferred_read_replica; v12 flexible;
v13 topic ids; v14 same; v15 replica_state; v16 node_endpoints (empty, as is
the v12+ current_leader: no Fetch here is fenced or not the leader's, see
``fetch_reader``); v17 replica_directory_id; v18 high_watermark.
"""

from __future__ import annotations

import time

import trio

from protocol import ErrorCode, encode_chunks

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..fetch_reader import PartitionRead, read_partition
from ..fetch_sessions import topic_name
from ..quotas import request_identity, request_time_throttle, throttle
from ._error_answers import partition_indexes, per_partition

API_KEY = 1
READ_COMMITTED = 1
# Partitions Kafka never reads, so never counts in TotalFetchRequestsPerSec.
_NOT_COUNTED = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


@handler(API_KEY, 0, 18)
async def handle(ctx: RequestContext, request) -> object:
    fetch = ctx.broker.fetch_sessions.context(request, ctx.version, ctx.broker.clock(), _topic_names(ctx))
    if fetch.error:  # Kafka's SessionErrorContext: measured as an empty answer; throttled, it is one
        empty = ctx.response(session_id=0)
        if throttle_ms := _quota(ctx, empty, []):
            return ctx.response(session_id=0, throttle_time_ms=throttle_ms)
        empty.error_code = fetch.error
        return empty
    refused = _refused_topics(ctx, request, fetch.partitions)
    max_bytes = _max_bytes(ctx, request)
    min_bytes = min(request.min_bytes, max_bytes)  # Kafka's fetchMinBytes: never above what may be sent
    deadline = trio.current_time() + max(request.max_wait_ms, 0) / 1000.0
    while True:
        reads = _read_all(ctx, request, fetch.partitions, refused, max_bytes)
        available = sum(r.read_size for r in reads)  # as read from the log, before down-conversion (Kafka)
        if not _interesting(reads) or available >= min_bytes or _read_error(reads) or ctx.broker.stopping:
            break
        waiting = time.perf_counter()
        with trio.move_on_at(deadline) as scope:
            await ctx.broker.wait_for_append()
        ctx.waited(waiting)  # Kafka's fetch purgatory: RemoteTimeMs
        if scope.cancelled_caught:
            reads = _read_all(ctx, request, fetch.partitions, refused, max_bytes)
            break
    _count_reads(ctx, fetch.partitions, reads)
    superseded = fetch.superseded()  # another fetch on its session came meanwhile: none of this is sent
    answered = [] if superseded else fetch.answered(reads)
    resp = _response(ctx, answered)  # built once: measured for the quota as it stands, then sent
    throttle_ms = _quota(ctx, resp, answered)
    if superseded:
        return ctx.response(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id=fetch.session.id,
                            throttle_time_ms=throttle_ms)  # fmt: skip
    if throttle_ms:  # a session's epoch has moved on all the same, as in Kafka; no session is opened
        return ctx.response(session_id=fetch.session.id if fetch.session else 0, throttle_time_ms=throttle_ms)
    resp.session_id, sent = fetch.respond(reads, ctx.broker.clock())  # ``sent`` is ``answered``, now recorded
    _count_bytes_out(ctx, sent)
    return resp


def _interesting(reads: list[PartitionRead]) -> bool:
    """Is there a partition to wait for? Kafka's ``interesting``: one that is not refused, of a known topic
    id and a partition that exists; with none (a fetch naming nothing included) it answers at once."""
    return any(r.error not in _NOT_COUNTED for r in reads)


def _read_error(reads: list[PartitionRead]) -> bool:
    """Did reading some partition fail? (Those Kafka never reads, refused or unknown, end no wait.)"""
    return any(r.error != ErrorCode.NONE and r.error not in _NOT_COUNTED for r in reads)


def _refused_topics(ctx: RequestContext, request, partitions: list) -> set:
    """The topics (names, or ids from v13) whose partitions are TOPIC_AUTHORIZATION_FAILED: for a follower
    without CLUSTER_ACTION all of them, for a consumer those it may not READ (each topic asked once)."""
    if ctx.broker.authorizer is None:  # everything is allowed: no per-topic walk on every fetch
        return set()
    keys: dict = {}
    for key, p in partitions:  # each key once, in order, with its first partition
        keys.setdefault(key, p)
    replica_id = request.replica_id if ctx.version < 15 else request.replica_state.replica_id
    if replica_id >= 0:
        return set() if ctx.authorized_cluster(AclOperation.CLUSTER_ACTION) else set(keys)
    names = _topic_names(ctx)
    refused = set()
    for key, p in keys.items():
        topic = topic_name(names, key, p)
        if topic is not None and not ctx.authorized(AclOperation.READ, ResourceType.TOPIC, topic):
            refused.add(key)
    return refused


def _quota(ctx: RequestContext, resp, answered: list[tuple[str, PartitionRead]]) -> int:
    """Kafka's request_percentage and consumer_byte_rate checks, the latter on the size of ``resp``, the
    answer carrying ``answered`` (session id and throttle time still 0, as Kafka's ``getResponseSize``
    measures it): a fetch that goes over either is answered empty, that size taken back, and the
    connection muted for the longer throttle time."""
    quotas, (user, client_id), now = ctx.broker.quotas, request_identity(ctx), ctx.broker.clock()
    request_ms = request_time_throttle(ctx)
    size = _response_size(ctx, resp, answered) if "consumer_byte_rate" in quotas.keys else 0  # else not measured
    throttle_ms = max(quotas.record("consumer_byte_rate", user, client_id, size, now), request_ms)
    if throttle_ms:
        quotas.unrecord("consumer_byte_rate", user, client_id, size, now)
        throttle(ctx, throttle_ms)
    return throttle_ms


def _max_bytes(ctx: RequestContext, request) -> int:
    """Kafka's fetchMaxBytes: the request's max_bytes (v3+; before, no limit), capped at the broker's
    ``fetch.max.bytes`` and so that one fetch alone fits the quota window."""
    budget = min(request.max_bytes if ctx.version >= 3 else 2**31 - 1, ctx.broker.config.fetch_max_bytes)
    quota_limit = ctx.broker.quotas.fetch_limit(*request_identity(ctx))
    if quota_limit is not None:
        budget = min(budget, quota_limit)
    return budget


def _read_all(ctx: RequestContext, request, partitions: list, refused: set, budget: int) -> list[PartitionRead]:
    min_one = ctx.version >= 3
    committed = ctx.version >= 4 and request.isolation_level == READ_COMMITTED
    reads, names = [], _topic_names(ctx)
    for key, p in partitions:
        topic = topic_name(names, key, p)
        if key in refused:
            reads.append(PartitionRead(p.partition, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        if topic is None:
            reads.append(PartitionRead(p.partition, error=ErrorCode.UNKNOWN_TOPIC_ID))
            continue
        if names is not None and names.get(key) != topic:  # a session's topic deleted since, perhaps made again
            reads.append(PartitionRead(p.partition, error=_replaced_topic_error(ctx, topic, p.partition)))
            continue
        r = read_partition(ctx, topic, p, budget, min_one, committed)
        if r.size:
            budget = max(budget - r.size, 0)
            min_one = False
        reads.append(r)
    return reads


def _replaced_topic_error(ctx: RequestContext, topic: str, partition: int) -> ErrorCode:
    """A session's partition whose topic id no longer names ``topic``: Kafka reads it by the kept name, so
    UNKNOWN_TOPIC_OR_PARTITION while no such partition exists, INCONSISTENT_TOPIC_ID (the log's id is not
    the session's, ``ReplicaManager.readFromLocalLog``) once a topic of that name has it again."""
    current = ctx.broker.topics.get(topic)
    if current is None or partition >= current.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.INCONSISTENT_TOPIC_ID


def _response_size(ctx: RequestContext, resp, answered: list[tuple[str, PartitionRead]]) -> int:
    """Kafka's ``FetchResponse.sizeOf`` for the version: 4 bytes (the header's correlation id) and the body
    ``resp``, which carries ``answered``, its records at their size as read (Kafka measures before it
    down-converts)."""
    chunks = encode_chunks(ctx.request.api, ctx.version, resp, False)
    return 4 + sum(len(chunk) for chunk in chunks) + sum(r.read_size - r.size for _key, r in answered)


def _response(ctx: RequestContext, answered: list[tuple[str, PartitionRead]]) -> object:
    """The answer, its session id 0 until the session is updated: the partitions in order, one topic entry
    per run of partitions of one topic (as Kafka's FetchResponse groups them)."""
    resp = ctx.response(session_id=0)
    Topic = type(resp).FetchableTopicResponse
    Part = Topic.PartitionData
    by_id = ctx.version >= 13
    for key, r in answered:
        if not resp.responses or (resp.responses[-1].topic_id if by_id else resp.responses[-1].topic) != key:
            resp.responses.append(Topic(topic_id=key, partitions=[]) if by_id else Topic(topic=key, partitions=[]))
        resp.responses[-1].partitions.append(
            Part(
                partition_index=r.partition, error_code=r.error, high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset, log_start_offset=r.log_start_offset,
                aborted_transactions=_aborted(ctx, Part, r), records=r.records,
            )  # fmt: skip
        )
    return resp


def _count_bytes_out(ctx: RequestContext, answered: list[tuple[str, PartitionRead]]) -> None:
    """Kafka's BytesOutPerSec: the records bytes of the answer sent (down-converted: as converted)."""
    names = _topic_names(ctx)
    for key, r in answered:
        topic = names.get(key) if names is not None else key
        if topic is not None and r.size:
            ctx.broker.metrics.bytes_out.labels(topic).inc(r.size)


def _count_reads(ctx: RequestContext, partitions: list, reads: list[PartitionRead]) -> None:
    """Kafka's ``fetchMessages`` marks ``TotalFetchRequestsPerSec`` once per Fetch for each partition it
    reads (not those refused or unknown): all of an incremental fetch's session, whatever its answer
    leaves out, and before a quota empties the answer."""
    names = _topic_names(ctx)
    for (key, p), r in zip(partitions, reads):
        topic = topic_name(names, key, p)
        if topic is not None and r.error not in _NOT_COUNTED:
            ctx.broker.metrics.total_fetch.labels(topic).inc()


def _topic_names(ctx: RequestContext) -> dict | None:
    """v13+: the topics here by id (a request names topics by id); None before, when it names them."""
    if ctx.version < 13:
        return None
    return ctx.broker.topics.names_by_id()



def _aborted(ctx: RequestContext, Part, r: PartitionRead) -> list | None:
    """v4+: the aborted transactions of a read_committed read: a list when the log was read, even with
    nothing to read (Kafka's ``LocalLog.read``); null for read_uncommitted, an error or a cut first batch."""
    if ctx.version < 4 or r.aborted is None:
        return None
    return [Part.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in r.aborted]


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top, the session id echoed; before v13 also for every
    partition asked (high watermark -1), which older clients read the error from."""
    resp = ctx.response(error_code=error, session_id=request.session_id)
    if ctx.version < 13:
        asked = [({"topic": t.topic, "topic_id": t.topic_id}, partition_indexes(t.partitions, "partition"))
                 for t in request.topics]  # fmt: skip
        resp.responses = per_partition(type(resp).FetchableTopicResponse, asked, error, high_watermark=-1)
    return resp
