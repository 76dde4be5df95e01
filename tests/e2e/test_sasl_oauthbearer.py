"""SASL/OAUTHBEARER with unsecured JWTs, as a Kafka broker with the default validator serves it.

Each client makes its own unsecured token: librdkafka (confluent-kafka and
kcat) with ``enable.sasl.oauthbearer.unsecure.jwt``, the Java client with
``OAuthBearerLoginModule``'s default unsecured login, kafka-python from a
token provider we give it. They log in and round-trip records; a token
without the scope the listener requires is refused with Kafka's
``insufficient_scope`` challenge, and an expired one with ``invalid_token``.
With short-lived tokens, confluent-kafka and the Java client re-authenticate
on their connections before the session ends (KIP-368) and keep producing.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import warnings

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol import API_BY_KEY, message_class

from .harness import BrokerProcess, raw_call, recv_exactly, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KPTopicPartition
    from kafka.errors import KafkaTimeoutError
    from kafka.net.sasl.oauth import AbstractTokenProvider

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JAAS = f'{MODULE} required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";'


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("oauth") / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS})  # fmt: skip
    yield broker.start()
    broker.kill()


def _librdkafka(broker, scope: str = "kafka") -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal=alice scope={scope}"}  # fmt: skip


def test_confluent_logs_in_with_an_unsecured_token_and_round_trips(oauth_broker):
    conf = _librdkafka(oauth_broker)
    admin = AdminClient(conf)  # kept: a handle collected at once ends its futures with _DESTROY
    admin.create_topics([NewTopic("oauth", 1, 1)])["oauth"].result(30)
    producer = Producer(conf)
    for i in range(10):
        producer.produce("oauth", key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = KafkaConsumer(bootstrap_servers=oauth_broker.bootstrap, consumer_timeout_ms=15000)  # PLAINTEXT
    consumer.assign([KPTopicPartition("oauth", 0)])
    consumer.seek_to_beginning()
    got = [(m.key, m.value) for _, m in zip(range(10), consumer)]
    consumer.close()
    assert got == [(b"k%d" % i, b"v%d" % i) for i in range(10)]
    assert oauth_broker.logins("SASL_PLAINTEXT")[0] >= 2


def test_a_token_without_the_required_scope_gets_kafkas_challenge(oauth_broker):
    errors: list = []
    producer = Producer({**_librdkafka(oauth_broker, scope="other"), "error_cb": errors.append,
                         "message.timeout.ms": 3000})  # fmt: skip
    producer.produce("oauth-refused", b"never")
    assert producer.flush(10) == 0
    assert any('"status":"insufficient_scope"' in str(e) for e in errors), errors


class _Tokens(AbstractTokenProvider):
    def __init__(self, expires_in: int) -> None:
        self.expires_in = expires_in

    def token(self) -> str:
        def part(value: dict) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

        now = int(time.time())
        return f"{part({'alg': 'none'})}.{part({'sub': 'bob', 'iat': now - 60, 'exp': now + self.expires_in, 'scope': 'kafka'})}."


def _kafka_python(broker, expires_in: int) -> dict:
    return {"bootstrap_servers": f"127.0.0.1:{broker.ports[1]}", "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _Tokens(expires_in)}  # fmt: skip


def test_kafka_python_logs_in_with_its_token_and_an_expired_one_is_refused(oauth_broker, caplog):
    producer = KafkaProducer(**_kafka_python(oauth_broker, 3600))
    assert producer.send("oauth-kp", b"hello", partition=0).get(30).offset == 0
    producer.close(5)
    with pytest.raises(KafkaTimeoutError):  # it cannot bootstrap: every login is refused
        KafkaAdminClient(**_kafka_python(oauth_broker, -30), bootstrap_timeout_ms=3000)
    assert 'SaslAuthenticationFailedError: {"status":"invalid_token"}' in caplog.text


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
def test_kcat_logs_in_with_an_unsecured_token(oauth_broker):
    base = ["kcat", "-b", f"127.0.0.1:{oauth_broker.ports[1]}", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanisms=OAUTHBEARER", "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
            "-X", "sasl.oauthbearer.config=principal=carol scope=kafka"]  # fmt: skip
    subprocess.run(base + ["-P", "-t", "oauth-kcat", "-p", "0"], input="one\ntwo\n", text=True, check=True, timeout=30)
    out = subprocess.run(base + ["-C", "-t", "oauth-kcat", "-p", "0", "-o", "beginning", "-e", "-f", "%o %s\n"],
                         capture_output=True, text=True, timeout=30).stdout  # fmt: skip
    assert out.split("\n")[:2] == ["0 one", "1 two"]


def test_java_client_logs_in_with_the_default_unsecured_login(oauth_broker):
    from ..java_jars import compile_java

    # kafka-clients makes unsecured tokens with Jackson, which it does not bundle: take it from the same wheel
    classpath = compile_java("ClientCheck.java", extra_jars=("jackson-databind-2.21.2.jar", "jackson-core-2.21.2.jar",
                                                             "jackson-annotations-2.21.jar"))
    login = f'{MODULE} required unsecuredLoginStringClaim_sub="dave" unsecuredLoginListClaim_scope=",kafka";'
    props = f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config={login}"
    result = subprocess.run(["java", f"-Dclient.props={props}", "-cp", classpath, "ClientCheck",
                             f"127.0.0.1:{oauth_broker.ports[1]}", "oauth-java", "lz4", "5"],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t")[:3] for line in result.stdout.splitlines() if not line.startswith("#")]
    assert rows == [[str(i), f"key-{i}", f"value-{i}-lz4"] for i in range(5)]


def test_confluent_reauthenticates_before_its_short_token_expires(oauth_broker):
    """KIP-368: the session lifetime is the token's; librdkafka renews the token and re-authenticates on the
    same connection, so producing across several expiries goes on without a new login."""
    # 10 s tokens: librdkafka renews at 80 % of a token's life and re-authenticates at about 90 % of the session;
    # with 5 s ones a renewal half a second late on a loaded machine gave a session under 1 s, whose next
    # re-authentication Kafka's once-a-second rule (KafkaChannel.maybeBeginServerReauthentication) refuses
    conf = {**_librdkafka(oauth_broker), "sasl.oauthbearer.config": "principal=alice scope=kafka lifeSeconds=10"}
    admin = AdminClient(conf)  # kept: a handle collected at once ends its futures with _DESTROY
    admin.create_topics([NewTopic("oauth-reauth", 1, 1)])["oauth-reauth"].result(30)
    producer, errors = Producer({**conf, "error_cb": lambda e: errors.append(e)}), []
    before = _reauth_counts(oauth_broker)  # the broker is the module's: count only this test's
    for i in range(44):  # 22 s: past two token lifetimes
        producer.produce("oauth-reauth", b"v%d" % i)
        assert producer.flush(10) == 0
        producer.poll(0.5)  # serves librdkafka's token refresh
    reauths, expired = (a - b for a, b in zip(_reauth_counts(oauth_broker), before))
    # re-authenticated on its connections, none closed as expired; how many connections librdkafka opens
    # (bootstrap, broker, a reconnect on a slow machine) is its own business, so logins are not counted
    assert (reauths >= 2, expired, errors) == (True, 0.0, []), (reauths, expired, errors)


JACKSON = {  # the unsecured token's JSON is read with Jackson; each wheel ships its own
    "4.3": ("jackson-databind-2.21.2.jar", "jackson-core-2.21.2.jar", "jackson-annotations-2.21.jar"),
    "3.9": ("jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar"),
}


@pytest.mark.parametrize("client", ["4.3", "3.9"])
def test_java_client_reauthenticates_before_its_short_token_expires(oauth_broker, client):
    """KIP-368 with the Java client (4.3.0, and 3.9.1: Flink 2.0's): a 5 s unsecured token, refreshed and
    re-sent on the same connection."""
    from ..java_jars import compile_java

    classpath = compile_java("ReauthProducer.java", extra_jars=JACKSON[client], with_sources=("ClientCheck.java",),
                             client=client)  # fmt: skip
    login = (f'{MODULE} required unsecuredLoginStringClaim_sub="erin" unsecuredLoginListClaim_scope=",kafka" '
             'unsecuredLoginLifetimeSeconds="5";')  # fmt: skip
    props = ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nsasl.login.refresh.min.period.seconds=1"
             f"\nsasl.login.refresh.buffer.seconds=1\nsasl.jaas.config={login}")  # fmt: skip
    before = _reauth_counts(oauth_broker)
    result = subprocess.run(["java", f"-Dclient.props={props}", "-cp", classpath, "ReauthProducer",
                             f"127.0.0.1:{oauth_broker.ports[1]}", f"oauth-java-reauth-{client}", "12"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split("#sent ")[1]) >= 20
    reauths, expired = (a - b for a, b in zip(_reauth_counts(oauth_broker), before))
    assert (reauths >= 2, expired) == (True, 0.0), (reauths, expired)
    samples, label = oauth_broker.scrape(), (("listener", "SASL_PLAINTEXT"),)  # Kafka's latency: >= 1 ms when not 0
    gauges = [samples[(f"kafka_server_socket_server_metrics_{name}", label)]
              for name in ("reauthentication_latency_max", "reauthentication_latency_avg",
                           "successful_reauthentication_rate")]  # fmt: skip
    assert gauges[0] >= gauges[1] >= 1 and gauges[2] > 0, gauges


def _reauth_counts(broker) -> tuple[float, float]:
    """(successful re-authentications, expired connections closed) on the SASL listener."""
    samples, label = broker.scrape(), (("listener", "SASL_PLAINTEXT"),)
    return (samples.get(("kafka_server_socket_server_metrics_successful_reauthentication_total", label), 0.0),
            samples.get(("kafka_server_socket_server_metrics_expired_connections_killed_count", label), 0.0))


def test_a_login_answer_too_long_to_write_closes_the_connection_quietly(oauth_broker):
    """A refused login's message quotes the client's authorization id; over 0x7fff bytes it cannot be written
    (Kafka's writer throws too): the connection closes, with no traceback, and the broker serves on."""
    def body(key: int, **fields):
        return message_class(API_BY_KEY[key], True)(**fields)

    claims = {"sub": "alice", "iat": int(time.time()) - 10, "exp": int(time.time()) + 3600, "scope": "kafka"}
    token = ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
                     for part in ({"alg": "none"}, claims)) + "."  # fmt: skip
    authzid = "x" * 40_000
    with socket.create_connection(("127.0.0.1", oauth_broker.ports[1]), timeout=20) as sock:
        assert raw_call(sock, 17, 1, body(17, mechanism="OAUTHBEARER")).error_code == 0
        login = f"n,a={authzid},\x01auth=Bearer {token}\x01\x01".encode()
        with pytest.raises((ConnectionError, EOFError, OSError)):
            raw_call(sock, 36, 2, body(36, auth_bytes=login))
            recv_exactly(sock, 1)
    assert raw_call(oauth_broker.port, 18, 0, body(18)).error_code == 0  # still serving
    # the broker logs before it closes, but the harness reads its output on a thread of its own: wait for it
    wait_until(lambda: "login answer not sent" in "".join(oauth_broker.output), timeout=10)
    assert "Traceback" not in "".join(oauth_broker.output)
