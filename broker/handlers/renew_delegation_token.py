"""RenewDelegationToken (key 39): v0-2, refused as Kafka refuses it with tokens off (``_tokens``).

With tokens on, Kafka would move a token's expiry to now plus the
``renew_period_ms`` asked for (at most ``delegation.token.expiry.time.ms``),
never past its max lifetime; here no token exists to renew.

Behaviour: the refusal with ``expiry_timestamp_ms`` -1 (``_tokens.expiry_refusal``).

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level
from ._tokens import expiry_refusal

API_KEY = 39


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    return expiry_refusal(ctx)

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
