"""``serve --kafka-env`` with the environment of the apache/kafka image's single-node SASL_PLAINTEXT example.

The broker process starts from ``config/docker.properties`` with that
example's ``environment:`` (docker/examples/docker-compose-files/single-node/sasl_plaintext):
two SASL_PLAINTEXT listeners and a CONTROLLER one, ``KAFKA_SASL_ENABLED_MECHANISMS=PLAIN``,
``KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL=PLAIN``, the share coordinator's
replication settings, and ``KAFKA_OPTS`` naming the example's
``broker_jaas.conf`` (its ``KafkaServer`` section, PLAIN users admin and
alice) in the mounted secrets directory; only the ports (free ones, on
127.0.0.1) and the paths are the test's. confluent-kafka and kafka-python log
in as the file's users and round-trip records; a wrong password gets
Kafka's "Invalid username or password". Without ``KAFKA_OPTS`` the start
stops as the image's ``configure`` script stops it; with ``KAFKA_OPTS`` but
no JAAS file, with the script's warning, then Kafka's message.
"""

from __future__ import annotations

import signal
import warnings

import pytest
from confluent_kafka import KafkaError, Producer

from tests.broker.test_jaas import IMAGE_EXAMPLE

from .clients import ck_consume
from .harness import free_port
from .test_kafka_env import _serve, _serving

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaProducer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def _environment(tmp_path, host_port: int, internal_port: int) -> dict[str, str]:
    secrets = tmp_path / "secrets"  # the example mounts docker/examples/fixtures/sasl at /etc/kafka/secrets
    secrets.mkdir(exist_ok=True)
    (secrets / "broker_jaas.conf").write_text(IMAGE_EXAMPLE)
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                                "SASL_PLAINTEXT_HOST:SASL_PLAINTEXT",
        "KAFKA_ADVERTISED_LISTENERS": f"SASL_PLAINTEXT_HOST://127.0.0.1:{host_port},"
                                      f"SASL_PLAINTEXT://broker:{internal_port}",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
        "KAFKA_LISTENERS": f"CONTROLLER://:29093,SASL_PLAINTEXT_HOST://127.0.0.1:{host_port},"
                           f"SASL_PLAINTEXT://127.0.0.1:{internal_port}",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "SASL_PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
        "KAFKA_LOG_DIRS": str(tmp_path / "kraft-combined-logs"),
        "KAFKA_SASL_ENABLED_MECHANISMS": "PLAIN",
        "KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "PLAIN",
        "KAFKA_OPTS": f"-Djava.security.auth.login.config={secrets}/broker_jaas.conf",
        "KAFKA_PROMETHEUS_HOST": "127.0.0.1",
        "KAFKA_PROMETHEUS_PORT": "0",
    }  # fmt: skip


def _plain(port: int, user: str, password: str) -> dict[str, str]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": password}  # fmt: skip


def test_the_images_sasl_plaintext_example_serves_the_jaas_files_users(tmp_path):
    host_port, internal_port = free_port(), free_port()
    proc = _serve(_environment(tmp_path, host_port, internal_port))
    try:
        assert _serving(proc) == [host_port, internal_port]  # the CONTROLLER listener is not bound
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{host_port}", security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="PLAIN", sasl_plain_username="alice",
                                 sasl_plain_password="alice-secret")  # fmt: skip
        assert [producer.send("sasl-example", b"m%d" % i).get(30).offset for i in range(3)] == [0, 1, 2]
        producer.close(5)
        login = {k: v for k, v in _plain(host_port, "admin", "admin-secret").items() if k != "bootstrap.servers"}
        got = ck_consume(f"127.0.0.1:{host_port}", "sasl-example", 3, **login)
        assert [m.value() for m in got] == [b"m0", b"m1", b"m2"]
        errors: list = []
        refused = Producer({**_plain(internal_port, "alice", "admin-secret"), "error_cb": errors.append,
                            "message.timeout.ms": 3000})  # fmt: skip
        refused.produce("never", b"never")
        assert refused.flush(10) == 0
        failed = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        assert failed and all("Authentication failed: Invalid username or password" in e.str() for e in failed)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_without_kafka_opts_the_start_stops_as_the_image_script_does(tmp_path):
    env = _environment(tmp_path, free_port(), free_port())
    del env["KAFKA_OPTS"]
    proc = _serve(env)
    output, _ = proc.communicate(timeout=30)
    assert (proc.returncode, output.strip().splitlines()[-1]) == (1, "KAFKA_OPTS environment variable not set")
    proc = _serve({**env, "KAFKA_OPTS": "-Xmx1G"})
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "KAFKA_OPTS should contain 'java.security.auth.login.config' property." in output
    assert ("Could not find a 'KafkaServer' or 'sasl_plaintext_host.KafkaServer' entry in the JAAS configuration. "
            "System property 'java.security.auth.login.config' is not set") in output  # fmt: skip
