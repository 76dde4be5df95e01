"""InitProducerId (key 22): v0-4, producer ids for idempotent producers.

Behaviour: a producer without a transactional id gets a fresh producer id
(allocated in persisted blocks, so ids are never reused after a restart) and
epoch 0; from v3 a producer that sends its current id and epoch gets the
same id with the epoch bumped (as Kafka does after a producer-side timeout).
Transactions are not supported: a request with a transactional id gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a non-retriable error clients report
at once instead of retrying forever.

Produce then checks each idempotent batch against the partition's producer
state (``storage.producer_state``): retries are answered with their original
offsets, gaps and fenced epochs are refused.

Version notes: v1 identical; v2 flexible; v3 producer_id/epoch in the
request (KIP-360); v4 identical on the wire.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 22
_EPOCH_MAX = 32767


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    if request.transactional_id is not None:
        return ctx.response(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                            producer_epoch=-1)  # fmt: skip
    manager = ctx.broker.topics.manager
    if ctx.version >= 3 and request.producer_id >= 0 and 0 <= request.producer_epoch < _EPOCH_MAX - 1:
        return ctx.response(producer_id=request.producer_id, producer_epoch=request.producer_epoch + 1)
    return ctx.response(producer_id=manager.allocate_producer_id(), producer_epoch=0)
