"""Where signed tokens' keys come from (``broker/oauth_jwks.py``): a JWKS endpoint and a JWKS file.

The endpoint is a tiny HTTP server on 127.0.0.1 (``tests/oauth_idp.py``). It
(also over https, trusting the system's CAs or ``SSL_CERT_FILE``)
is fetched at load (a failure is a ``ConfigError`` naming the key, after
Kafka's retries), refreshed on time and when a token names an unknown kid
(Kafka's limits: once a minute per kid, 16 kids, 1000 characters), and a
refresh that fails keeps the keys. A key rotation: the first token signed
with the new kid is refused and makes the endpoint refresh; the next is
accepted. A JWKS file is read again when it changes.
"""

from __future__ import annotations

import json
import os
import socket
import ssl

import pytest
import trio
import trio.testing

from broker.config import ConfigError
from broker.oauth_jwks import JwksEndpoint, JwksFile, JwksUnavailable, fetch_jwks
from broker.oauth_jws import parse_jws
from broker.oauth_validator import ClaimRules, SignedValidator
from broker.sasl_oauthbearer import InvalidToken
from tests.oauth_idp import IdentityProvider, SigningKey, claims_for, jwks_document
from tests.tls_pki import make_pki

pytestmark = pytest.mark.timeout(60)
KEY = "sasl.oauthbearer.jwks.endpoint.url"


@pytest.fixture(scope="module")
def keys() -> list[SigningKey]:
    return [SigningKey.rsa("k1"), SigningKey.ec("k2"), SigningKey.rsa("k3")]


@pytest.fixture
def idp(keys):
    with IdentityProvider(keys[0]) as provider:
        yield provider


def endpoint(idp, refresh_ms: int = 3_600_000, backoff=(10, 100), **more) -> JwksEndpoint:
    return JwksEndpoint(KEY, f"{idp.url}/jwks", refresh_ms, *backoff, **more)


def login(validator: SignedValidator, token: str) -> str:
    import time

    return validator.validate(token, time.time() * 1000)[0]


def header_of(token: str):
    return parse_jws(*token.split("."))


async def test_load_fetches_the_keys_and_a_rotated_key_is_found_after_the_refresh_its_kid_asks_for(idp, keys):
    source = endpoint(idp)
    await source.load()
    assert [k.kid for k in source.keys] == ["k1"] and idp.jwks_fetches == 1
    validator = SignedValidator(ClaimRules(), source)
    assert login(validator, keys[0].sign(claims_for("alice"))) == "alice"
    idp.published.append(keys[1])  # the provider rotates: a new key, tokens signed with it
    rotated = keys[1].sign(claims_for("bob"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(source.run)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(InvalidToken):  # refused, and the unknown kid asks for a refresh
            login(validator, rotated)
        with trio.fail_after(10):
            while idp.jwks_fetches < 2:
                await trio.sleep(0.01)
            while len(source.keys) < 2:
                await trio.sleep(0.01)
        assert login(validator, rotated) == "bob"
        nursery.cancel_scope.cancel()
    assert idp.jwks_fetches == 2 and source.missing == {}


async def test_keys_are_refreshed_every_refresh_ms_and_a_failed_refresh_keeps_them(idp, keys):
    source = endpoint(idp, refresh_ms=100, backoff=(10, 60))
    await source.load()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(source.run)
        idp.published[:] = [keys[2]]
        with trio.fail_after(10):
            while [k.kid for k in source.keys] != ["k3"]:
                await trio.sleep(0.01)
        idp.jwks_status, fetched = 503, idp.jwks_fetches
        with trio.fail_after(10):
            while idp.jwks_fetches < fetched + 6:  # each refresh retries within retry.backoff.max.ms
                await trio.sleep(0.01)
        assert [k.kid for k in source.keys] == ["k3"]
        nursery.cancel_scope.cancel()


async def test_an_endpoint_that_cannot_be_read_at_load_stops_the_start_naming_the_key(idp):
    idp.jwks_status = 500
    with pytest.raises(ConfigError, match=rf"^{KEY}: cannot read the JWKS from http://127.0.0.1:\d+/jwks at startup "
                                          r"\(tried for 100 ms\): HTTPError: HTTP Error 500"):  # fmt: skip
        await endpoint(idp).load()
    assert 3 <= idp.jwks_fetches <= 5  # 10, 20, 40 ms waits within 100 ms: Kafka's retry
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once it is closed
    closed = JwksEndpoint(KEY, f"http://127.0.0.1:{port}/jwks", 1000, 0, 0)
    with pytest.raises(ConfigError, match="ConnectionRefusedError|Connection refused"):
        await closed.load()


def test_fetch_wants_a_200_answer_with_a_jwk_set(idp, keys):
    assert [k.kid for k in fetch_jwks(f"{idp.url}/jwks")] == ["k1"]
    with pytest.raises(JwksUnavailable, match="HTTP Error 404"):
        fetch_jwks(f"{idp.url}/nothing")
    for body, reason in (({"keys": {}}, "no 'keys' list"), ([], "no 'keys' list")):
        idp.jwks_body = body
        with pytest.raises(JwksUnavailable, match=reason):
            fetch_jwks(f"{idp.url}/jwks")
    idp.jwks_body, idp.jwks_status = None, 203
    with pytest.raises(JwksUnavailable, match="status 203"):
        fetch_jwks(f"{idp.url}/jwks")


def test_an_https_endpoint_is_checked_against_the_systems_cas_or_ssl_cert_file(tmp_path, keys, monkeypatch):
    pki = make_pki(tmp_path / "pki")
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(pki.broker_pem, pki.broker_key)  # a certificate for 127.0.0.1, signed by the test CA
    with IdentityProvider(keys[1], tls=tls) as idp:
        with pytest.raises(JwksUnavailable, match="CERTIFICATE_VERIFY_FAILED"):
            fetch_jwks(f"{idp.url}/jwks")
        monkeypatch.setenv("SSL_CERT_FILE", pki.ca_pem)
        assert [k.kid for k in fetch_jwks(f"{idp.url}/jwks")] == ["k2"] and idp.url.startswith("https://")


def test_an_unknown_kid_asks_for_a_refresh_within_kafkas_limits(keys):
    now = [0.0]
    source = JwksEndpoint(KEY, "http://127.0.0.1:9/jwks", 1000, 0, 0, clock=lambda: now[0])
    source.wanted = trio.Event()
    assert source.resolve(header_of(keys[0].sign(claims_for("a")))) is None and source.wanted.is_set()
    source.wanted = trio.Event()
    assert source.expedite("k1") is False and not source.wanted.is_set()  # asked a moment ago
    now[0] = 60_000.0
    assert source.expedite("k1") is True and source.wanted.is_set()  # a minute later
    assert source.expedite("x" * 1001) is False and "x" * 1001 not in source.missing
    for n in range(20):
        source.expedite(f"kid-{n}")
    assert len(source.missing) == 16 and "k1" not in source.missing and "kid-19" in source.missing
    unnamed = keys[2].sign(claims_for("a"), kid=None)
    before = dict(source.missing)
    assert source.resolve(header_of(unnamed)) is None and source.missing == before  # no kid: nothing to look for


def test_a_jwks_file_is_read_at_load_and_again_when_it_changes(tmp_path, keys):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks_document(keys[0])))
    source = JwksFile(KEY, path)
    source.load()
    validator = SignedValidator(ClaimRules(), source)
    assert login(validator, keys[0].sign(claims_for("alice"))) == "alice"
    with pytest.raises(InvalidToken):
        login(validator, keys[1].sign(claims_for("bob")))
    path.write_text("{not json")
    os.utime(path, ns=(1, 1))
    with pytest.raises(InvalidToken, match="changed and cannot be read"):
        login(validator, keys[0].sign(claims_for("alice")))
    path.write_text(json.dumps(jwks_document(keys[0], keys[1])))
    os.utime(path, ns=(2, 2))
    assert login(validator, keys[1].sign(claims_for("bob"))) == "bob"
    path.unlink()
    with pytest.raises(InvalidToken, match="changed and cannot be read"):
        login(validator, keys[1].sign(claims_for("bob")))
    with pytest.raises(ConfigError, match=f"^{KEY}: cannot read the JWKS file .*jwks.json: FileNotFoundError"):
        JwksFile(KEY, path).load()
