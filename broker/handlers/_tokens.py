"""What the four delegation token APIs (KIP-48, keys 38-41) share: Kafka's answer when tokens are off.

Kafka issues delegation tokens only when ``delegation.token.secret.key`` is
set; this broker does not serve them (the key is not accepted), so it answers
every token request as a Kafka broker without that key does, in Kafka's
order: over PLAINTEXT, or over SSL without a client certificate (an
anonymous principal), a token request is not allowed at all
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: clients report "not allowed on
PLAINTEXT/1-way SSL channels"); anywhere else tokens are disabled
(DELEGATION_TOKEN_AUTH_DISABLED).

Authorization: Kafka checks ACLs for tokens only where this broker never
gets to. CreateDelegationToken checks CREATE_TOKENS on another owner before
it finds tokens off (``create_delegation_token.py``). DescribeDelegationToken
answers DELEGATION_TOKEN_AUTH_DISABLED before it would filter tokens by
DESCRIBE on the token and DESCRIBE_TOKENS on their owners, and there are no
tokens to filter; Renew and Expire check the token's owner and renewers, not
ACLs.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext


def token_refusal(ctx: RequestContext) -> ErrorCode:
    protocol = getattr(ctx.connection, "security_protocol", "PLAINTEXT")
    anonymous = getattr(ctx.connection, "principal", "User:ANONYMOUS") == "User:ANONYMOUS"
    if protocol == "PLAINTEXT" or (protocol == "SSL" and anonymous):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def requester(ctx: RequestContext) -> tuple[str, str]:
    """The connection's principal as (type, name): ``("User", "alice")``."""
    kind, _, name = getattr(ctx.connection, "principal", "User:ANONYMOUS").partition(":")
    return kind, name


def expiry_refusal(ctx: RequestContext) -> object:
    """Renew's and Expire's answer: the refusal, with ``expiry_timestamp_ms`` -1."""
    return ctx.response(error_code=token_refusal(ctx), expiry_timestamp_ms=-1)
