"""SaslHandshake (key 17): v0-1 and SaslAuthenticate (key 36): v0-2.

Behaviour: on a SASL_PLAINTEXT listener the login itself is answered by the
connection's authenticator (``broker/sasl_auth.py``) before any handler
runs. These handlers see the requests Kafka's KafkaApis sees: on a
PLAINTEXT listener, or after the login, where Kafka answers both with
ILLEGAL_SASL_STATE, and so do we (SaslHandshake also lists no mechanisms).
A SaslHandshake after a login whose session has a lifetime (KIP-368) never
gets here: it begins re-authentication (``connection.py``).
A client configured for SASL against a PLAINTEXT listener therefore gets a
clear error instead of a hang.

Version notes: SaslHandshake v1 means SaslAuthenticate carries the tokens;
SaslAuthenticate v1 adds session_lifetime_ms, v2 is flexible.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level


@handler(17, 0, 1)
async def handle_handshake(ctx: RequestContext, request) -> object:
    return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


@handler(36, 0, 2)
async def handle_authenticate(ctx: RequestContext, request) -> object:
    return ctx.response(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SASL is not enabled on this PLAINTEXT listener",
        auth_bytes=b"",
    )


error_answer(17)(top_level)  # SaslHandshake's getErrorResponse: ``error``, no mechanisms


@error_answer(36)
def _authenticate_error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """SaslAuthenticate's ``getErrorResponse``: ``error``, no message (``ApiError.fromThrowable``), no bytes."""
    return ctx.response(error_code=error, error_message=None)
