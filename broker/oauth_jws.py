"""Signed JSON Web Tokens: the JWS compact form (RFC 7515) and the JSON Web Keys that check it (RFC 7517).

What Kafka's ``OAuthBearerValidatorCallbackHandler`` leaves to the jose4j
library, done here with ``cryptography``:

* ``parse_jwks`` reads a JWK Set, ``{"keys": [...]}``: each RSA (``n``,
  ``e``), EC (``crv`` P-256/P-384/P-521, ``x``, ``y``) or OKP (``crv``
  Ed25519/Ed448, ``x``) public key with its ``kid``, ``use`` and ``alg``.
  A key that cannot be read (another ``kty``, a symmetric ``oct`` key, a
  point off its curve) is left out, as jose4j leaves it out; a document
  without a ``keys`` list is an error.
* ``parse_jws`` splits ``<header>.<payload>.<signature>`` (base64url). JSON
  is read strictly, as jose4j reads it: a member named twice, ``NaN`` or an
  infinite number is an error.
* ``check_header`` admits the asymmetric algorithms: RS256/384/512
  (RSASSA-PKCS1-v1_5), PS256/384/512 (RSASSA-PSS, salt as long as the
  hash), ES256/384/512 (ECDSA, the signature ``r || s``) and EdDSA. ``none``
  is refused, as Kafka's validator refuses it; HMAC (HS*) is refused too (a
  JWKS publishes public keys; see the README). A ``crit`` header is refused
  (no extension is understood).
* ``select_key`` picks the key as jose4j's verification key selector does:
  the keys of the algorithm's type whose ``use`` is ``sig`` or absent, and
  whose ``kid`` is the token's if the token names one; if more than one is
  left, those whose ``alg`` is the token's or absent, then (EC) those on the
  algorithm's curve; the first one left. A token without ``kid`` is thus
  checked with the set's only key of its type.
* ``verify`` checks the signature with that key: an RSA key must have 2048
  bits or more, an EC key must be on the curve of its ES algorithm.

Every failure is a ``JoseError`` whose message says why (for the log: the
client only gets ``invalid_token``).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from typing import Any

import attrs
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

log = logging.getLogger("minibroker")
SIGNED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_HASHES = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_EC_CURVES = {"P-256": (ec.SECP256R1, 32), "P-384": (ec.SECP384R1, 48), "P-521": (ec.SECP521R1, 66)}
_ES_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_ED_CURVES = {"Ed25519": ed25519.Ed25519PublicKey, "Ed448": ed448.Ed448PublicKey}


class JoseError(ValueError):
    """A token, key or key set that cannot be used; the message says why."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise ValueError(f"the member {name!r} is given twice")
        result[name] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is too large")
    return value


def parse_json(data: bytes | str) -> Any:
    """A JSON document read strictly (no member twice, no NaN or Infinity); ``JoseError`` if it is not one."""
    try:
        return json.loads(data, object_pairs_hook=_unique, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise JoseError(f"not JSON: {exc}") from None


def b64url(text: str) -> bytes:
    """base64url without padding (RFC 7515 section 2)."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise JoseError(f"not base64url: {text[:40]!r}") from None


@attrs.frozen
class Jwk:
    """A public key of a JWK Set, with what selects it."""

    kty: str
    key: Any = attrs.field(eq=False, repr=False)
    kid: str | None = None
    use: str | None = None
    alg: str | None = None
    crv: str | None = None


def _member(params: dict, name: str, required: bool = False) -> Any:
    value = params.get(name)
    if value is None and required:
        raise JoseError(f"no {name!r} member")
    if value is not None and not isinstance(value, str):
        raise JoseError(f"the {name!r} member is not a string")
    return value


def _integer(params: dict, name: str) -> int:
    return int.from_bytes(b64url(_member(params, name, True)), "big")


def _public_key(kty: str, params: dict) -> tuple[Any, str | None]:
    """The ``cryptography`` public key of a JWK and its curve."""
    if kty == "RSA":
        return rsa.RSAPublicNumbers(_integer(params, "e"), _integer(params, "n")).public_key(), None
    crv = _member(params, "crv", True)
    if kty == "EC" and crv in _EC_CURVES:
        numbers = ec.EllipticCurvePublicNumbers(_integer(params, "x"), _integer(params, "y"), _EC_CURVES[crv][0]())
        return numbers.public_key(), crv
    if kty == "OKP" and crv in _ED_CURVES:
        return _ED_CURVES[crv].from_public_bytes(b64url(_member(params, "x", True))), crv
    raise JoseError(f"a {kty} key on curve {crv!r} is not a signature key served here")


def parse_jwk(params: Any) -> Jwk:
    """One key of a JWK Set; ``JoseError`` if it is not a public signature key that can be read."""
    if not isinstance(params, dict):
        raise JoseError("a JWK is a JSON object")
    kty = _member(params, "kty", True)
    if kty not in ("RSA", "EC", "OKP"):
        raise JoseError(f"kty {kty!r} is not a public signature key type")
    kid, use, alg = (_member(params, name) for name in ("kid", "use", "alg"))
    try:
        key, crv = _public_key(kty, params)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise JoseError(f"the {kty} key {kid!r} cannot be read: {exc}") from None
    return Jwk(kty, key, kid, use, alg, crv)


def parse_jwks(data: bytes | str) -> tuple[Jwk, ...]:
    """The usable keys of a JWK Set document; ``JoseError`` if it is not one."""
    document = parse_json(data)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise JoseError("the JWKS document has no 'keys' list")
    keys = []
    for params in document["keys"]:
        try:
            keys.append(parse_jwk(params))
        except JoseError as exc:
            log.debug("a key of the JWKS is left out: %s", exc)
    return tuple(keys)


@attrs.frozen
class Jws:
    header: dict
    payload: bytes
    signing_input: bytes
    signature: bytes

    @property
    def alg(self) -> str:
        return self.header["alg"]

    @property
    def kid(self) -> str | None:
        return self.header.get("kid")


def parse_jws(header: str, payload: str, signature: str) -> Jws:
    """The three sections of a JWS compact serialization, decoded; the header must be a JSON object."""
    decoded = parse_json(b64url(header))
    if not isinstance(decoded, dict):
        raise JoseError("the JOSE header is not a JSON object")
    return Jws(decoded, b64url(payload), f"{header}.{payload}".encode("ascii"), b64url(signature))


def check_header(jws: Jws) -> None:
    """The header's ``alg`` must be an asymmetric signature algorithm, ``kid`` a string; no ``crit``."""
    alg, kid = jws.header.get("alg"), jws.header.get("kid")
    if alg not in SIGNED_ALGORITHMS:
        raise JoseError(f"the algorithm {alg!r} is not allowed (allowed: {', '.join(SIGNED_ALGORITHMS)})")
    if kid is not None and not isinstance(kid, str):
        raise JoseError("the kid header is not a string")
    if "crit" in jws.header:
        raise JoseError(f"unrecognized critical header parameters {jws.header['crit']!r}")


def select_key(jws: Jws, keys: tuple[Jwk, ...]) -> Jwk | None:
    """The key to check ``jws`` with, chosen as jose4j's VerificationJwkSelector chooses; None if none fits."""
    kty, kid = _KEY_TYPES[jws.alg[:2]], jws.kid
    found = [k for k in keys if k.kty == kty and k.use in (None, "sig") and (kid is None or k.kid == kid)]
    if len(found) > 1:
        found = [k for k in found if k.alg in (None, jws.alg)]
    if len(found) > 1 and kty == "EC":
        found = [k for k in found if k.crv == _ES_CURVE[jws.alg]]
    return found[0] if found else None


def verify(jws: Jws, jwk: Jwk) -> None:
    """Check the signature of ``jws`` with ``jwk`` (chosen by ``select_key``); ``JoseError`` if it is wrong."""
    alg, data, signature = jws.alg, jws.signing_input, jws.signature
    try:
        if alg.startswith(("RS", "PS")):
            if jwk.key.key_size < 2048:
                raise JoseError(f"an RSA key must have 2048 bits or more, {jwk.kid!r} has {jwk.key.key_size}")
            digest = _HASHES[alg[2:]]()
            pad = padding.PKCS1v15() if alg[0] == "R" else padding.PSS(padding.MGF1(digest), digest.digest_size)
            jwk.key.verify(signature, data, pad, digest)
        elif alg.startswith("ES"):
            _verify_ecdsa(jws, jwk)
        else:
            jwk.key.verify(signature, data)
    except InvalidSignature:
        raise JoseError(f"the JWS signature is invalid (key {jwk.kid!r})") from None


def _verify_ecdsa(jws: Jws, jwk: Jwk) -> None:
    curve = _ES_CURVE[jws.alg]
    if jwk.crv != curve:
        raise JoseError(f"{jws.alg} expects a key on {curve}, the key {jwk.kid!r} is on {jwk.crv}")
    size = _EC_CURVES[curve][1]
    if len(jws.signature) != 2 * size:
        raise JoseError(f"an {jws.alg} signature has {2 * size} bytes, not {len(jws.signature)}")
    r, s = int.from_bytes(jws.signature[:size], "big"), int.from_bytes(jws.signature[size:], "big")
    jwk.key.verify(encode_dss_signature(r, s), jws.signing_input, ec.ECDSA(_HASHES[jws.alg[2:]]()))
