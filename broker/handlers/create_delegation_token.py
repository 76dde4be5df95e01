"""CreateDelegationToken (key 38): v0-3, refused as Kafka refuses it with tokens off (``_tokens``).

Behaviour, in Kafka's order (``KafkaApis.handleCreateTokenRequest``, then its
controller): over PLAINTEXT or 1-way SSL, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
a token for an owner other than the requester (v3 ``owner_principal_*``)
needs CREATE_TOKENS on that owner (a USER resource named ``User:<name>``),
else DELEGATION_TOKEN_AUTHORIZATION_FAILED (a requester may always ask for
its own); a renewer that is not a ``User`` is INVALID_PRINCIPAL_TYPE; then
DELEGATION_TOKEN_AUTH_DISABLED, tokens being off. The answer carries that
error, the owner (the request's, v3+, else the requester), the requester
(v3+), timestamps -1, an empty token id and HMAC.

Version notes: v1 answers before throttling; v2 flexible; v3 owner and requester.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._tokens import requester, token_refusal

API_KEY = 38
USER_TYPE = "User"


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    kind, name = requester(ctx)
    owner = (request.owner_principal_type, request.owner_principal_name) if ctx.version >= 3 else (None, None)
    owner = (owner[0] or kind, owner[1]) if owner[1] else (kind, name)
    return ctx.response(
        error_code=_error(ctx, request, owner, (kind, name)), principal_type=owner[0], principal_name=owner[1],
        token_requester_principal_type=kind, token_requester_principal_name=name, issue_timestamp_ms=-1,
        expiry_timestamp_ms=-1, max_timestamp_ms=-1, token_id="", hmac=b"",
    )  # fmt: skip


def _error(ctx: RequestContext, request, owner: tuple[str, str], asker: tuple[str, str]) -> ErrorCode:
    refusal = token_refusal(ctx)
    if refusal == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:
        return refusal
    if owner != asker and not ctx.authorized(AclOperation.CREATE_TOKENS, ResourceType.USER, f"{owner[0]}:{owner[1]}"):
        return ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if any(renewer.principal_type != USER_TYPE for renewer in request.renewers):
        return ErrorCode.INVALID_PRINCIPAL_TYPE
    return refusal


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error``, owner and requester ``User:ANONYMOUS``, timestamps -1, no token."""
    return ctx.response(error_code=error, principal_type=USER_TYPE, principal_name="ANONYMOUS",
                        token_requester_principal_type=USER_TYPE, token_requester_principal_name="ANONYMOUS",
                        issue_timestamp_ms=-1, expiry_timestamp_ms=-1, max_timestamp_ms=-1, token_id="",
                        hmac=b"")  # fmt: skip
