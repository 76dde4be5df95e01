"""RenewDelegationToken (key 39): v0-2, refused as Kafka refuses it with tokens off (``_tokens``).

Behaviour: the refusal with ``expiry_timestamp_ms`` -1.

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler
from ._tokens import expiry_refusal

API_KEY = 39


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    return expiry_refusal(ctx)
