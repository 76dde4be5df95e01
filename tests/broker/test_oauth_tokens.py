"""Signed OAUTHBEARER tokens (``broker/oauth_jws.py``, ``broker/oauth_validator.py``): signatures and claims.

Keys and tokens are made here with ``cryptography`` (``tests/oauth_idp.py``);
the validator gets the keys from a fixed JWK Set. Every algorithm Kafka's
validator admits is accepted with the right key; a wrong signature, an
unknown kid, ``none``, HMAC and every claim Kafka or jose4j checks are
refused, and on a connection the refusal is Kafka's ``invalid_token``
challenge.
"""

from __future__ import annotations

import json
import logging

import attrs
import pytest

from broker.oauth_jws import Jws, parse_jwks, select_key
from broker.oauth_validator import ClaimRules, SignedValidator
from broker.sasl_auth import AuthenticationFailed
from broker.sasl_oauthbearer import InvalidToken, OAuthBearerServer
from tests.oauth_idp import SigningKey, b64, jwks_document

NOW = 1_750_000_000
NOW_MS = NOW * 1000
GOOD = {"sub": "alice", "iat": NOW - 10, "exp": NOW + 3600, "scope": "kafka"}


@attrs.frozen
class FixedKeys:
    document: dict

    def resolve(self, jws: Jws):
        return select_key(jws, parse_jwks(json.dumps(self.document)))


@pytest.fixture(scope="module")
def keys() -> dict[str, SigningKey]:
    return {"rsa": SigningKey.rsa("rsa-1"), "rsa2": SigningKey.rsa("rsa-2"), "p256": SigningKey.ec("ec-256"),
            "p384": SigningKey.ec("ec-384", "P-384"), "p521": SigningKey.ec("ec-521", "P-521"),
            "ed": SigningKey.ed25519("ed-1"), "small": SigningKey.rsa("small", bits=1024)}  # fmt: skip


def validator(keys, *names: str, **rules) -> SignedValidator:
    published = names or ("rsa", "p256", "p384", "p521", "ed", "small")
    return SignedValidator(ClaimRules(**rules), FixedKeys(jwks_document(*(keys[n] for n in published))))


def refused(validator: SignedValidator, token: str, reason: str) -> None:
    with pytest.raises(InvalidToken, match=reason) as caught:
        validator.validate(token, NOW_MS)
    assert caught.value.status == "invalid_token"


@pytest.mark.parametrize(("name", "alg"), [
    ("rsa", "RS256"), ("rsa", "RS384"), ("rsa", "RS512"), ("rsa", "PS256"), ("rsa", "PS384"), ("rsa", "PS512"),
    ("p256", "ES256"), ("p384", "ES384"), ("p521", "ES512"), ("ed", "EdDSA"),
])  # fmt: skip
def test_each_algorithm_kafka_admits_is_accepted_with_its_key(keys, name, alg):
    token = keys[name].sign(GOOD, alg=alg)
    assert validator(keys).validate(token, NOW_MS) == ("alice", GOOD)


def test_the_principal_is_the_trimmed_subject_claim_and_scopes_may_be_a_list(keys):
    claims = {**GOOD, "sub": " bob ", "client_id": "svc", "scope": ["read", "write"]}
    assert validator(keys).validate(keys["rsa"].sign(claims), NOW_MS)[0] == "bob"
    named = validator(keys, sub_claim="client_id", scope_claim="scp")
    assert named.validate(keys["rsa"].sign({**claims, "scp": "a b"}), NOW_MS)[0] == "svc"
    assert validator(keys).validate(keys["rsa"].sign({k: v for k, v in GOOD.items() if k != "scope"}), NOW_MS)


def test_signatures_that_do_not_match_are_refused(keys):
    v, token = validator(keys), keys["rsa"].sign(GOOD)
    header, _, signature = token.split(".")
    forged = f"{header}.{b64(json.dumps({**GOOD, 'sub': 'admin'}).encode())}.{signature}"
    refused(v, forged, "signature is invalid")
    refused(v, keys["rsa2"].sign(GOOD, kid="rsa-1"), "signature is invalid")  # another key under a known kid
    refused(v, keys["p256"].sign(GOOD, kid="ec-256", alg="ES384"), "ES384 expects a key on P-384, the key 'ec-256'")
    short = token.rsplit(".", 1)[0] + "." + b64(b"\x01" * 64)
    refused(v, keys["p256"].sign(GOOD).rsplit(".", 1)[0] + "." + b64(b"\x01" * 63), "signature has 64 bytes")
    refused(v, short, "signature is invalid")
    refused(v, keys["small"].sign(GOOD), "2048 bits or more")


def test_an_unknown_kid_or_no_key_of_the_type_is_refused(keys):
    refused(validator(keys), keys["rsa2"].sign(GOOD), "no key of the JWKS fits")
    refused(validator(keys, "rsa"), keys["p256"].sign(GOOD), "no key of the JWKS fits")


@pytest.mark.parametrize(("header", "reason"), [
    ({"alg": "none"}, "'none' is not allowed"), ({"alg": "HS256"}, "'HS256' is not allowed"),
    ({"alg": ["RS256"]}, "is not allowed"), ({"alg": None}, "None is not allowed"),
    ({"kid": 7}, "kid header is not a string"), ({"crit": ["exp"], "exp": 1}, "critical header"),
])  # fmt: skip
def test_headers_other_than_an_asymmetric_signature_are_refused(keys, header, reason):
    refused(validator(keys), keys["rsa"].sign(GOOD, **header), reason)


def test_unsecured_and_hmac_tokens_are_refused_on_a_signed_listener(keys):
    import hashlib
    import hmac

    claims = b64(json.dumps(GOOD).encode())
    unsecured = f"{b64(json.dumps({'alg': 'none'}).encode())}.{claims}."
    refused(validator(keys), unsecured, "expected three sections.*got 2")
    refused(validator(keys), f"{unsecured}{b64(b'x')}", "'none' is not allowed")
    text = f"{b64(json.dumps({'alg': 'HS256', 'kid': 'rsa-1'}).encode())}.{claims}"
    mac = hmac.new(b"secret", text.encode(), hashlib.sha256).digest()
    refused(validator(keys), f"{text}.{b64(mac)}", "'HS256' is not allowed")


@pytest.mark.parametrize(("token", "reason"), [
    ("a.b", "got 2"), ("a..c", "got 3 with 1 empty"), ("a.b.c.d", "got 4"), ("!!.b.c", "not base64url"),
    (f"{b64(b'[1]')}.{b64(b'{}')}.{b64(b'x')}", "JOSE header is not a JSON object"),
    (".".join(b64(part) for part in (b'{"alg":"RS256","alg":"none"}', b"{}", b"x")), "given twice"),
])  # fmt: skip
def test_malformed_tokens_are_refused(keys, token, reason):
    refused(validator(keys), token, reason)


@pytest.mark.parametrize(("claims", "rules", "reason"), [
    ({**GOOD, "exp": NOW - 31}, {}, "no longer valid"),
    ({**GOOD, "exp": NOW - 10}, {"clock_skew_s": 0}, "no longer valid"),
    ({k: v for k, v in GOOD.items() if k != "exp"}, {}, r"No Expiration Time \(exp\)"),
    ({k: v for k, v in GOOD.items() if k != "iat"}, {}, r"No Issued At \(iat\)"),
    ({**GOOD, "exp": "tomorrow"}, {}, "'exp' claim is not a number"),
    ({**GOOD, "iat": True}, {}, "'iat' claim is not a number"),
    ({**GOOD, "iat": NOW + 7200}, {}, "cannot be before"),
    ({**GOOD, "nbf": NOW + 60}, {}, "not yet valid"),
    ({**GOOD, "iat": -5}, {}, "iat value must be null or non-negative"),
    ({**GOOD, "aud": "kafka"}, {}, "present but no audience is expected"),
    ({**GOOD, "aud": ["web"]}, {"audience": frozenset({"kafka", "cli"})}, "doesn't contain an acceptable"),
    (GOOD, {"audience": frozenset({"kafka"})}, r"No Audience \(aud\) claim present"),
    ({**GOOD, "aud": ["kafka", 3]}, {"audience": frozenset({"kafka"})}, "'aud' claim is not a string or an array"),
    ({**GOOD, "iss": "https://evil"}, {"issuer": "https://idp"}, "doesn't match expected value of https://idp"),
    (GOOD, {"issuer": "https://idp"}, r"No Issuer \(iss\) claim present"),
    ({**GOOD, "iss": 5}, {}, "'iss' claim is not a string"),
    ({**GOOD, "jti": 5}, {}, "'jti' claim is not a string"),
    ({k: v for k, v in GOOD.items() if k != "sub"}, {}, "sub value must be a non-blank string, got None"),
    ({**GOOD, "sub": "  "}, {}, "sub value must be a non-blank string"),
    ({**GOOD, "sub": 42}, {}, "'sub' claim is not a string"),
    ({**GOOD, "email": 42}, {"sub_claim": "email"}, "Could not extract the 'email' claim"),
    ({**GOOD, "scope": ["a", " a "]}, {}, "must not contain duplicates - a already present"),
    ({**GOOD, "scope": ["a", ""]}, {}, "non-blank strings"),
    ({**GOOD, "scope": ["a", 1]}, {}, "non-blank strings"),
])  # fmt: skip
def test_claims_are_checked_as_kafka_and_jose4j_check_them(keys, claims, rules, reason):
    refused(validator(keys, **rules), keys["rsa"].sign(claims), reason)


def test_accepted_claims_within_the_skew_and_with_the_expected_audience_and_issuer(keys):
    rules = {"audience": frozenset({"kafka", "cli"}), "issuer": "https://idp"}
    claims = {**GOOD, "iat": NOW - 60, "exp": NOW - 20, "aud": ["web", "cli"], "iss": "https://idp"}
    assert validator(keys, **rules).validate(keys["rsa"].sign(claims), NOW_MS)[0] == "alice"
    assert validator(keys).validate(keys["rsa"].sign({**GOOD, "nbf": NOW + 20}), NOW_MS)[0] == "alice"
    assert validator(keys).validate(keys["rsa"].sign({**GOOD, "exp": NOW + 0.9 + 1}), NOW_MS)


def test_a_payload_that_is_not_a_json_object_is_refused(keys):
    key = keys["rsa"]
    token = key.sign(GOOD)
    header = token.split(".")[0]
    payloads = ((b"[1, 2]", "not a JSON object"), (b'{"exp": 1e999}', "too large"),
                (b'{"exp": NaN}', "not a JSON value"), (b'{"sub": "a", "sub": "b"}', "given twice"))  # fmt: skip
    for payload, reason in payloads:
        text = f"{header}.{b64(payload)}"
        refused(validator(keys), f"{text}.{b64(key._signature(text.encode(), 'RS256'))}", reason)


def test_keys_are_selected_as_jose4j_selects_them(keys):
    unnamed = [attrs.evolve(keys["rsa"], kid=None), attrs.evolve(keys["rsa2"], kid=None)]
    only = SignedValidator(ClaimRules(), FixedKeys(jwks_document(unnamed[0])))
    assert only.validate(unnamed[0].sign(GOOD), NOW_MS)[0] == "alice"  # no kid: the set's one RSA key
    two = FixedKeys({"keys": [unnamed[0].jwk(alg="RS512"), unnamed[1].jwk(alg="RS256")]})
    assert SignedValidator(ClaimRules(), two).validate(unnamed[1].sign(GOOD), NOW_MS)  # the one whose alg fits
    first_wins = FixedKeys({"keys": [unnamed[0].jwk(), unnamed[1].jwk()]})
    refused(SignedValidator(ClaimRules(), first_wins), unnamed[1].sign(GOOD), "signature is invalid")
    for_encryption = FixedKeys({"keys": [keys["rsa"].jwk(use="enc")]})
    refused(SignedValidator(ClaimRules(), for_encryption), keys["rsa"].sign(GOOD), "no key of the JWKS fits")
    p384, p256 = attrs.evolve(keys["p384"], kid=None), attrs.evolve(keys["p256"], kid=None)
    curves = FixedKeys({"keys": [p384.jwk(), p256.jwk()]})
    assert SignedValidator(ClaimRules(), curves).validate(p256.sign(GOOD), NOW_MS)  # the key on the ES256 curve


def test_a_jwks_keeps_the_keys_it_can_read(keys):
    good = keys["rsa"].jwk()
    document = {"keys": [good, {"kty": "oct", "k": "c2VjcmV0"}, {"kty": "EC", "crv": "P-256", "x": "AQ", "y": "AQ"},
                         {"kty": "OKP", "crv": "X25519", "x": "AQ"}, {"kty": "RSA", "n": 5, "e": "AQAB"}, "key",
                         {"kid": "x"}, {**good, "kid": 5}]}  # fmt: skip
    assert [k.kid for k in parse_jwks(json.dumps(document))] == ["rsa-1"]
    for bad in ('{"keys": {}}', "[]", "{", '{"Keys": []}'):
        with pytest.raises(ValueError):
            parse_jwks(bad)


def test_on_a_connection_a_refused_token_gets_the_invalid_token_challenge(keys, caplog):
    def message(token: str) -> bytes:
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    good = OAuthBearerServer(validator(keys), clock=lambda: NOW_MS)
    assert good.evaluate(message(keys["ed"].sign(GOOD))) == b"" and good.principal == "alice"
    server = OAuthBearerServer(validator(keys), clock=lambda: NOW_MS)
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        assert server.evaluate(message(keys["rsa2"].sign(GOOD))) == b'{"status":"invalid_token"}'
    assert "OAUTHBEARER token refused: Could not validate the access token: no key of the JWKS fits" in caplog.text
    with pytest.raises(AuthenticationFailed, match='^{"status":"invalid_token"}$'):
        server.evaluate(b"\x01")
    assert not server.complete
