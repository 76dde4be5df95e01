"""DescribeDelegationToken (key 41): v0-3, refused as Kafka refuses it with tokens off (``_tokens``).

Behaviour: the refusal with no tokens.

Version notes: v1 answers before throttling; v2 flexible; v3 token requester.
"""

from __future__ import annotations

from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level
from ._tokens import token_refusal

API_KEY = 41


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    return ctx.response(error_code=token_refusal(ctx), tokens=[])

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
