"""A static JAAS file in ``KAFKA_OPTS``, as ``kafka-server-start.sh`` users give it, with real clients.

The broker is started with ``KAFKA_OPTS="-Xmx1G -Djava.security.auth.login.config=<file>"``
and no ``sasl.jaas.config`` key: a SASL_PLAINTEXT listener with PLAIN and
SCRAM-SHA-256 takes its JAAS entries from the file's ``KafkaServer`` section
(a PlainLoginModule with the users, a ScramLoginModule; the ``Client``
section is not read). kafka-python's admin, logged in with PLAIN as the
file's admin, makes bob's SCRAM-SHA-256 credential (AlterUserScramCredentials,
as the SCRAM tests do); confluent-kafka and kafka-python log in with both
mechanisms and round-trip records, and a wrong password gets Kafka's
authentication failure. A missing file, no JAAS configuration and a file
that does not parse stop the start with the messages Kafka's would give.
"""

from __future__ import annotations

import os
import subprocess
import warnings

import pytest
from confluent_kafka import KafkaError, Producer

from .clients import ck_consume
from .harness import ROOT, BrokerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion
    from kafka.errors import KafkaTimeoutError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
JAAS_FILE = """// the broker's JAAS file
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret";

    org.apache.kafka.common.security.scram.ScramLoginModule required;
};

/* ZooKeeper's login: not a broker section */
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="zk" password="zk-secret";
};
"""
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
PROPS = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
         "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}  # fmt: skip


def _broker(tmp_path, kafka_opts: str) -> BrokerProcess:
    return BrokerProcess(tmp_path / "data", PROPS, env={"KAFKA_OPTS": kafka_opts})


@pytest.fixture
def jaas_broker(tmp_path):
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(JAAS_FILE)
    broker = _broker(tmp_path, f"-Xmx1G -Djava.security.auth.login.config={path} -Dzookeeper.sasl.client=false")
    yield broker.start()
    broker.kill()


def _kafka_python(broker, mechanism: str, user: str, password: str) -> dict:
    return {"bootstrap_servers": f"127.0.0.1:{broker.ports[1]}", "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}  # fmt: skip


def _confluent(broker, mechanism: str, user: str, password: str) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}  # fmt: skip


def _add_bob(broker) -> None:
    """bob's SCRAM-SHA-256 credential, made through the Admin API by the file's PLAIN admin."""
    admin = KafkaAdminClient(**_kafka_python(broker, "PLAIN", "admin", "admin-secret"))
    try:
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("bob", ScramMechanism.SCRAM_SHA_256, "bob-secret", iterations=8192),
        ]) == {"bob": None}  # fmt: skip
    finally:
        admin.close()


def test_plain_users_of_the_file_and_scram_users_of_the_admin_api_log_in(jaas_broker):
    _add_bob(jaas_broker)
    producer = KafkaProducer(**_kafka_python(jaas_broker, "PLAIN", "alice", "alice-secret"))
    assert [producer.send("jaas", b"v%d" % i).get(30).offset for i in range(3)] == [0, 1, 2]
    producer.close(5)
    scram = _confluent(jaas_broker, "SCRAM-SHA-256", "bob", "bob-secret")
    conf = {k: v for k, v in scram.items() if k != "bootstrap.servers"}
    assert [m.value() for m in ck_consume(scram["bootstrap.servers"], "jaas", 3, **conf)] == [b"v0", b"v1", b"v2"]
    confluent_producer = Producer(scram)
    confluent_producer.produce("jaas", b"from bob")
    assert confluent_producer.flush(30) == 0
    consumer = KafkaConsumer("jaas", **_kafka_python(jaas_broker, "SCRAM-SHA-256", "bob", "bob-secret"),
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)  # fmt: skip
    assert [m.value for m in consumer] == [b"v0", b"v1", b"v2", b"from bob"]
    consumer.close()
    assert jaas_broker.logins("SASL_PLAINTEXT")[0] >= 4


@pytest.mark.parametrize(("mechanism", "user", "message"), [
    ("PLAIN", "alice", "Authentication failed: Invalid username or password"),
    ("PLAIN", "zk", "Authentication failed: Invalid username or password"),  # the Client section is not read
    ("SCRAM-SHA-256", "bob", GENERIC.format("SCRAM-SHA-256")),
])  # fmt: skip
def test_a_wrong_password_gets_kafkas_authentication_failure(jaas_broker, mechanism, user, message):
    _add_bob(jaas_broker)
    errors: list = []
    wrong = "zk-secret" if user == "zk" else "wrong"
    producer = Producer({**_confluent(jaas_broker, mechanism, user, wrong), "error_cb": errors.append,
                         "message.timeout.ms": 3000})  # fmt: skip
    producer.produce("never", b"never")
    assert producer.flush(10) == 0  # the record expires undelivered
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refused and all(message in e.str() for e in refused)


def test_kafka_python_with_a_wrong_password_gets_kafkas_error(jaas_broker, caplog):
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(**_kafka_python(jaas_broker, "PLAIN", "admin", "wrong"), bootstrap_timeout_ms=3000)
    expected = "SaslAuthenticationFailedError: Authentication failed: Invalid username or password"
    assert any(expected in record.getMessage() for record in caplog.records)
    assert jaas_broker.logins("SASL_PLAINTEXT")[1] >= 1


def _start_fails(tmp_path, kafka_opts: str) -> str:
    broker = _broker(tmp_path, kafka_opts)
    result = subprocess.run(broker._command(), cwd=ROOT, env={**os.environ, "KAFKA_OPTS": kafka_opts},
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1 and "serving on" not in result.stdout + result.stderr
    return result.stderr


def test_a_start_without_a_usable_jaas_file_stops_with_kafkas_message(tmp_path):
    absent = tmp_path / "absent.conf"
    stderr = _start_fails(tmp_path, f"-Djava.security.auth.login.config={absent}")
    assert f"java.security.auth.login.config={absent}: {absent} (No such file or directory)" in stderr
    stderr = _start_fails(tmp_path, "-Xmx1G")
    assert ("Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. "
            "System property 'java.security.auth.login.config' is not set") in stderr  # fmt: skip
    bad = tmp_path / "bad.conf"
    bad.write_text(JAAS_FILE.replace('user_alice="alice-secret";', 'user_alice="alice-secret"\n}'))
    stderr = _start_fails(tmp_path, f"-Djava.security.auth.login.config={bad}")
    assert f"JAAS file {bad}: Configuration Error: Line 8: expected [option key], found [}}]" in stderr
