"""SASL/PLAIN on a SASL_PLAINTEXT listener, with real clients, next to a PLAINTEXT listener.

The broker listens twice: PLAINTEXT (no login, as before) and SASL_PLAINTEXT
with users from the listener's JAAS entry. confluent-kafka, kafka-python and
kcat log in and round-trip records; a wrong password gets Kafka's
"Authentication failed: Invalid username or password" and no data; a
request sent before logging in closes the connection; Metadata on each
listener advertises that listener.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
import warnings

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol import RequestHeader, encode_request

from ..broker._admin_client import req
from .harness import BrokerProcess, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaProducer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')  # fmt: skip


@pytest.fixture
def sasl_broker(tmp_path):
    broker = BrokerProcess(tmp_path / "data", {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                                               "sasl.enabled.mechanisms": "PLAIN",
                                               "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
    yield broker.start()
    broker.kill()


def _sasl_conf(broker, password: str = "alice-secret") -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": "alice", "sasl.password": password}  # fmt: skip


def test_confluent_logs_in_and_round_trips_and_plaintext_still_serves(sasl_broker):
    conf = _sasl_conf(sasl_broker)
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("s", 1, 1)])["s"].result(30)
    producer = Producer(conf)
    for i in range(20):
        producer.produce("s", key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"%d" % i)])
    assert producer.flush(30) == 0
    for bootstrap_conf in (conf, {"bootstrap.servers": sasl_broker.bootstrap}):  # SASL, then PLAINTEXT
        consumer = Consumer({**bootstrap_conf, "group.id": "g", "enable.auto.commit": False})
        consumer.assign([TopicPartition("s", 0, 0)])
        got, deadline = [], time.time() + 30
        while len(got) < 20 and time.time() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.key(), m.value(), m.headers()))
        consumer.close()
        assert got == [(i, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)]) for i in range(20)]
    metadata = admin.list_topics(timeout=10)
    assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", sasl_broker.ports[1])]
    successful, failed = sasl_broker.logins("SASL_PLAINTEXT")  # librdkafka logs in on bootstrap and broker links
    assert successful >= 3 and failed == 0  # at least the admin client, the producer and the SASL consumer


def test_a_wrong_password_gets_kafkas_error_and_no_data_in(sasl_broker):
    errors: list = []
    producer = Producer({**_sasl_conf(sasl_broker, "wrong"), "error_cb": errors.append, "message.timeout.ms": 3000})
    producer.produce("s", b"never")
    assert producer.flush(10) == 0  # the record expires undelivered
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refused and all("Authentication failed: Invalid username or password" in e.str() for e in refused)
    wait_until(lambda: any("SASL/PLAIN authentication failed" in line for line in sasl_broker.output))
    successful, failed = sasl_broker.logins("SASL_PLAINTEXT")
    assert successful == 0 and failed >= 1


def test_kafka_python_logs_in(sasl_broker):
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{sasl_broker.ports[1]}", security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="admin", sasl_plain_password="admin-secret")
    assert producer.send("kp", b"from kafka-python").get(30).offset == 0
    assert producer.send("kp", bytes(600_000)).get(30).offset == 1  # past sasl.server.max.receive.size: logged in
    producer.close(5)


def test_logins_of_clients_that_cannot_reauthenticate_are_counted_apart(sasl_broker):
    """successful-authentication-no-reauth-total: kafka-python as a 1.0 client (SaslAuthenticate v0) and as a
    0.10.1 one (SaslHandshake v0) cannot re-authenticate, so each of their logins counts; as itself
    (SaslAuthenticate v2) none does."""
    label = (("listener", "SASL_PLAINTEXT"),)

    def counts() -> tuple[float, float]:
        samples = sasl_broker.scrape()
        return tuple(samples.get((f"kafka_server_socket_server_metrics_{name}_total", label), 0.0)
                     for name in ("successful_authentication", "successful_authentication_no_reauth"))  # fmt: skip

    for api_version, counted in ((None, False), ((1, 0, 0), True), ((0, 10, 1), True)):
        before = counts()
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{sasl_broker.ports[1]}",
                                 security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                 sasl_plain_username="admin", sasl_plain_password="admin-secret",
                                 **({"api_version": api_version} if api_version else {}))  # fmt: skip
        producer.send("nr", b"x").get(30)
        producer.close(5)
        logins, no_reauth = (after - was for after, was in zip(counts(), before))
        assert logins >= 1 and no_reauth == (logins if counted else 0), api_version
    samples = sasl_broker.scrape()
    assert samples[("kafka_server_socket_server_metrics_successful_authentication_rate", label)] > 0


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
def test_kcat_logs_in(sasl_broker):
    base = ["kcat", "-b", f"127.0.0.1:{sasl_broker.ports[1]}", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"]
    subprocess.run(base + ["-t", "kc", "-P"], input="one\ntwo\n", text=True, check=True, timeout=30)
    out = subprocess.run(base + ["-t", "kc", "-C", "-e", "-f", "%o %s\n"], capture_output=True, text=True,
                         check=True, timeout=30).stdout  # fmt: skip
    assert out.split("\n")[:2] == ["0 one", "1 two"]


def test_a_request_before_login_closes_the_connection(sasl_broker):
    with socket.create_connection(("127.0.0.1", sasl_broker.ports[1]), timeout=10) as sock:
        sock.sendall(encode_request(RequestHeader(3, 12, 1, "raw"), req(3, topics=None)))
        assert sock.recv(4) == b""  # closed without an answer
    wait_until(lambda: any("Unexpected Kafka request of type Metadata during SASL handshake." in line
                           for line in sasl_broker.output))  # fmt: skip
    with socket.create_connection(("127.0.0.1", sasl_broker.ports[1]), timeout=10) as sock:  # v0: the bare token
        sock.sendall(encode_request(RequestHeader(17, 0, 2, "raw"), req(17, mechanism="PLAIN")))
        size = struct.unpack(">i", sock.recv(4))[0]
        assert len(sock.recv(size)) == size
        token = b"\x00alice\x00alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert sock.recv(4) == b"\x00\x00\x00\x00"  # logged in: an empty token back


def test_frames_before_login_are_bounded_by_sasl_server_max_receive_size(sasl_broker):
    """Kafka's guard against an unauthenticated client making the broker allocate large buffers."""
    with socket.create_connection(("127.0.0.1", sasl_broker.ports[1]), timeout=10) as sock:
        sock.sendall(struct.pack(">i", 524_289))
        assert sock.recv(4) == b""
    with socket.create_connection(("127.0.0.1", sasl_broker.ports[0]), timeout=10) as sock:  # PLAINTEXT
        sock.sendall(struct.pack(">i", 524_289) + bytes(100))
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):  # still waiting for the rest of the frame
            sock.recv(4)


def test_java_client_logs_in(sasl_broker):
    """The Java client (kafka-clients 4.3.0) with sasl.jaas.config, through ClientCheck's whole round trip."""
    from ..java_jars import compile_java

    classpath = compile_java("ClientCheck.java")
    login = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";'
    props = f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={login}"
    result = subprocess.run(["java", f"-Dclient.props={props}", "-cp", classpath, "ClientCheck",
                             f"127.0.0.1:{sasl_broker.ports[1]}", "java-sasl", "lz4", "10"],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines() if not line.startswith("#")]
    assert rows == [[str(i), f"key-{i}", f"value-{i}-lz4", f"n={i};src=java", str(1_780_000_000_000 + i)]
                    for i in range(10)]  # fmt: skip
