"""SASL/OAUTHBEARER: Kafka's OAuthBearerSaslServer, and its default validator of unsecured JWTs.

A Kafka broker whose listener enables OAUTHBEARER without a server callback
handler of its own validates tokens with ``OAuthBearerUnsecuredValidatorCallbackHandler``:
unsigned JSON Web Tokens, meant for development and tests (what
``enable.sasl.oauthbearer.unsecure.jwt=true`` in librdkafka and the Java
client's default ``OAuthBearerLoginModule`` login make). This broker does the
same (``ValidatorOptions``). A listener whose handler is Kafka's
``OAuthBearerValidatorCallbackHandler`` checks signed tokens with the keys of
a JWKS instead (KIP-768: ``oauth_config.py`` picks the validator,
``oauth_validator.py`` is the signed one); ``OAuthBearerServer`` is the same
for both: it calls its validator's ``validate(token, now_ms)``.

The client's first message (RFC 7628) is ``n,[a=<authzid>],`` then
``\\x01auth=Bearer <token>\\x01`` and optional ``key=value\\x01`` extensions,
closed by ``\\x01``; a message not of that form fails the login with Kafka's
fixed text. The token must be an unsecured JWS, ``<header>.<claims>.``
(base64url JSON, an empty signature) whose header says ``"alg":"none"``; its
claims are checked as Kafka's ``OAuthBearerValidationUtils`` checks them: the
principal claim (``sub``) a non-empty string, ``exp`` a number of seconds not
past (with the allowed clock skew), ``iat`` if there not in the future, before
``exp``, and the required scopes in the ``scope`` claim. A token refused gets
Kafka's challenge ``{"status":"invalid_token"}`` (``insufficient_scope``, with
the scope, for a missing scope); the client acknowledges it with ``\\x01``
and the login fails with that JSON as its message. An authorization id other
than the token's principal fails the login. The principal is ``User:`` and
the principal claim; the token's ``exp`` (``credential_expiry_ms``) ends the
session, as Kafka's negotiated credential lifetime does (``sasl_auth.py``).

The validator's options are Kafka's, in the listener's JAAS entry
``listener.name.<l>.oauthbearer.sasl.jaas.config``
(``org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ...;``)
or the one entry of the static JAAS file's section (``jaas_context.py``):
``unsecuredValidatorPrincipalClaimName`` (``sub``),
``unsecuredValidatorScopeClaimName`` (``scope``),
``unsecuredValidatorRequiredScope`` (space-separated; none) and
``unsecuredValidatorAllowableClockSkewMs`` (0).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Callable, Protocol

import attrs

from .clock import wall_clock_ms
from .config import ConfigError
from .sasl_auth import AuthenticationFailed, SaslFailed
from .jaas import parse_jaas
from .jaas_context import OAUTHBEARER_MODULE

OAUTHBEARER = "OAUTHBEARER"
_AUTH = re.compile(r"(?P<scheme>[\w]+)[ ]+(?P<token>[-_.a-zA-Z0-9]+)")
_KEY = re.compile(r"[A-Za-z]+")
_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")


class InvalidToken(Exception):
    """Why a token is refused: its ``status`` (RFC 6750) and the scope a client lacks, if that is why."""

    def __init__(self, status: str, detail: str, scope: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.scope = status, scope


@attrs.frozen
class ValidatorOptions:
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, key: str, text: str | None) -> "ValidatorOptions":
        """The ``unsecuredValidator*`` options of the listener's OAuthBearerLoginModule JAAS entry."""
        return cls.from_options(key, parse_jaas(key, text, OAUTHBEARER_MODULE) if text else {})

    @classmethod
    def from_options(cls, source: str, options: dict[str, str]) -> "ValidatorOptions":
        """The ``unsecuredValidator*`` options of a JAAS entry (``source`` names it in messages)."""
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "0")
        if not skew.isdigit():
            raise ConfigError(f"{source}: unsecuredValidatorAllowableClockSkewMs must be a number of ms >= 0, "
                              f"got {skew!r}")  # fmt: skip
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope",
                   tuple(options.get("unsecuredValidatorRequiredScope", "").split()), int(skew))  # fmt: skip

    def validate(self, token: str, now_ms: float) -> tuple[str, dict]:
        return validate_unsecured(token, self, now_ms)


class TokenValidator(Protocol):
    def validate(self, token: str, now_ms: float) -> tuple[str, dict]:
        """The principal and claims of a token; ``InvalidToken`` says why it is refused."""


def parse_client_message(message: bytes) -> tuple[str, str]:
    """``(authorization id, token)`` of an RFC 7628 client first message; ``SaslFailed`` if it is not one."""
    text = message.decode("utf-8", "replace")
    gs2, sep, rest = text.partition(",")
    authzid, sep2, kvs = rest.partition(",")
    if gs2 != "n" or not sep or not sep2 or (authzid and not authzid.startswith("a=")) or not kvs.startswith("\x01"):
        raise SaslFailed("Invalid OAUTHBEARER client first message")
    pairs = kvs[1:].split("\x01")
    if len(pairs) < 3 or pairs[-2:] != ["", ""]:
        raise SaslFailed("Invalid OAUTHBEARER client first message")
    values = {}
    for pair in pairs[:-2]:
        key, eq, value = pair.partition("=")
        if not eq or not _KEY.fullmatch(key) or (value and not _VALUE.fullmatch(value)):
            raise SaslFailed("Invalid OAUTHBEARER client first message")
        values[key] = value
    auth = _AUTH.fullmatch(values.get("auth", ""))
    if auth is None or auth.group("scheme").lower() != "bearer":
        raise SaslFailed("Invalid OAUTHBEARER client first message")
    return authzid[2:], auth.group("token")


def _part(text: str) -> dict:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("invalid_token", f"not base64url JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidToken("invalid_token", "a JOSE header or claims set must be a JSON object")
    return value


def validate_unsecured(token: str, options: ValidatorOptions, now_ms: float) -> tuple[str, dict]:
    """The principal of an unsecured JWS and its claims; ``InvalidToken`` says why it is refused."""
    parts = token.split(".")
    if len(parts) != 3 or parts[2]:
        raise InvalidToken("invalid_token", "an unsecured JWS is <header>.<claims>. with an empty signature")
    header, claims = _part(parts[0]), _part(parts[1])
    if header.get("alg") != "none":
        raise InvalidToken("invalid_token", f"an unsecured JWS has alg none, not {header.get('alg')!r}")
    principal = claims.get(options.principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise InvalidToken("invalid_token", f"no {options.principal_claim} claim holding a principal name")
    _check_times(claims, options, now_ms)
    scope = claims.get(options.scope_claim, [])
    scopes = scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else None
    if scopes is None:
        raise InvalidToken("invalid_token", f"the {options.scope_claim} claim is neither a string nor a list")
    missing = [s for s in options.required_scope if s not in scopes]
    if missing:
        raise InvalidToken("insufficient_scope", f"the token lacks the scope {missing}",
                           " ".join(options.required_scope))  # fmt: skip
    return principal, claims


def _check_times(claims: dict, options: ValidatorOptions, now_ms: float) -> None:
    for name in ("exp", "iat"):
        if name in claims and (isinstance(claims[name], bool) or not isinstance(claims[name], (int, float))):
            raise InvalidToken("invalid_token", f"the {name} claim is not a number")
    if "exp" not in claims:
        raise InvalidToken("invalid_token", "no exp claim")
    expires_ms, skew = claims["exp"] * 1000, options.clock_skew_ms
    if now_ms - skew >= expires_ms:
        raise InvalidToken("invalid_token", f"the token expired at {expires_ms:.0f} ms")
    if "iat" in claims:
        issued_ms = claims["iat"] * 1000
        if issued_ms > now_ms + skew:
            raise InvalidToken("invalid_token", "the token was issued in the future")
        if issued_ms >= expires_ms:
            raise InvalidToken("invalid_token", "the token expires before it was issued")


@attrs.define
class OAuthBearerServer:
    """OAUTHBEARER's side: the client's message in; empty out (logged in) or the error challenge out."""

    validator: TokenValidator  # ValidatorOptions (unsecured JWTs) or oauth_validator.SignedValidator
    clock: Callable[[], float] = wall_clock_ms
    principal: str | None = None
    error: str | None = None  # the challenge sent; the client's next message must acknowledge it
    claims: dict[str, Any] = attrs.field(factory=dict)

    @property
    def complete(self) -> bool:
        return self.principal is not None

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the token of the login expires (its ``exp``, ms): the session's end (KIP-368)."""
        exp = self.claims.get("exp") if self.complete else None
        return int(exp * 1000) if isinstance(exp, (int, float)) else None

    def evaluate(self, message: bytes) -> bytes:
        if self.error is not None:
            if message == b"\x01":
                raise AuthenticationFailed(self.error)
            raise SaslFailed("an OAUTHBEARER client must acknowledge the error challenge with ^A")
        authzid, token = parse_client_message(message)
        try:
            principal, self.claims = self.validator.validate(token, self.clock())
        except InvalidToken as exc:
            challenge = {"status": exc.status, **({"scope": exc.scope} if exc.scope else {})}
            self.error = json.dumps(challenge, separators=(",", ":"))
            return self.error.encode()
        if authzid and authzid != principal:
            raise AuthenticationFailed(f"Authentication failed: Client requested an authorization id ({authzid}) "
                                       f"that is different from the token's principal name ({principal})")  # fmt: skip
        self.principal = principal
        return b""
