"""Signed OAUTHBEARER tokens (KIP-768) against a broker process, as a Kafka broker with Kafka's validator serves them.

A tiny identity provider runs in the test (``tests/oauth_idp.py``, 127.0.0.1,
a free port): a JWKS endpoint and a client-credentials token endpoint that
issues RS256 tokens. The broker's SASL_PLAINTEXT listener has
``OAuthBearerValidatorCallbackHandler`` with the JWKS endpoint, an expected
audience and issuer. Clients log in the way each really does:

* confluent-kafka (librdkafka) with ``sasl.oauthbearer.method=oidc``, its
  client id and secret, and the token endpoint: produce and consume; a
  token from another provider (a key the JWKS does not have) is refused;
* kafka-python with its ``sasl_oauth_token_provider`` giving tokens we sign
  (ES256): a round trip; an expired token and a token for another audience
  are refused; after the provider rotates to a new key, the first login with
  it is refused and makes the broker refresh the JWKS, and the client's next
  one gets in;
* the Java client (kafka-clients 4.3.0) with ``OAuthBearerLoginCallbackHandler``
  and the token endpoint (allowed with the JVM property
  ``org.apache.kafka.sasl.oauthbearer.allowed.urls``, which Kafka 4 requires);
* confluent-kafka with its ``oauth_cb`` giving tokens we sign (EdDSA, then
  PS256) against a broker whose JWKS is a ``file:`` URL: the file is read
  again when the provider adds a key, without a restart.

A broker whose JWKS endpoint does not answer at startup does not start.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import warnings

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.oauth_idp import IdentityProvider, SigningKey, claims_for, jwks_document

from .harness import ROOT, BrokerProcess, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.errors import KafkaTimeoutError
    from kafka.net.sasl.oauth import AbstractTokenProvider

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
L = "listener.name.sasl_plaintext."
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
PACKAGE = "org.apache.kafka.common.security.oauthbearer"
VALIDATOR = f"{PACKAGE}.OAuthBearerValidatorCallbackHandler"
CLIENTS = {"confluent": ("confluent-secret", "svc-confluent"), "java": ("java-secret", "svc-java")}


@pytest.fixture(scope="module")
def idp():
    with IdentityProvider(SigningKey.rsa("rsa-1"), SigningKey.ec("ec-1"), clients=CLIENTS) as provider:
        provider.token_claims = {"iss": provider.url, "aud": ["kafka", "other"]}
        yield provider


def _signed_listener(jwks_url: str) -> dict:
    return {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            L + "oauthbearer.sasl.jaas.config": f"{MODULE} required;",
            L + "oauthbearer.sasl.server.callback.handler.class": VALIDATOR,
            L + "oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks_url}  # fmt: skip


@pytest.fixture(scope="module")
def signed_broker(tmp_path_factory, idp):
    broker = BrokerProcess(tmp_path_factory.mktemp("oauth-signed") / "data", {
        **_signed_listener(f"{idp.url}/jwks"), "sasl.oauthbearer.expected.audience": "kafka,cli",
        "sasl.oauthbearer.expected.issuer": idp.url})  # fmt: skip
    yield broker.start()
    broker.kill()


def _oidc(broker, client: str, token_url: str) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": client, "sasl.oauthbearer.client.secret": CLIENTS[client][0],
            "sasl.oauthbearer.token.endpoint.url": token_url}  # fmt: skip


def _round_trip(conf: dict, topic: str, values: list[bytes], start: int = 0) -> list[bytes]:
    """Produce ``values`` to partition 0 of ``topic`` and read them back from offset ``start``."""
    producer = Producer(conf)
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"{topic}-g", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, start)])
    got, deadline = [], time.time() + 30
    while len(got) < len(values) and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    return got


def test_confluent_logs_in_with_oidc_tokens_and_round_trips(signed_broker, idp):
    values = [b"v%d" % i for i in range(10)]
    assert _round_trip(_oidc(signed_broker, "confluent", f"{idp.url}/token"), "signed", values) == values
    assert idp.tokens_issued >= 2 and signed_broker.logins("SASL_PLAINTEXT")[0] >= 2


def test_a_token_signed_with_a_key_not_in_the_jwks_is_refused(signed_broker, idp):
    with IdentityProvider(SigningKey.rsa("rogue"), clients=CLIENTS) as rogue:
        rogue.token_claims = idp.token_claims
        errors: list = []
        producer = Producer({**_oidc(signed_broker, "confluent", f"{rogue.url}/token"), "error_cb": errors.append,
                             "message.timeout.ms": 3000})  # fmt: skip
        producer.produce("signed-refused", b"never")
        assert producer.flush(10) == 0  # the record expires undelivered
    assert rogue.tokens_issued >= 1
    refusals = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refusals and all('{"status":"invalid_token"}' in e.str() for e in refusals), errors
    wait_until(lambda: "OAUTHBEARER token refused" in signed_broker.log_text())
    assert "no key of the JWKS fits the JWS header" in signed_broker.log_text()


class _Signed(AbstractTokenProvider):
    def __init__(self, key: SigningKey, **claims) -> None:
        self.key, self.claims = key, claims

    def token(self) -> str:
        return self.key.sign(claims_for(**self.claims))


def _kafka_python(broker, provider: AbstractTokenProvider) -> dict:
    return {"bootstrap_servers": f"127.0.0.1:{broker.ports[1]}", "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider}  # fmt: skip


def test_kafka_python_logs_in_with_an_es256_token_and_bad_claims_are_refused(signed_broker, idp, caplog):
    good = {"subject": "svc-python", "iss": idp.url, "aud": "cli"}
    producer = KafkaProducer(**_kafka_python(signed_broker, _Signed(idp.published[1], **good)))
    assert producer.send("signed-kp", b"hello", partition=0).get(30).offset == 0
    producer.close(5)
    for bad in ({**good, "lifetime_s": -60}, {**good, "aud": "web"}, {**good, "iss": "https://elsewhere"}):
        with pytest.raises(KafkaTimeoutError):  # it cannot bootstrap: every login is refused
            KafkaAdminClient(**_kafka_python(signed_broker, _Signed(idp.published[1], **bad)),
                             bootstrap_timeout_ms=2000)  # fmt: skip
    assert 'SaslAuthenticationFailedError: {"status":"invalid_token"}' in caplog.text
    log = signed_broker.log_text()
    for reason in ("The JWT is no longer valid", "doesn't contain an acceptable identifier", "doesn't match expected"):
        assert reason in log


def test_after_a_key_rotation_the_new_kid_makes_the_broker_refresh_its_jwks(signed_broker, idp):
    fetches, failed = idp.jwks_fetches, signed_broker.logins("SASL_PLAINTEXT")[1]
    rotated = SigningKey.rsa("rsa-2")
    idp.published.append(rotated)
    tokens = _Signed(rotated, subject="svc-rotated", iss=idp.url, aud="kafka")
    producer = KafkaProducer(**_kafka_python(signed_broker, tokens), reconnect_backoff_ms=200)
    assert producer.send("signed-rotated", b"after rotation", partition=0).get(60).offset == 0
    producer.close(5)
    assert idp.jwks_fetches == fetches + 1  # one refresh, asked for by the unknown kid
    assert signed_broker.logins("SASL_PLAINTEXT")[1] >= failed + 1  # the first login with it was refused
    assert "fits a token with kid 'rsa-2': refreshing it" in signed_broker.log_text()


def test_java_client_logs_in_with_the_oidc_login_callback_handler(signed_broker, idp):
    from ..java_jars import compile_java

    # the OIDC login reads the token endpoint's JSON with Jackson, which kafka-clients does not bundle
    classpath = compile_java("ClientCheck.java", extra_jars=("jackson-databind-2.21.2.jar", "jackson-core-2.21.2.jar",
                                                             "jackson-annotations-2.21.jar"))
    token_url = f"{idp.url}/token"
    props = "\n".join([
        "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER",
        f"sasl.login.callback.handler.class={PACKAGE}.OAuthBearerLoginCallbackHandler",
        f"sasl.oauthbearer.token.endpoint.url={token_url}",
        # the client checks the token it gets with ClientJwtValidator; the default picks one that needs jose4j
        f"sasl.oauthbearer.jwt.validator.class={PACKAGE}.ClientJwtValidator",
        f'sasl.jaas.config={MODULE} required clientId="java" clientSecret="{CLIENTS["java"][0]}";',
    ])  # fmt: skip
    issued = idp.tokens_issued
    result = subprocess.run(["java", f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={token_url}",
                             f"-Dclient.props={props}", "-cp", classpath, "ClientCheck",
                             f"127.0.0.1:{signed_broker.ports[1]}", "signed-java", "lz4", "5"],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t")[:3] for line in result.stdout.splitlines() if not line.startswith("#")]
    assert rows == [[str(i), f"key-{i}", f"value-{i}-lz4"] for i in range(5)]
    assert idp.tokens_issued > issued


def test_confluent_oauth_cb_tokens_on_a_listener_whose_jwks_is_a_file_read_again_when_it_changes(tmp_path):
    first, second = SigningKey.ed25519("ed-1"), SigningKey.rsa("rsa-file-2", alg="PS256")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(jwks_document(first)))
    broker = BrokerProcess(tmp_path / "data", _signed_listener(f"file:{jwks}")).start()
    try:
        def conf(key: SigningKey) -> dict:
            def token(_config: str):
                claims = claims_for("svc-cb")
                return key.sign(claims), claims["exp"], "svc-cb"

            return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanisms": "OAUTHBEARER", "oauth_cb": token}  # fmt: skip

        assert _round_trip(conf(first), "signed-file", [b"one", b"two"]) == [b"one", b"two"]
        jwks.write_text(json.dumps(jwks_document(first, second)))  # the provider's new key, without a restart
        os.utime(jwks, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
        assert _round_trip(conf(second), "signed-file", [b"three"], start=2) == [b"three"]
        assert broker.logins("SASL_PLAINTEXT")[1] == 0 and "read the JWKS file" in broker.log_text()
    finally:
        broker.kill()


def test_a_broker_whose_jwks_endpoint_does_not_answer_does_not_start(tmp_path, idp):
    with IdentityProvider(SigningKey.rsa("k")) as down:
        down.jwks_status = 503
        broker = BrokerProcess(tmp_path / "data", {**_signed_listener(f"{down.url}/jwks"),
                                                   "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "300"})
        result = subprocess.run(broker._command(), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    key = L + "oauthbearer.sasl.oauthbearer.jwks.endpoint.url"
    expected = f"minibroker: configuration error: {key}: cannot read the JWKS from {down.url}/jwks at startup"
    assert expected in result.stderr
    assert down.jwks_fetches >= 2 and "serving on" not in result.stdout + result.stderr
