"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 with real clients, next to PLAIN on the same listener.

The broker listens on PLAINTEXT and on SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 enabled; alice's SCRAM credentials come
from ``serve --add-scram`` (as ``kafka-storage format --add-scram`` would
make them), bob's from the Java Admin API (what ``kafka-configs.sh --alter
--add-config 'SCRAM-SHA-256=[...]'`` calls) and from kafka-python's admin.
confluent-kafka, kafka-python, kcat and the Java client log in with each
mechanism and round-trip records; a wrong password gets Kafka's "Authentication
failed during authentication due to invalid credentials with SASL mechanism
..." as each client's authentication error; credentials survive a restart,
and ``--add-scram`` does not undo a password changed through the API.
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
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion
    from kafka.errors import KafkaTimeoutError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret";')  # fmt: skip
ADD_SCRAM = ["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
             "--add-scram", "SCRAM-SHA-512=[name=alice,iterations=8192,password=alice-secret]"]  # fmt: skip
MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


def _broker(data_dir) -> BrokerProcess:
    return BrokerProcess(data_dir, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config":  # Kafka needs one per mechanism
           "org.apache.kafka.common.security.scram.ScramLoginModule required;" for m in MECHANISMS},
    }, ADD_SCRAM)  # fmt: skip


@pytest.fixture
def scram_broker(tmp_path):
    broker = _broker(tmp_path / "data")
    yield broker.start()
    broker.kill()


def _conf(broker, mechanism: str, user: str = "alice", password: str = "alice-secret") -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}  # fmt: skip


def _consume(conf: dict, topic: str, count: int) -> list:
    consumer = Consumer({**conf, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.time() + 30
    while len(got) < count and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.offset(), m.key(), m.value()))
    consumer.close()
    return got


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_logs_in_with_scram_and_round_trips(scram_broker, mechanism):
    conf = _conf(scram_broker, mechanism)
    admin = AdminClient(conf)
    admin.create_topics([NewTopic("s", 1, 1)])["s"].result(30)
    producer = Producer(conf)
    for i in range(20):
        producer.produce("s", key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0
    assert _consume(conf, "s", 20) == [(i, b"k%d" % i, b"v%d" % i) for i in range(20)]
    plain = {**conf, "sasl.mechanisms": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"}
    assert len(_consume(plain, "s", 20)) == 20  # PLAIN on the same listener


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_with_a_wrong_password_gets_kafkas_error(scram_broker, mechanism):
    errors: list = []
    conf = {**_conf(scram_broker, mechanism, password="wrong"), "error_cb": errors.append, "message.timeout.ms": 3000}
    producer = Producer(conf)
    producer.produce("never", b"never")
    assert producer.flush(10) == 0  # the record expires undelivered
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refused and all(GENERIC.format(mechanism) in e.str() for e in refused)
    wait_until(lambda: any(f"SASL/{mechanism} authentication failed: Invalid client credentials" in line
                           for line in scram_broker.output))  # fmt: skip


def _kafka_python(broker, mechanism: str, password: str = "alice-secret", user: str = "alice") -> dict:
    return {"bootstrap_servers": f"127.0.0.1:{broker.ports[1]}", "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}  # fmt: skip


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_logs_in_with_scram(scram_broker, mechanism):
    topic = "kp-" + mechanism.lower()
    producer = KafkaProducer(**_kafka_python(scram_broker, mechanism))
    assert producer.send(topic, b"small").get(30).offset == 0
    assert producer.send(topic, bytes(600_000)).get(30).offset == 1  # past sasl.server.max.receive.size: logged in
    producer.close(5)
    consumer = KafkaConsumer(topic, **_kafka_python(scram_broker, mechanism), auto_offset_reset="earliest",
                             consumer_timeout_ms=10_000)  # fmt: skip
    assert [len(m.value) for m in consumer] == [5, 600_000]
    consumer.close()


def _refused(broker, mechanism: str, password: str, caplog) -> None:
    """kafka-python logs the broker's refusal as SaslAuthenticationFailedError and retries until its bootstrap
    times out."""
    caplog.clear()
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(**_kafka_python(broker, mechanism, password), bootstrap_timeout_ms=3000)
    expected = f"SaslAuthenticationFailedError: {GENERIC.format(mechanism)}"
    assert any(expected in record.getMessage() for record in caplog.records)


def test_kafka_python_with_a_wrong_password_gets_kafkas_error(scram_broker, caplog):
    _refused(scram_broker, "SCRAM-SHA-512", "wrong", caplog)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_logs_in_with_scram(scram_broker, mechanism):
    base = ["kcat", "-b", f"127.0.0.1:{scram_broker.ports[1]}", "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", f"sasl.mechanisms={mechanism}", "-X", "sasl.username=alice"]  # fmt: skip
    topic = "kc-" + mechanism.lower()
    login = base + ["-X", "sasl.password=alice-secret", "-t", topic]
    subprocess.run(login + ["-P"], input="one\ntwo\n", text=True, check=True, timeout=30)
    out = subprocess.run(login + ["-C", "-e", "-f", "%o %s\n"], capture_output=True, text=True, check=True,
                         timeout=30).stdout  # fmt: skip
    assert out.split("\n")[:2] == ["0 one", "1 two"]
    wrong = subprocess.run(base + ["-X", "sasl.password=wrong", "-L"], capture_output=True, text=True, timeout=30)
    assert wrong.returncode != 0 and GENERIC.format(mechanism) in wrong.stderr


def _java(classpath: str, main: str, *args: str, props: str = "") -> subprocess.CompletedProcess:
    result = subprocess.run(["java", f"-Dclient.props={props}", "-cp", classpath, main, *args],
                            capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _java_login(mechanism: str, user: str, password: str) -> str:
    login = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
    return f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\nsasl.jaas.config={login}"


def test_java_admin_makes_credentials_the_way_kafka_configs_does_and_clients_use_them(scram_broker):
    """Admin over SCRAM-SHA-512 as alice (from --add-scram) gives bob credentials; bob logs in with them."""
    from ..java_jars import compile_java

    classpath = compile_java("ScramAdmin.java", with_sources=("ClientCheck.java",))  # bob's login runs ClientCheck
    bootstrap = f"127.0.0.1:{scram_broker.ports[1]}"
    out = _java(classpath, "ScramAdmin", bootstrap,
                "alter bob SCRAM-SHA-256=[iterations=8192,password=bob-secret]",
                "alter bob SCRAM-SHA-512=[password=bob-512]",
                "alter carol SCRAM-SHA-256=[password=c] SCRAM-SHA-512=[password=c]",
                "alter carol SCRAM-SHA-256=[iterations=1000,password=c]",
                "describe bob", "describe carol", "describe",
                "login SCRAM-SHA-256 bob bob-secret", "login SCRAM-SHA-512 bob bob-512",
                "login SCRAM-SHA-256 bob wrong", "delete bob SCRAM-SHA-512", "login SCRAM-SHA-512 bob bob-512",
                "describe bob", props=_java_login("SCRAM-SHA-512", "alice", "alice-secret")).stdout  # fmt: skip
    fail = "error SaslAuthenticationException: " + GENERIC
    assert out.splitlines() == [
        "Completed updating config for user bob.",
        "Completed updating config for user bob.",
        "error DuplicateResourceException: A user credential cannot be altered twice in the same request",
        "error UnacceptableCredentialException: Too few iterations",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096",
        # kafka-configs prints nothing for a user without credentials (RESOURCE_NOT_FOUND is left out)
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, "
        "SCRAM-SHA-512=iterations=8192",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096",
        "login ok", "login ok", fail.format("SCRAM-SHA-256"),
        "Completed updating config for user bob.", fail.format("SCRAM-SHA-512"),
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=8192",
    ]  # fmt: skip
    result = _java(f"{classpath}", "ClientCheck", bootstrap, "java-scram", "zstd", "10",
                   props=_java_login("SCRAM-SHA-256", "bob", "bob-secret"))  # fmt: skip
    rows = [line.split("\t")[:3] for line in result.stdout.splitlines() if not line.startswith("#")]
    assert rows == [[str(i), f"key-{i}", f"value-{i}-zstd"] for i in range(10)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_java_client_round_trips_with_alices_add_scram_credentials(scram_broker, mechanism):
    from ..java_jars import compile_java

    classpath = compile_java("ClientCheck.java")
    topic = "java-" + mechanism.lower()
    result = _java(classpath, "ClientCheck", f"127.0.0.1:{scram_broker.ports[1]}", topic, "lz4", "10",
                   props=_java_login(mechanism, "alice", "alice-secret"))  # fmt: skip
    rows = [line.split("\t") for line in result.stdout.splitlines() if not line.startswith("#")]
    assert rows == [[str(i), f"key-{i}", f"value-{i}-lz4", f"n={i};src=java", str(1_780_000_000_000 + i)]
                    for i in range(10)]  # fmt: skip


def test_credentials_survive_a_restart_and_add_scram_keeps_a_changed_password(tmp_path, caplog):
    broker = _broker(tmp_path / "data").start()
    try:
        admin = KafkaAdminClient(**_kafka_python(broker, "SCRAM-SHA-256"))
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("alice", ScramMechanism.SCRAM_SHA_256, "changed", iterations=4096),
            UserScramCredentialUpsertion("dave", ScramMechanism.SCRAM_SHA_512, "dave-secret", iterations=10000),
        ]) == {"alice": None, "dave": None}  # fmt: skip
        admin.close()
        assert broker.stop() == 0
        broker.restart()  # the same --add-scram arguments again
        conf = _conf(broker, "SCRAM-SHA-256", password="changed")
        assert AdminClient(conf).list_topics(timeout=15).brokers
        dave = _conf(broker, "SCRAM-SHA-512", user="dave", password="dave-secret")
        assert AdminClient(dave).list_topics(timeout=15).brokers
        _refused(broker, "SCRAM-SHA-256", "alice-secret", caplog)  # the password --add-scram gave is not back
        admin = KafkaAdminClient(**_kafka_python(broker, "SCRAM-SHA-512"))  # alice's other credential is as added
        described = admin.describe_user_scram_credentials(["alice", "dave", "erin"])
        admin.close()
        assert {user: (d["error"], [(int(c["mechanism"]), c["iterations"]) for c in d["credential_infos"]])
                for user, d in described.items()} == {
            "alice": (None, [(1, 4096), (2, 8192)]), "dave": (None, [(2, 10000)]),
            "erin": ("Attempt to describe a user credential that does not exist: erin", [])}  # fmt: skip
    finally:
        broker.kill()


def _send(sock, key: int, version: int, **fields) -> bytes:
    sock.sendall(encode_request(RequestHeader(key, version, 1, "raw"), req(key, **fields)))
    size = struct.unpack(">i", sock.recv(4))[0]
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return data


def test_a_big_frame_in_the_middle_of_a_scram_exchange_closes_the_connection(scram_broker):
    with socket.create_connection(("127.0.0.1", scram_broker.ports[1]), timeout=10) as sock:
        _send(sock, 17, 1, mechanism="SCRAM-SHA-256")
        assert b"r=abc" in _send(sock, 36, 2, auth_bytes=b"n,,n=alice,r=abc")
        sock.sendall(struct.pack(">i", 524_289))
        assert sock.recv(4) == b""
