"""Signed OAUTHBEARER tokens checked as Kafka's ``OAuthBearerValidatorCallbackHandler`` checks them (KIP-768).

``SignedValidator.validate(token, now_ms)`` takes the token of a client's
first message (``sasl_oauthbearer.py``) and returns its principal and
claims, or raises ``InvalidToken``, which the client gets as
``{"status":"invalid_token"}``. Why it was refused goes to the log (a
warning, as Kafka logs it). The steps, in Kafka's and jose4j's order:

1. three sections, none empty (a trailing ``.`` is dropped, as Java's split
   drops it): ``<header>.<payload>.<signature>``;
2. the header's algorithm admitted and the signature right with the key the
   JWKS gives for it (``oauth_jws.py``; where the keys come from,
   ``oauth_jwks.py``: a token naming a ``kid`` not in an endpoint's keys
   makes the endpoint refresh them);
3. the registered claims as jose4j's JwtConsumer checks them: ``aud`` one of
   ``sasl.oauthbearer.expected.audience`` (if that is empty, a token with an
   ``aud`` claim is refused: jose4j's default), ``iss`` equal to
   ``sasl.oauthbearer.expected.issuer`` if set, ``exp`` and ``iat`` required
   numbers (seconds, fractions dropped), ``exp`` after now less
   ``sasl.oauthbearer.clock.skew.seconds`` and not before ``iat`` or ``nbf``,
   ``nbf`` not after now plus the skew, ``sub`` and ``jti`` strings if there;
4. Kafka's own: the scope claim (``sasl.oauthbearer.scope.claim.name``) a
   string (one scope, not split) or a list of non-blank strings without
   repeats, or absent (no scope is required); the subject claim
   (``sasl.oauthbearer.sub.claim.name``) a non-blank string, the principal
   (trimmed); ``iat`` not negative.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import attrs

from .oauth_jws import Jwk, JoseError, Jws, check_header, parse_json, parse_jws, verify
from .sasl_oauthbearer import InvalidToken

log = logging.getLogger("minibroker")


class KeySource(Protocol):
    def resolve(self, jws: Jws) -> Jwk | None: ...


@attrs.frozen
class ClaimRules:
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    clock_skew_s: int = 30
    audience: frozenset[str] = frozenset()
    issuer: str | None = None


def _refused(detail: str) -> InvalidToken:
    return InvalidToken("invalid_token", detail)


@attrs.define(eq=False)
class SignedValidator:
    """A listener's validator of signed tokens: the claim rules and the JWKS its keys come from."""

    rules: ClaimRules
    jwks: KeySource

    def validate(self, token: str, now_ms: float) -> tuple[str, dict]:
        try:
            claims = self._verified_claims(token)
            check_registered_claims(claims, self.rules, int(now_ms // 1000))
            return kafka_claims(claims, self.rules), claims
        except InvalidToken as exc:
            log.warning("OAUTHBEARER token refused: %.500s", exc)  # capped: the token is the client's text
            raise

    def _verified_claims(self, token: str) -> dict:
        sections = token.strip().split(".")
        while sections and not sections[-1]:
            sections.pop()
        if len(sections) != 3 or not all(s.strip() for s in sections):
            raise _refused(f"Malformed JWT provided; expected three sections (header, payload, and signature), "
                           f"got {len(sections)} with {sum(1 for s in sections if not s.strip())} empty")  # fmt: skip
        try:
            jws = parse_jws(*sections)
            check_header(jws)
            jwk = self.jwks.resolve(jws)
            if jwk is None:
                raise JoseError(f"no key of the JWKS fits the JWS header {jws.header}")
            verify(jws, jwk)
            claims = parse_json(jws.payload)
        except JoseError as exc:
            raise _refused(f"Could not validate the access token: {exc}") from None
        if not isinstance(claims, dict):
            raise _refused("the JWT claims set is not a JSON object")
        return claims


def _string(claims: dict, name: str) -> str | None:
    value = claims.get(name)
    if value is not None and not isinstance(value, str):
        raise _refused(f"The value of the '{name}' claim is not a string: {value!r}")
    return value


def _numeric_date(claims: dict, name: str) -> int | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _refused(f"The value of the '{name}' claim is not a number of seconds: {value!r}")
    return int(value)


def _check_audience(claims: dict, expected: frozenset[str]) -> None:
    aud = claims.get("aud")
    if aud is None:
        if expected:
            raise _refused("No Audience (aud) claim present.")
        return
    audiences = [aud] if isinstance(aud, str) else aud
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise _refused(f"The value of the 'aud' claim is not a string or an array of strings: {aud!r}")
    if not expected.intersection(audiences):
        why = "doesn't contain an acceptable identifier" if expected else "is present but no audience is expected"
        raise _refused(f"Audience (aud) claim {audiences} {why} (sasl.oauthbearer.expected.audience: "
                       f"{sorted(expected)})")  # fmt: skip


def check_registered_claims(claims: dict, rules: ClaimRules, now_s: int) -> None:
    """``aud``, ``iss``, ``exp``, ``iat``, ``nbf``, ``sub``, ``jti`` as jose4j checks them for Kafka."""
    _check_audience(claims, rules.audience)
    issuer = _string(claims, "iss")
    if rules.issuer is not None and issuer != rules.issuer:
        raise _refused(f"Issuer (iss) claim value ({issuer}) doesn't match expected value of {rules.issuer}"
                       if issuer is not None else f"No Issuer (iss) claim present but was expecting {rules.issuer}")
    exp, iat, nbf = (_numeric_date(claims, name) for name in ("exp", "iat", "nbf"))
    for name in ("sub", "jti"):
        _string(claims, name)
    if exp is None or iat is None:
        raise _refused(f"No {'Expiration Time (exp)' if exp is None else 'Issued At (iat)'} claim present.")
    skew = rules.clock_skew_s
    if now_s - skew >= exp:
        raise _refused(f"The JWT is no longer valid: now ({now_s}) is on or after exp={exp} (skew {skew} s)")
    if exp < iat or (nbf is not None and exp < nbf):
        raise _refused(f"The Expiration Time (exp={exp}) claim value cannot be before iat={iat} or nbf={nbf}")
    if nbf is not None and now_s + skew < nbf:
        raise _refused(f"The JWT is not yet valid: now ({now_s}) is before nbf={nbf} (skew {skew} s)")


def _scopes(claims: dict, name: str) -> list[str]:
    raw: Any = claims.get(name)
    scopes = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    seen: list[str] = []
    for scope in scopes:
        if not isinstance(scope, str) or not scope.strip():
            raise _refused(f"{name} value must be non-blank strings, got {scope!r}")
        if scope.strip() in seen:
            raise _refused(f"{name} value must not contain duplicates - {scope.strip()} already present")
        seen.append(scope.strip())
    return seen


def kafka_claims(claims: dict, rules: ClaimRules) -> str:
    """Kafka's checks of the scope, subject and iat claims; the principal (the subject, trimmed)."""
    _scopes(claims, rules.scope_claim)
    subject = claims.get(rules.sub_claim)
    if subject is not None and not isinstance(subject, str):
        raise _refused(f"Could not extract the '{rules.sub_claim}' claim from the access token")
    if subject is None or not subject.strip():
        raise _refused(f"{rules.sub_claim} value must be a non-blank string, got {subject!r}")
    issued = _numeric_date(claims, "iat") or 0
    if issued < 0:
        raise _refused(f"iat value must be null or non-negative; value given was {issued}")
    return subject.strip()
