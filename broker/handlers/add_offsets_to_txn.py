"""AddOffsetsToTxn (key 25): v0-4, a consumer group's offsets join a transaction.

Behaviour: the transaction coordinator adds the group's ``__consumer_offsets``
partition to the producer's open transaction (creating that topic first if
needed: COORDINATOR_NOT_AVAILABLE meanwhile), so the TxnOffsetCommit that
follows is accepted and the EndTxn marker commits or drops those offsets.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.

Authorization, in Kafka's order: WRITE on the TRANSACTIONAL_ID (refused:
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the GROUP (refused:
GROUP_AUTHORIZATION_FAILED); a refused request leaves the transaction alone.

Version notes: v1 identical (throttling); v2 PRODUCER_FENCED; v3 flexible;
v4 identical on the wire (its clients understand TRANSACTION_ABORTABLE).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..transactions import for_version
from ._error_answers import top_level

API_KEY = 25


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return ctx.response(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = await ctx.broker.transactions.add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id)
    return ctx.response(error_code=for_version(error, ctx.version, 2))

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
