"""InitProducerId (key 22): v0-5, producer ids for idempotent and transactional producers.

Behaviour: a producer without a transactional id gets a fresh producer id
(allocated in persisted blocks, so ids are never reused after a restart) and
epoch 0, whatever id and epoch it sends (from v3, after a producer-side
timeout or an unknown id), as Kafka's coordinator "blindly" gives it one.
A transactional id goes to the transaction coordinator
(``broker.transactions``): it keeps one producer id per transactional id and
bumps the epoch on every call, which fences older instances and aborts
their open transaction. PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH
before v4, whose clients do not know it (Kafka's rule).

Produce then checks each idempotent batch against the partition's producer
state (``storage.producer_state``): retries are answered with their original
offsets, gaps and fenced epochs are refused.

Authorization, before anything else (Kafka's
``handleInitProducerIdRequest``): a transactional producer needs WRITE on
its TRANSACTIONAL_ID (refused: TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an
idempotent one needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
(``RequestContext.authorized_by_type``), else CLUSTER_AUTHORIZATION_FAILED.
Refused, the answer carries producer id and epoch -1 and nothing is
allocated or bumped.

Then, before anything else (the empty transactional id, the timeout), a
request with exactly one of ``producer_id`` / ``producer_epoch`` at -1 (an id
without its epoch or the reverse) is INVALID_REQUEST, again with producer id
and epoch -1 (Kafka's ``handleInitProducerIdRequest``). Both -1 (as every
v0-2 request reads) asks for a new id.

The ids come from the transaction coordinator's ``producer_ids``
(``broker.transactions.producer_ids``): blocks saved ahead, each on a worker
thread while the other connections are served; a request that meets the end
of a block waits for the next one's save (Kafka's broker answers
COORDINATOR_LOAD_IN_PROGRESS at once instead: see that module). When the
next block cannot be saved (a full disk), the answer is
COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as Kafka answers while
its ``RPCProducerIdManager`` has no block; a save in doubt (renamed in
place, its directory not fsynced) fails the metadata log dir and is not
answered (the broker stops), as Kafka halts when a metadata record cannot
be written.

Version notes: v1 identical; v2 flexible; v3 producer_id/epoch in the
request (KIP-360); v4 identical on the wire (PRODUCER_FENCED); v5 identical
(its client understands TRANSACTION_ABORTABLE, which no path here answers).
v6 (KIP-939 two-phase commit) is unstable in Kafka 4.3 and not served.
"""

from __future__ import annotations

from protocol import ErrorCode
from storage import ProducerIdsUnavailable

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..transactions import for_version

API_KEY = 22
_NO_PRODUCER_ID = -1  # Kafka's RecordBatch.NO_PRODUCER_ID
_NO_PRODUCER_EPOCH = -1  # Kafka's RecordBatch.NO_PRODUCER_EPOCH


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    refusal = _refusal(ctx, request.transactional_id)
    if refusal is not None:
        return ctx.response(error_code=refusal, producer_id=-1, producer_epoch=-1)
    if (request.producer_id == _NO_PRODUCER_ID) != (request.producer_epoch == _NO_PRODUCER_EPOCH):
        return ctx.response(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        return await _transactional(ctx, request)
    try:
        return ctx.response(producer_id=await ctx.broker.transactions.producer_ids.allocate(), producer_epoch=0)
    except ProducerIdsUnavailable:  # Kafka: no block yet, CoordinatorLoadInProgressException; retried
        return ctx.response(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, producer_id=-1, producer_epoch=-1)


def _refusal(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        if ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.authorized(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        return None
    if ctx.authorized_by_type(AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


async def _transactional(ctx: RequestContext, request) -> object:
    expected = None
    if ctx.version >= 3 and request.producer_id >= 0:
        expected = (request.producer_id, request.producer_epoch)
    error, producer_id, epoch = await ctx.broker.transactions.init_producer_id(
        request.transactional_id, request.transaction_timeout_ms, expected)
    return ctx.response(error_code=for_version(error, ctx.version, 4), producer_id=producer_id, producer_epoch=epoch)


@error_answer(API_KEY, throttled=False)  # Kafka's getErrorResponse sets a throttle time of 0
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error``, no producer id or epoch (-1)."""
    return ctx.response(error_code=error, producer_id=-1, producer_epoch=-1)
