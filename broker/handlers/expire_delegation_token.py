"""ExpireDelegationToken (key 40): v0-2, refused as Kafka refuses it with tokens off (``_tokens``).

With tokens on, Kafka would end a token ``expiry_time_period_ms`` from now
(a negative period: at once), never past its max lifetime; here no token
exists to expire.

Behaviour: the refusal with ``expiry_timestamp_ms`` -1, as Renew's (``_tokens.expiry_refusal``).

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level
from ._tokens import expiry_refusal

API_KEY = 40


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    return expiry_refusal(ctx)

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
