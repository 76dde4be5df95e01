"""``serve --kafka-env`` with the SSL environment of the apache/kafka image's single-node SSL example.

The broker process starts from ``config/docker.properties`` with that
example's variables: two SSL listeners (``SSL``, ``SSL-INTERNAL``), the key
and trust stores named by ``KAFKA_SSL_KEYSTORE_FILENAME`` /
``KAFKA_SSL_TRUSTSTORE_FILENAME`` in a secrets directory (PKCS12 files named
``.jks``, as the example's are), their passwords in the credentials files the
``*_CREDENTIALS`` variables name (with the trailing newline those files have),
``KAFKA_SSL_CLIENT_AUTH=required`` and an empty endpoint identification
algorithm; ``--secrets-dir`` stands for the mount at ``/etc/kafka/secrets``.
confluent-kafka, with a client certificate signed by the CA of the
truststore, produces and reads back over SSL; a TLS client without a
certificate is refused. ``broker.connection=DEBUG`` in ``KAFKA_LOG4J_LOGGERS``
shows the handshake and the client's principal. A helper variable or file
that is missing stops the start with the image script's message and exit
status 1.
"""

from __future__ import annotations

import shutil
import signal
import socket
import ssl

import pytest
from confluent_kafka import Producer

from tests.image_env import SSL_EXAMPLE
from tests.tls_pki import CLIENT_PRINCIPAL, STORE_PASSWORD, make_pki

from .clients import ck_consume
from .harness import free_port
from .test_kafka_env import CLUSTER_ID, _serve, _serving

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
CREDENTIALS = ("kafka_keystore_creds", "kafka_ssl_key_creds", "kafka_truststore_creds")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _secrets(tmp_path, pki) -> str:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    shutil.copy(pki.broker_p12, secrets / "kafka01.keystore.jks")
    shutil.copy(pki.truststore_p12, secrets / "kafka.truststore.jks")
    for name in CREDENTIALS:
        (secrets / name).write_text(STORE_PASSWORD + "\n")
    return str(secrets)


def _environment(tmp_path, ssl_port: int, internal_port: int) -> dict[str, str]:
    return {
        **SSL_EXAMPLE,
        "KAFKA_NODE_ID": "1",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "SSL:SSL,CONTROLLER:PLAINTEXT,SSL-INTERNAL:SSL",
        "KAFKA_ADVERTISED_LISTENERS": f"SSL://127.0.0.1:{ssl_port},SSL-INTERNAL://broker:{internal_port}",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
        "KAFKA_LISTENERS": f"SSL://127.0.0.1:{ssl_port},CONTROLLER://:29093,SSL-INTERNAL://127.0.0.1:{internal_port}",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "SSL-INTERNAL",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LOG_DIRS": str(tmp_path / "kraft-combined-logs"),
        "CLUSTER_ID": CLUSTER_ID,
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_LOG4J_LOGGERS": "broker.connection=DEBUG",
        "KAFKA_PROMETHEUS_HOST": "127.0.0.1",
        "KAFKA_PROMETHEUS_PORT": "0",
    }  # fmt: skip


def _client(port: int, pki) -> dict[str, str]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL", "ssl.ca.location": pki.ca_pem,
            "ssl.certificate.location": pki.client_pem, "ssl.key.location": pki.client_key}  # fmt: skip


def _refused_without_certificate(port: int, pki) -> None:
    context = ssl.create_default_context(cafile=pki.ca_pem)
    with pytest.raises((ssl.SSLError, ConnectionError)):  # TLS 1.3: the refusal arrives with the first read
        with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                                 server_hostname="localhost") as tls:  # fmt: skip
            tls.sendall(b"\0\0\0\0")
            if not tls.recv(1):
                raise ConnectionError("closed")


def test_the_helper_variables_configure_an_ssl_listener_for_real_clients(tmp_path, pki):
    ssl_port, internal_port = free_port(), free_port()
    proc = _serve(_environment(tmp_path, ssl_port, internal_port), ("--secrets-dir", _secrets(tmp_path, pki)))
    try:
        assert _serving(proc) == [ssl_port, internal_port]
        producer = Producer({**_client(ssl_port, pki), "linger.ms": 5})
        for i in range(3):
            producer.produce("secure", key=b"k%d" % i, value=b"value-%d" % i)
        assert producer.flush(30) == 0
        got = ck_consume(f"127.0.0.1:{ssl_port}", "secure", 3, **{k: v for k, v in _client(ssl_port, pki).items()
                                                                  if k != "bootstrap.servers"})  # fmt: skip
        assert [(m.key(), m.value()) for m in got] == [(b"k%d" % i, b"value-%d" % i) for i in range(3)]
        _refused_without_certificate(ssl_port, pki)
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "TLS handshake with 127.0.0.1" in output and f"done: TLSv1.3, {CLIENT_PRINCIPAL}" in output


@pytest.mark.parametrize(("change", "message"), [
    ({"KAFKA_SSL_KEYSTORE_FILENAME": ""}, "KAFKA_SSL_KEYSTORE_FILENAME environment variable not set"),
    ({"KAFKA_SSL_TRUSTSTORE_CREDENTIALS": "absent"}, "{secrets}/absent file does not exist"),
])  # fmt: skip
def test_a_missing_helper_stops_the_start_as_the_image_does(tmp_path, pki, change, message):
    secrets = _secrets(tmp_path, pki)
    proc = _serve({**_environment(tmp_path, free_port(), free_port()), **change}, ("--secrets-dir", secrets))
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert output.splitlines()[-1] == message.format(secrets=secrets)
