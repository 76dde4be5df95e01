"""SASL/PLAIN on SASL_PLAINTEXT listeners: the broker's configuration and the per-connection handshake.

Configuration, as Kafka's: a listener mapped to SASL_PLAINTEXT in
``listener.security.protocol.map`` authenticates with the mechanisms of
``listener.name.<listener>.sasl.enabled.mechanisms`` (else
``sasl.enabled.mechanisms``, whose default is Kafka's GSSAPI); only PLAIN is
served, so anything else stops the start naming the key. The users come
from the listener's JAAS entry,
``listener.name.<listener>.plain.sasl.jaas.config``:
``org.apache.kafka.common.security.plain.PlainLoginModule required
user_alice="alice-secret" ...;`` (each ``user_<name>`` option is a user and
its password; ``username``/``password`` are the broker's own, unused on one
node).

``SaslPlainAuthenticator`` is the state machine of one connection before it
is authenticated (Kafka's ``SaslServerAuthenticator``), sans-IO: ``handle``
takes a request frame and says what to answer. Until the handshake only
ApiVersions and SaslHandshake are taken; after a v1 handshake only
SaslAuthenticate; after a v0 handshake the next frame is the bare PLAIN
token (answered with an empty frame). Anything else closes the connection.
A mechanism other than PLAIN is answered UNSUPPORTED_SASL_MECHANISM (with
the enabled ones) and the connection closed; a PLAIN token is checked as
Kafka's ``PlainSaslServer`` does (three NUL-separated parts, a username and a
password, an authorization id equal to the username if given) and a failure
is answered SASL_AUTHENTICATION_FAILED with Kafka's message, then closed.
"""

from __future__ import annotations

import hmac
import re
from typing import Any

import attrs

from protocol import API_BY_KEY, ErrorCode, decode_request, message_class, response_chunks

from .config import ConfigError

PLAIN = "PLAIN"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class AuthenticationFailed(Exception):
    """A PLAIN token that does not authenticate; the message is Kafka's."""


def parse_plain_jaas(key: str, text: str) -> dict[str, str]:
    """The users (``user_<name>="<password>"`` options) of a PlainLoginModule JAAS entry."""
    body = text.strip().rstrip(";").strip()
    if not body.startswith(PLAIN_MODULE):
        raise ConfigError(f"{key}: expected '{PLAIN_MODULE} required ...;'")
    rest = body[len(PLAIN_MODULE):].strip()
    flag, _, options = rest.partition(" ")
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError(f"{key}: expected a control flag (required) after the login module")
    users, pos = {}, 0
    while options[pos:].strip():
        match = _OPTION.match(options, pos)
        if match is None:
            raise ConfigError(f"{key}: cannot read the options at {options[pos:].strip()[:30]!r}")
        name, value = match.group(1), re.sub(r"\\(.)", r"\1", match.group(2))
        if name.startswith("user_"):
            users[name[5:]] = value
        pos = match.end()
    return users


def sasl_users(config: Any, listener: str) -> dict[str, str]:
    """Check a SASL_PLAINTEXT listener's settings; its PLAIN users by name."""
    prefix = f"listener.name.{listener.lower()}."
    overrides = config.listener_overrides
    mechanisms_key = prefix + "sasl.enabled.mechanisms"
    key = mechanisms_key if mechanisms_key in overrides else "sasl.enabled.mechanisms"
    text = overrides.get(mechanisms_key, config.sasl_enabled_mechanisms)
    mechanisms = [m.strip().upper() for m in text.split(",") if m.strip()]
    if mechanisms != [PLAIN]:
        raise ConfigError(f"{key}: only PLAIN is supported on SASL_PLAINTEXT listener {listener}, got {text!r}")
    jaas_key = prefix + "plain.sasl.jaas.config"
    if jaas_key not in overrides:
        raise ConfigError(f"{jaas_key}: required for SASL/PLAIN on listener {listener}")
    users = parse_plain_jaas(jaas_key, overrides[jaas_key])
    if not users:
        raise ConfigError(f"{jaas_key}: no user_<name>=\"<password>\" option, so no client could log in")
    return users


def check_plain_token(token: bytes, users: dict[str, str]) -> str:
    """The username a PLAIN token authenticates (RFC 4616 as Kafka's PlainSaslServer checks it)."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, username, password = (p.decode("utf-8", "replace") for p in parts)
    if not username:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if not password:
        raise AuthenticationFailed("Authentication failed: password not specified")
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise AuthenticationFailed("Authentication failed: Invalid username or password")
    if authzid and authzid != username:
        raise AuthenticationFailed(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    return username


@attrs.define
class Step:
    """What to do with one frame: answer ``chunks`` (None: hand the frame to dispatch), then maybe close."""

    chunks: list | None
    close_after: str | None = None


@attrs.define
class SaslPlainAuthenticator:
    users: dict[str, str]
    state: str = "handshake"  # -> "authenticate" (v1) or "token" (v0) -> "done"
    principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.state == "done"

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
        raise UnexpectedRequest(f"Unexpected Kafka request of type {name} during SASL handshake.")

    def _handshake(self, request) -> Step:
        body = message_class(request.api, False)(error_code=ErrorCode.NONE, mechanisms=[PLAIN])
        close = None
        if request.body.mechanism != PLAIN:
            body.error_code = ErrorCode.UNSUPPORTED_SASL_MECHANISM
            close = f"unsupported SASL mechanism {request.body.mechanism!r}"
        else:
            self.state = "authenticate" if request.version >= 1 else "token"
        return Step(response_chunks(request.api, request.version, request.header.correlation_id, body), close)

    def _authenticate(self, request) -> Step:
        cls = message_class(request.api, False)
        try:
            self.principal = check_plain_token(bytes(request.body.auth_bytes or b""), self.users)
        except AuthenticationFailed as exc:
            body = cls(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc), auth_bytes=b"")
            chunks = response_chunks(request.api, request.version, request.header.correlation_id, body)
            return Step(chunks, f"SASL/PLAIN authentication failed: {exc}")
        self.state = "done"
        body = cls(error_code=ErrorCode.NONE, error_message=None, auth_bytes=b"", session_lifetime_ms=0)
        return Step(response_chunks(request.api, request.version, request.header.correlation_id, body))

    def _token(self, token: bytes) -> Step:
        try:
            self.principal = check_plain_token(token, self.users)
        except AuthenticationFailed as exc:  # v0 has no way to say why: the connection just closes
            raise UnexpectedRequest(f"SASL/PLAIN authentication failed: {exc}") from None
        self.state = "done"
        return Step([b"\x00\x00\x00\x00"])  # an empty token: authenticated


class UnexpectedRequest(Exception):
    """A frame Kafka's authenticator refuses: the connection is closed without an answer."""
