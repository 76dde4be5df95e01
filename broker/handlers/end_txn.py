"""EndTxn (key 26): v0-4, commit or abort the producer's open transaction.

Behaviour: the transaction coordinator writes PrepareCommit/PrepareAbort to
``__transaction_state``, a marker to every partition of the transaction (and
the group offsets of TxnOffsetCommit become visible or are dropped), then
Complete*; the answer comes once all of that is written, so a read_committed
consumer sees a committed transaction as soon as its producer is told. A
retry of a completed EndTxn is answered NONE; ending in another state is
INVALID_TXN_STATE; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.

Authorization: WRITE on the TRANSACTIONAL_ID first; refused,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED and the transaction is not touched.

Version notes: v1 identical (throttling); v2 PRODUCER_FENCED; v3 flexible;
v4 identical on the wire. v5 (KIP-890 part 2) is not served: Kafka takes a
v5 request as a client on transaction protocol v2 whatever the finalized
``transaction.version``, and ends the transaction with a bumped epoch (a new
producer id once it is exhausted) that the answer returns; this coordinator
keeps Kafka's protocol v1, one epoch for the producer's life.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..transactions import for_version
from ._error_answers import top_level

API_KEY = 26


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return ctx.response(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error = await ctx.broker.transactions.end(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed)
    return ctx.response(error_code=for_version(error, ctx.version, 2))

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
