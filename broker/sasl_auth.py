"""The login of one SASL_PLAINTEXT connection, whatever the mechanism (Kafka's ``SaslServerAuthenticator``).

``SaslAuthenticator`` is sans-IO: ``handle`` takes one request frame of a
connection not yet authenticated and returns a ``Step`` (the chunks to
answer, or None to hand the frame to dispatch, and whether to close after
the answer). Until the handshake only ApiVersions and SaslHandshake are
taken, in Kafka's states: "initial" (the first frame), "versions" (once a
frame had a Kafka header) and "handshake" (once ApiVersions, answered by
dispatch, had no error: ``versions_answered``). ApiVersions again in
"handshake" closes the connection at once, uncounted (an
IllegalStateException to Kafka); one answered UNSUPPORTED_VERSION or
INVALID_REQUEST may be sent again. A frame with no readable Kafka header is
a failed login as the first frame (Kafka would read a GSSAPI token, and
GSSAPI is not served) and closes the connection at once later. The
handshake names a mechanism; one not enabled on the listener is
answered UNSUPPORTED_SASL_MECHANISM with the enabled ones, then closed.
Otherwise a mechanism server is made (``new_server(name)``: ``PlainServer``
in ``sasl_plain.py``, ``ScramServer`` in ``scram.py``) and every token of
the client goes to its ``evaluate``, which returns the token to answer:

* after a v1 handshake the tokens travel in SaslAuthenticate requests, as
  many as the mechanism needs (PLAIN one, SCRAM two); any other request
  fails the login, answered with its own response carrying
  ILLEGAL_SASL_STATE where that response has a top-level error code;
* after a v0 handshake each token is a bare size-prefixed frame, answered by
  one (PLAIN's answer is empty); a failure is not answered.

Every refusal Kafka raises as an AuthenticationException is a failed login:
a ``Step`` with ``close_after``, counted in failed-authentication-total and
closed after ``connection.failed.authentication.delay.ms`` (``connection.py``,
Kafka's ``KafkaChannel.prepare`` and ``delayCloseOnAuthenticationFailure``),
answered or not: a request other than ApiVersions or SaslHandshake before the
handshake (not answered), a mechanism not enabled, bad credentials, a bad
v0 token refused with a client message (PLAIN's). What Kafka treats as an
I/O error, an unparsable frame or a v0 token a mechanism refuses with a
``SaslFailed`` (SCRAM's), raises ``UnexpectedRequest``: closed at once,
not counted.

A mechanism server fails in one of two ways, as Kafka's do. An
``AuthenticationFailed`` carries a message meant for the client (PLAIN's
"Invalid username or password"); a ``SaslFailed`` carries a detail for our
log only, and the client gets Kafka's fixed "Authentication failed during
authentication due to invalid credentials with SASL mechanism <name>", so it
cannot learn whether a user exists. Either way the answer is
SASL_AUTHENTICATION_FAILED and the connection closes (after
``connection.failed.authentication.delay.ms``, ``connection.py``).

A session may end (KIP-368). When a login completes, its lifetime is that of
the credential (OAUTHBEARER: the token's ``exp``, the server's
``credential_expiry_ms``) or ``connections.max.reauth.ms`` for the
mechanism, the smaller of the two when both are set, and none when neither
is (Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``).
SaslAuthenticate v1+ tells the client, which re-authenticates before then:
a SaslHandshake on the logged-in connection (``begin_reauthentication``,
at most once a second) starts the exchange again, for the same mechanism
(another one enabled is answered as usual, then the next frame fails the
login) and the same principal (another one fails with Kafka's "Cannot
change principals during re-authentication" text). ``connection.py`` closes
an expired session on its next request that is not a SaslHandshake. For
Kafka's login metrics (``login_metrics.py``) the authenticator notes whether
the client sent a SaslAuthenticate v1+ (only that shows it can
re-authenticate) and how long each re-authentication took, from its
SaslHandshake to its end on a monotonic nanosecond clock.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Protocol

import attrs

from .clock import wall_clock_ms

from protocol import (
    API_BY_KEY,
    ErrorCode,
    InvalidRequestError,
    decode_request,
    decode_request_header,
    message_class,
    response_chunks,
)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class AuthenticationFailed(Exception):
    """A login refused with a message the client may see (Kafka's SaslAuthenticationException)."""


class SaslFailed(Exception):
    """A login refused for a reason only our log sees (Kafka's SaslException); the client gets a fixed text."""


class UnexpectedRequest(Exception):
    """A frame that ends the connection at once, unanswered and not counted (an I/O error in Kafka)."""


class MechanismServer(Protocol):
    principal: str | None  # OAUTHBEARER's also has credential_expiry_ms: its token's exp

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
    """What to do with one frame: answer ``chunks`` (None: hand the frame to dispatch; []: nothing), then, if
    ``close_after`` says why, count a failed login and close after the failure delay."""

    chunks: list | None
    close_after: str | None = None


@attrs.define
class SaslAuthenticator:
    mechanisms: tuple[str, ...]  # enabled on the listener, in the order the handshake lists them
    new_server: Callable[[str], MechanismServer]
    clock: Callable[[], int] = wall_clock_ms
    max_reauth_ms: dict[str, int] = attrs.Factory(dict)  # connections.max.reauth.ms by mechanism; 0: unset
    state: str = "initial"  # -> "versions" -> "handshake" -> "authenticate" (v1) or "token" (v0) -> "done"
    # (a re-login starts at "handshake", and another mechanism goes to "bad_mechanism")
    mechanism: str | None = None
    server: MechanismServer | None = None
    expires_at_ms: int | None = None  # when the session ends (KIP-368); None: never
    previous: tuple[str, str] | None = None  # re-authenticating: the (mechanism, principal) logged in
    reauth_started_ms: int = 0
    client_supports_reauth: bool = False  # a SaslAuthenticate v1+ came (connectedClientSupportsReauthentication)
    nanos: Callable[[], int] = time.monotonic_ns  # Kafka's Time.nanoseconds: re-authentication latency
    reauth_began_ns: int = 0
    reauth_done_ns: int = 0

    @property
    def complete(self) -> bool:
        return self.state == "done"

    @property
    def principal(self) -> str | None:
        return self.server.principal if self.server is not None and self.complete else None

    @property
    def reauthenticating(self) -> bool:
        return self.previous is not None

    def expired(self, now_ms: int) -> bool:
        return self.expires_at_ms is not None and now_ms > self.expires_at_ms

    def begin_reauthentication(self, now_ms: int) -> bool:
        """A SaslHandshake after the login: start again (True) if the session ends and the last began >= 1 s ago."""
        if self.expires_at_ms is None or (self.reauth_started_ms and now_ms - self.reauth_started_ms < 1000):
            return False
        self.previous = (self.mechanism, self.principal)  # type: ignore[assignment]
        self.reauth_started_ms, self.state, self.server, self.expires_at_ms = now_ms, "handshake", None, None
        self.reauth_began_ns = self.nanos()
        return True

    @property
    def reauthentication_latency_ms(self) -> int | None:
        """Begin to end of the re-authentication just completed, in whole ms rounded as Java's Math.round,
        at least 1 unless it took no time at all (Kafka's ``reauthenticationLatencyMs``); None for a login."""
        if not self.reauthenticating:
            return None
        ns = self.reauth_done_ns - self.reauth_began_ns
        return 0 if ns == 0 else max(1, math.floor(ns / 1e6 + 0.5))

    def handle(self, frame: bytearray) -> Step:
        """The step for one frame of a connection not yet authenticated; raises ``UnexpectedRequest`` (or
        the protocol's ``InvalidRequestError``) for a frame that closes the connection at once."""
        if self.state == "token":
            return self._token(bytes(frame))
        if self.state == "bad_mechanism":
            mechanism = self.previous[0]  # type: ignore[index]
            return Step([], f"SASL mechanism '{self.mechanism}' requested by client is not supported for "
                            f"re-authentication of mechanism '{mechanism}'")  # fmt: skip
        if self.state != "authenticate":
            return self._before_handshake(frame)
        request = decode_request(frame)
        if request.header.api_key == SASL_AUTHENTICATE:
            return self._authenticate(request)
        return _illegal_state(request, f"Unexpected Kafka request of type {request.api.name} during SASL "
                                       f"authentication.")  # fmt: skip

    def _before_handshake(self, frame: bytearray) -> Step:
        """A frame in one of the states up to the handshake (Kafka's ``handleKafkaRequest``)."""
        try:
            api_key = decode_request_header(frame).api_key
        except InvalidRequestError:
            if self.state != "initial":  # Kafka: an I/O error
                raise
            return Step([], "the first frame is no Kafka request (a GSSAPI token to Kafka; GSSAPI is not served)")
        if self.state == "initial":
            self.state = "versions"
        if api_key not in (API_VERSIONS, SASL_HANDSHAKE):  # refused before parsing: no answer
            return Step([], f"Unexpected Kafka request of type {API_BY_KEY[api_key].name} during SASL handshake.")
        if api_key == SASL_HANDSHAKE:
            return self._handshake(decode_request(frame))
        if self.state != "versions":  # Kafka: an IllegalStateException, closing the connection unanswered
            raise UnexpectedRequest(f"ApiVersions again while waiting for SaslHandshake (state {self.state})")
        return Step(None)

    def versions_answered(self, chunks: list) -> None:
        """ApiVersions was answered with ``chunks`` (its error code follows the 4-byte size and the
        correlation id, its header being v0): without error, only SaslHandshake may follow; after
        UNSUPPORTED_VERSION or INVALID_REQUEST the client may ask again."""
        if self.state == "versions" and bytes(b"".join(chunks)[8:10]) == b"\x00\x00":
            self.state = "handshake"

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
            if self.previous is not None and self.previous[0] != self.mechanism:
                self.state = "bad_mechanism"
        return Step(_answer(request, body), close)

    def _authenticate(self, request) -> Step:
        cls = message_class(request.api, False)
        self.client_supports_reauth |= request.version > 0
        try:
            token = self.server.evaluate(bytes(request.body.auth_bytes or b""))  # type: ignore[union-attr]
            lifetime_ms = self._complete() if self.server.complete else 0  # type: ignore[union-attr]
        except (AuthenticationFailed, SaslFailed) as exc:
            message = public_message(self.mechanism, exc)  # type: ignore[arg-type]
            if self.reauthenticating and isinstance(exc, SaslFailed):
                message = message.replace("during authentication", "during re-authentication")
            body = cls(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message, auth_bytes=b"")
            return Step(_answer(request, body), f"SASL/{self.mechanism} authentication failed: {exc}")
        body = cls(error_code=ErrorCode.NONE, error_message=None, auth_bytes=token, session_lifetime_ms=lifetime_ms)
        return Step(_answer(request, body))

    def _complete(self) -> int:
        """The login is done: the session's lifetime in ms (0: none), as Kafka works it out; a re-login must
        keep the principal (``AuthenticationFailed`` if not)."""
        server = self.server
        if self.previous is not None and self.previous[1] != server.principal:  # type: ignore[union-attr]
            raise AuthenticationFailed(f"Cannot change principals during re-authentication from "
                                       f"User.{self.previous[1]}: User.{server.principal}")  # type: ignore[union-attr]
        now = self.clock()
        self.reauth_done_ns = self.nanos()
        expiry = getattr(server, "credential_expiry_ms", None)
        limit = self.max_reauth_ms.get(self.mechanism, 0)  # type: ignore[arg-type]
        lifetimes = ([max(0, expiry - now)] if expiry is not None else []) + ([limit] if limit > 0 else [])
        self.state = "done"
        if not lifetimes:
            self.expires_at_ms = None
            return 0
        self.expires_at_ms = now + min(lifetimes)
        return min(lifetimes)

    def _token(self, token: bytes) -> Step:
        try:
            answer = self.server.evaluate(token)  # type: ignore[union-attr]
            if self.server.complete:  # type: ignore[union-attr]
                self._complete()
        except SaslFailed as exc:  # v0 has no way to say why; Kafka's SaslException is an I/O error there
            raise UnexpectedRequest(f"SASL/{self.mechanism} authentication failed: {exc}") from None
        except AuthenticationFailed as exc:  # a failed login, not answered
            return Step([], f"SASL/{self.mechanism} authentication failed: {exc}")
        return Step([len(answer).to_bytes(4, "big"), answer])


def _illegal_state(request, why: str) -> Step:
    """A request other than SaslAuthenticate after a v1 handshake: its own response with ILLEGAL_SASL_STATE
    (where it has a top-level error code, as ApiVersions and SaslHandshake do), and a failed login."""
    fields = request.api.response.fields
    if not any(f.name == "error_code" and request.version in f.versions for f in fields):
        return Step([], why)
    body = message_class(request.api, False)(error_code=ErrorCode.ILLEGAL_SASL_STATE)
    return Step(_answer(request, body), why)


def _answer(request, body) -> list:
    return response_chunks(request.api, request.version, request.header.correlation_id, body)
