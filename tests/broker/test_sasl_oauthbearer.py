"""SASL/OAUTHBEARER with unsecured JWTs (``broker/sasl_oauthbearer.py``): messages, tokens, challenges."""

from __future__ import annotations

import base64
import json

import pytest

from broker.config import ConfigError
from broker.sasl_auth import AuthenticationFailed, SaslFailed
from broker.sasl_oauthbearer import OAuthBearerServer, ValidatorOptions, parse_client_message, validate_unsecured

NOW_MS = 1_750_000_000_000


def _b64(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def jwt(claims: dict, header: dict | None = None) -> str:
    return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}."


def message(token: str, authzid: str = "", extensions: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01{extensions}\x01".encode()


GOOD = {"sub": "alice", "iat": NOW_MS // 1000 - 10, "exp": NOW_MS // 1000 + 3600, "scope": ["read", "write"]}


def test_a_good_token_logs_in_as_its_subject():
    server = OAuthBearerServer(ValidatorOptions(), clock=lambda: NOW_MS)
    assert server.evaluate(message(jwt(GOOD), extensions="traceId=abc\x01")) == b""
    assert server.complete and server.principal == "alice"
    assert parse_client_message(message(jwt(GOOD), authzid="alice")) == ("alice", jwt(GOOD))


@pytest.mark.parametrize(("claims", "header", "options"), [
    ({**GOOD, "exp": NOW_MS // 1000 - 1}, None, ValidatorOptions()),  # expired
    ({k: v for k, v in GOOD.items() if k != "exp"}, None, ValidatorOptions()),  # no exp
    ({**GOOD, "sub": ""}, None, ValidatorOptions()),
    ({**GOOD, "iat": NOW_MS // 1000 + 60}, None, ValidatorOptions()),  # issued in the future
    (GOOD, {"alg": "HS256"}, ValidatorOptions()),
    (GOOD, None, ValidatorOptions(principal_claim="client_id")),
])  # fmt: skip
def test_a_refused_token_gets_kafkas_challenge_and_the_acknowledgement_fails_the_login(claims, header, options):
    server = OAuthBearerServer(options, clock=lambda: NOW_MS)
    assert server.evaluate(message(jwt(claims, header))) == b'{"status":"invalid_token"}'
    assert not server.complete
    with pytest.raises(AuthenticationFailed, match='"status":"invalid_token"'):
        server.evaluate(b"\x01")


def test_clock_skew_and_scopes_are_kafkas_options():
    skewed = ValidatorOptions(clock_skew_ms=5000)
    assert validate_unsecured(jwt({**GOOD, "exp": NOW_MS // 1000 - 2}), skewed, NOW_MS)[0] == "alice"
    server = OAuthBearerServer(ValidatorOptions(required_scope=("read", "admin")), clock=lambda: NOW_MS)
    assert server.evaluate(message(jwt(GOOD))) == b'{"status":"insufficient_scope","scope":"read admin"}'
    ok = OAuthBearerServer(ValidatorOptions(required_scope=("write",)), clock=lambda: NOW_MS)
    assert ok.evaluate(message(jwt({**GOOD, "scope": "read write"}))) == b""


@pytest.mark.parametrize("raw", [
    b"y,,\x01auth=Bearer x.y.\x01\x01", b"n,,auth=Bearer x.y.\x01\x01", b"n,,\x01auth=Basic abc\x01\x01",
    b"n,,\x01auth=Bearer x.y.\x01", b"n,,\x01\x01", b"n,b=alice,\x01auth=Bearer x.y.\x01\x01",
])  # fmt: skip
def test_a_malformed_first_message_fails_with_kafkas_fixed_text(raw):
    with pytest.raises(SaslFailed):
        OAuthBearerServer(ValidatorOptions(), clock=lambda: NOW_MS).evaluate(raw)


def test_an_authorization_id_must_be_the_tokens_principal():
    with pytest.raises(AuthenticationFailed, match=r"authorization id \(bob\) that is different"):
        OAuthBearerServer(ValidatorOptions(), clock=lambda: NOW_MS).evaluate(message(jwt(GOOD), authzid="bob"))


def test_validator_options_come_from_the_jaas_entry():
    text = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="read write" '
            'unsecuredValidatorAllowableClockSkewMs="2000" unsecuredValidatorPrincipalClaimName="client_id";')
    assert ValidatorOptions.from_jaas("k", text) == ValidatorOptions("client_id", "scope", ("read", "write"), 2000)
    with pytest.raises(ConfigError, match="ScramLoginModule|OAuthBearerLoginModule"):
        ValidatorOptions.from_jaas("k", "org.apache.kafka.common.security.scram.ScramLoginModule required;")
