"""CreateDelegationToken (key 38): v0-3, refused as Kafka refuses it with tokens off (``_tokens``).

Behaviour: the answer carries the refusal (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
or DELEGATION_TOKEN_AUTH_DISABLED), the owner (the request's, v3+, else the
requester), the requester (v3+), timestamps -1, an empty token id and HMAC.

Version notes: v1 answers before throttling; v2 flexible; v3 owner and requester.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler
from ._tokens import requester, token_refusal

API_KEY = 38


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    kind, name = requester(ctx)
    owner = (request.owner_principal_type, request.owner_principal_name) if ctx.version >= 3 else (None, None)
    return ctx.response(
        error_code=token_refusal(ctx), principal_type=owner[0] or kind, principal_name=owner[1] or name,
        token_requester_principal_type=kind, token_requester_principal_name=name, issue_timestamp_ms=-1,
        expiry_timestamp_ms=-1, max_timestamp_ms=-1, token_id="", hmac=b"",
    )  # fmt: skip
