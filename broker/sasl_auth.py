"""The login of one SASL_PLAINTEXT connection, whatever the mechanism (Kafka's ``SaslServerAuthenticator``).

``SaslAuthenticator`` is sans-IO: ``handle`` takes one request frame of a
connection not yet authenticated and returns a ``Step`` (the chunks to
answer, or None to hand the frame to dispatch, and whether to close after
the answer). Until the handshake only ApiVersions and SaslHandshake are
taken. The handshake names a mechanism; one not enabled on the listener is
answered UNSUPPORTED_SASL_MECHANISM with the enabled ones, then closed.
Otherwise a mechanism server is made (``new_server(name)``: ``PlainServer``
in ``sasl_plain.py``, ``ScramServer`` in ``scram.py``) and every token of
the client goes to its ``evaluate``, which returns the token to answer:

* after a v1 handshake the tokens travel in SaslAuthenticate requests, as
  many as the mechanism needs (PLAIN one, SCRAM two); any other request
  closes the connection;
* after a v0 handshake each token is a bare size-prefixed frame, answered by
  one (PLAIN's answer is empty); a failure just closes the connection.

A mechanism server fails in one of two ways, as Kafka's do. An
``AuthenticationFailed`` carries a message meant for the client (PLAIN's
"Invalid username or password"); a ``SaslFailed`` carries a detail for our
log only, and the client gets Kafka's fixed "Authentication failed during
authentication due to invalid credentials with SASL mechanism <name>", so it
cannot learn whether a user exists. Either way the answer is
SASL_AUTHENTICATION_FAILED and the connection closes (after
``connection.failed.authentication.delay.ms``, ``connection.py``).
"""

from __future__ import annotations

from typing import Callable, Protocol

import attrs

from protocol import API_BY_KEY, ErrorCode, decode_request, message_class, response_chunks

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class AuthenticationFailed(Exception):
    """A login refused with a message the client may see (Kafka's SaslAuthenticationException)."""


class SaslFailed(Exception):
    """A login refused for a reason only our log sees (Kafka's SaslException); the client gets a fixed text."""


class UnexpectedRequest(Exception):
    """A frame Kafka's authenticator refuses: the connection is closed without an answer."""


class TokenRefused(UnexpectedRequest):
    """A bare (SaslHandshake v0) token that does not log in: closed without an answer, a failed login."""


class MechanismServer(Protocol):
    principal: str | None

    @property
    def complete(self) -> bool: ...

    def evaluate(self, token: bytes) -> bytes: ...


def public_message(mechanism: str, exc: Exception) -> str:
    """What the client is told about a failed login."""
    if isinstance(exc, AuthenticationFailed):
        return str(exc)
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


@attrs.define
class Step:
    """What to do with one frame: answer ``chunks`` (None: hand the frame to dispatch), then maybe close."""

    chunks: list | None
    close_after: str | None = None


@attrs.define
class SaslAuthenticator:
    mechanisms: tuple[str, ...]  # enabled on the listener, in the order the handshake lists them
    new_server: Callable[[str], MechanismServer]
    state: str = "handshake"  # -> "authenticate" (v1) or "token" (v0) -> "done"
    mechanism: str | None = None
    server: MechanismServer | None = None

    @property
    def complete(self) -> bool:
        return self.state == "done"

    @property
    def principal(self) -> str | None:
        return self.server.principal if self.server is not None and self.complete else None

    def handle(self, frame: bytearray) -> Step:
        """The step for one frame of a connection not yet authenticated; raises ``UnexpectedRequest``."""
        if self.state == "token":
            return self._token(bytes(frame))
        api_key = int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
        if self.state == "handshake" and api_key == API_VERSIONS:
            return Step(None)
        if self.state == "handshake" and api_key == SASL_HANDSHAKE:
            return self._handshake(decode_request(frame))
        if self.state == "authenticate" and api_key == SASL_AUTHENTICATE:
            return self._authenticate(decode_request(frame))
        name = API_BY_KEY[api_key].name if api_key in API_BY_KEY else f"key {api_key}"
        during = "handshake" if self.state == "handshake" else "authentication"
        raise UnexpectedRequest(f"Unexpected Kafka request of type {name} during SASL {during}.")

    def _handshake(self, request) -> Step:
        body = message_class(request.api, False)(error_code=ErrorCode.NONE, mechanisms=list(self.mechanisms))
        close = None
        if request.body.mechanism not in self.mechanisms:
            body.error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM
            close = f"unsupported SASL mechanism {request.body.mechanism!r}"
        else:
            self.mechanism = request.body.mechanism
            self.server = self.new_server(self.mechanism)
            self.state = "authenticate" if request.version >= 1 else "token"
        return Step(_answer(request, body), close)

    def _authenticate(self, request) -> Step:
        cls = message_class(request.api, False)
        try:
            token = self.server.evaluate(bytes(request.body.auth_bytes or b""))  # type: ignore[union-attr]
        except (AuthenticationFailed, SaslFailed) as exc:
            message = public_message(self.mechanism, exc)  # type: ignore[arg-type]
            body = cls(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b"")
            return Step(_answer(request, body), f"SASL/{self.mechanism} authentication failed: {exc}")
        if self.server.complete:  # type: ignore[union-attr]
            self.state = "done"
        body = cls(error_code=ErrorCode.NONE, error_message=None, auth_bytes=token, session_lifetime_ms=0)
        return Step(_answer(request, body))

    def _token(self, token: bytes) -> Step:
        try:
            answer = self.server.evaluate(token)  # type: ignore[union-attr]
        except (AuthenticationFailed, SaslFailed) as exc:  # v0 has no way to say why: the connection just closes
            raise TokenRefused(f"SASL/{self.mechanism} authentication failed: {exc}") from None
        if self.server.complete:  # type: ignore[union-attr]
            self.state = "done"
        return Step([len(answer).to_bytes(4, "big"), answer])


def _answer(request, body) -> list:
    return response_chunks(request.api, request.version, request.header.correlation_id, body)
