"""A listener's OAUTHBEARER validator from Kafka's keys (``broker/oauth_config.py``), and a broker serving it.

Unsecured JWTs stay the default; Kafka's ``OAuthBearerValidatorCallbackHandler``
(or its 3.x ``.secured.`` alias) as the listener's server callback handler
makes a signed-token validator with the ``sasl.oauthbearer.*`` keys, looked
up per listener first. Each bad setting stops the start naming its key. A
broker whose JWKS endpoint cannot be read does not start; one whose endpoint
answers logs clients in over a real socket with signed tokens.
"""

from __future__ import annotations

import json
import logging

import pytest
import trio

from broker.config import BROKER_KEYS, BrokerConfig, ConfigError
from broker.dynamic_config import Refused, check_keys
from broker.handlers._broker_configs import _type_of
from broker.listeners import served_listeners
from broker.oauth_jwks import JwksEndpoint, JwksFile
from broker.oauth_validator import ClaimRules, SignedValidator
from broker.sasl_oauthbearer import ValidatorOptions
from broker.server import serve_broker
from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request
from tests.oauth_idp import IdentityProvider, SigningKey, claims_for, jwks_document

from ._admin_client import req

L = "listener.name.sasl_plaintext."
HANDLER = L + "oauthbearer.sasl.server.callback.handler.class"
HANDLED = "ValidatorCallbackHandler"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearer" + HANDLED
ALIAS = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearer" + HANDLED
URL = "sasl.oauthbearer.jwks.endpoint.url"
BASE = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "prometheus.port": "0",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}  # fmt: skip


def oauth(tmp_path, **props):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), **BASE, **props})
    return served_listeners(config)[1].sasl.oauthbearer


@pytest.fixture
def jwks_file(tmp_path):
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks_document(SigningKey.ec("k1"))))
    return path


def test_unsecured_jwts_stay_the_default(tmp_path, caplog):
    assert oauth(tmp_path) == ValidatorOptions()
    unsecured = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearer" + "Unsecured" + HANDLED
    assert oauth(tmp_path, **{HANDLER: unsecured}) == ValidatorOptions()
    bare = {"sasl.server.callback.handler.class": VALIDATOR, URL: "file:/x"}
    with caplog.at_level(logging.WARNING, logger="minibroker"):  # Kafka reads the key only with both prefixes
        assert oauth(tmp_path, **bare) == ValidatorOptions()
    assert f"tokens on listener SASL_PLAINTEXT are unsecured JWTs (set {HANDLER})" in caplog.text


@pytest.mark.parametrize("handler", [VALIDATOR, ALIAS])
def test_kafkas_validator_makes_a_signed_token_validator_with_kafkas_defaults(tmp_path, jwks_file, handler):
    validator = oauth(tmp_path, **{HANDLER: f" {handler} ", URL: f"file:{jwks_file}"})
    assert isinstance(validator, SignedValidator)
    assert validator.rules == ClaimRules("sub", "scope", 30, frozenset(), None)
    assert isinstance(validator.jwks, JwksFile) and [k.kid for k in validator.jwks.keys] == ["k1"]


def test_each_key_is_looked_up_per_listener_and_mechanism_first(tmp_path):
    validator = oauth(tmp_path, **{
        HANDLER: VALIDATOR, URL: "https://broker-wide/jwks", L + URL: "http://listener/jwks",
        L + "oauthbearer." + URL: "https://idp.example:8443/keys",
        "sasl.oauthbearer.expected.audience": "a", L + "sasl.oauthbearer.expected.audience": " kafka , cli ,",
        "sasl.oauthbearer.expected.issuer": " https://idp ", "sasl.oauthbearer.sub.claim.name": "client_id",
        L + "oauthbearer.sasl.oauthbearer.scope.claim.name": "scp", L + "sasl.oauthbearer.clock.skew.seconds": "5",
        L + "oauthbearer.sasl.oauthbearer.jwks.endpoint.refresh.ms": "60000",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "50",
        L + "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "500",
    })  # fmt: skip
    assert validator.rules == ClaimRules("client_id", "scp", 5, frozenset({"kafka", "cli"}), "https://idp")
    jwks = validator.jwks
    assert isinstance(jwks, JwksEndpoint) and jwks.keys == ()  # fetched when the server starts
    assert (jwks.key, jwks.url, jwks.refresh_ms, jwks.backoff_ms, jwks.backoff_max_ms) == (
        L + "oauthbearer." + URL, "https://idp.example:8443/keys", 60000, 50, 500)


@pytest.mark.parametrize(("props", "message"), [
    ({HANDLER: "com.example.MyHandler"}, f"^{HANDLER}: com.example.MyHandler cannot be used"),
    ({}, f"^{URL}: required by listener SASL_PLAINTEXT"),
    ({URL: "ftp://idp/jwks"}, rf'^{URL}: .* contains an invalid protocol \(ftp\); only "http", "https", and "file"'),
    ({L + URL: "/etc/jwks.json"}, f"^{L}{URL}: .* that is malformed: no protocol"),
    ({URL: "https:///jwks"}, f"^{URL}: .* that is malformed: no host"),
    ({URL: "file:/nonexistent/jwks.json"}, r"contains a file \(/nonexistent/jwks.json\) that doesn't exist"),
    ({URL: "file:/tmp"}, r"references a directory \(/tmp\), not a file"),
    ({URL: "https://idp/jwks", "sasl.oauthbearer.jwks.endpoint.refresh.ms": "0"}, "refresh interval must be positive"),
    ({URL: "https://idp/jwks", L + "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "-1"},
     f"^{L}sasl.oauthbearer.jwks.endpoint.retry.backoff.ms: must be non-negative"),
    ({URL: "https://idp/jwks", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10"},
     "^sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms: 10 is less than .*retry.backoff.ms \\(100\\)"),
    ({URL: "https://idp/jwks", L + "oauthbearer.sasl.oauthbearer.clock.skew.seconds": "soon"},
     f"^Invalid value soon for configuration {L}oauthbearer.sasl.oauthbearer.clock.skew.seconds: Not a number of "
     "type INT$"),
    ({URL: "https://idp/jwks", "sasl.oauthbearer.sub.claim.name": " "}, "sub.claim.name value must not contain only"),
    ({URL: "https://idp/jwks", "sasl.oauthbearer.jwks.endpoint.refresh.ms": "hourly"},
     "^Invalid value hourly for configuration sasl.oauthbearer.jwks.endpoint.refresh.ms: Not a number of type "
     "LONG$"),
])  # fmt: skip
def test_bad_settings_stop_the_start_naming_their_key(tmp_path, props, message):
    with pytest.raises(ConfigError, match=message):
        oauth(tmp_path, **{HANDLER: VALIDATOR, **props})


def test_a_bad_jwks_file_stops_the_start(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"keys": 5}')
    with pytest.raises(ConfigError, match=f"^{URL}: cannot read the JWKS file .*bad.json: JoseError: .*no 'keys' list"):
        oauth(tmp_path, **{HANDLER: VALIDATOR, URL: f"file://{bad}"})


def test_the_keys_are_kafkas_static_keys(tmp_path):
    with pytest.raises(ConfigError, match=f"^{L}sasl.server.callback.handler.class: unknown configuration key"):
        oauth(tmp_path, **{L + "sasl.server.callback.handler.class": VALIDATOR})  # Kafka reads it with the mechanism
    with pytest.raises(Refused, match=r"^Cannot update these configs dynamically: Set\(sasl.oauthbearer.jwks"):
        check_keys({URL: "https://other/jwks"}, per_broker=True)
    kinds = {k.name: _type_of(k) for k in BROKER_KEYS if "oauthbearer" in k.name or "callback" in k.name}
    named = (URL, "sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.expected.audience",
             "sasl.oauthbearer.clock.skew.seconds", "sasl.server.callback.handler.class")
    assert [kinds[name] for name in named] == [2, 5, 7, 3, 8]  # STRING, LONG, LIST, INT, CLASS: Kafka's types
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path)})
    defaults = (config.sasl_oauthbearer_jwks_endpoint_refresh_ms, config.sasl_oauthbearer_clock_skew_seconds,
                config.sasl_oauthbearer_sub_claim_name, config.sasl_oauthbearer_jwks_endpoint_url)
    assert defaults == (3_600_000, 30, "sub", "")


async def test_a_broker_whose_jwks_endpoint_cannot_be_read_does_not_start(tmp_path):
    with IdentityProvider(SigningKey.rsa("k1")) as idp:
        idp.jwks_status = 503
        config = BrokerConfig.from_props({
            "log.dirs": str(tmp_path / "data"), **BASE, HANDLER: VALIDATOR, URL: f"{idp.url}/jwks",
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "10",
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "50"})  # fmt: skip
        with pytest.raises(ConfigError, match=f"^{URL}: cannot read the JWKS from .* at startup"), trio.fail_after(10):
            await serve_broker(config)
    assert not (tmp_path / "data").exists()  # stopped before the log dirs were opened


async def _exchange(stream, key: int, version: int, **fields):
    await stream.send_all(encode_request(RequestHeader(key, version, 7, "t"), req(key, **fields)))
    size = int.from_bytes(await stream.receive_some(4), "big")
    data = b""
    while len(data) < size:
        data += await stream.receive_some(size - len(data))
    return decode_response(data, API_BY_KEY[key], version)[1]


async def test_a_broker_logs_clients_in_with_signed_tokens_from_its_jwks_endpoint(tmp_path):
    key, other = SigningKey.rsa("k1"), SigningKey.rsa("k2")
    with IdentityProvider(key) as idp:
        config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), **BASE, HANDLER: VALIDATOR,
                                          L + URL: f"{idp.url}/jwks"})  # fmt: skip
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve_broker, config)
            port = broker.bound[1][1]  # the SASL_PLAINTEXT listener
            for token, error in ((key.sign(claims_for("alice")), 0), (other.sign(claims_for("mallory")), 58)):
                with trio.fail_after(10):
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    assert (await _exchange(stream, 17, 1, mechanism="OAUTHBEARER")).error_code == 0
                    first = f"n,,\x01auth=Bearer {token}\x01\x01".encode()
                    answer = await _exchange(stream, 36, 2, auth_bytes=first)
                    if error:  # the challenge, then the acknowledgement fails the login (SASL_AUTHENTICATION_FAILED)
                        assert (answer.error_code, answer.auth_bytes) == (0, b'{"status":"invalid_token"}')
                        answer = await _exchange(stream, 36, 2, auth_bytes=b"\x01")
                        assert answer.error_message == '{"status":"invalid_token"}'
                    await stream.aclose()
                    assert answer.error_code == error
            with trio.fail_after(10):
                while idp.jwks_fetches < 2:  # at startup, then for the unknown kid k2
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
