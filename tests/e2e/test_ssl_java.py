"""The Kafka Java client (kafka-clients 4.3.0) against SSL and SASL_SSL listeners.

A throwaway CA (``tests/tls_pki.py``) signs the broker's certificate (PKCS12
keystore) and a client certificate. The broker listens on PLAINTEXT, SSL
(``ssl.client.auth=required``: mutual TLS) and SASL_SSL (SCRAM-SHA-256 from
``--add-scram``, with ``listener.name.sasl_ssl.ssl.client.auth=none``
overriding the broker-wide setting). ``tests/e2e/java/SslCheck.java``, with a
properties file this test writes (``security.protocol``, a PEM truststore
holding the CA, the client's PKCS12 keystore, the SCRAM login), checks that:

* with its certificate, over SSL, the client's describeCluster sees the SSL
  port advertised, and records (keys, values, headers, timestamps, one value
  of 600,000 bytes) produced with idempotence round-trip exactly through
  ``assign`` + ``seekToBeginning``; the broker counts successful TLS logins
  on the SSL listener and no failed one;
* without a certificate the handshake is refused: Admin and producer fail
  with ``SslAuthenticationException`` and the failed-login counter goes up;
* over SASL_SSL without a certificate, alice logs in with SCRAM-SHA-256 and
  round-trips the same records.

Skipped (by ``compile_java``) when no JDK is installed.
"""

from __future__ import annotations

import subprocess
import zlib
from pathlib import Path

import pytest

from ..tls_pki import STORE_PASSWORD, Pki, make_pki
from .harness import BrokerProcess, wait_until
from ..java_jars import compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
COUNT = 12
BASE_TS = 1_780_000_000_000
BIG = 600_000
SCRAM_LOGIN = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
               'password="alice-secret";')  # fmt: skip


@pytest.fixture(scope="module")
def classpath() -> str:
    return compile_java("SslCheck.java", with_sources=("ClientCheck.java",))


@pytest.fixture
def pki(tmp_path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def tls_broker(tmp_path, pki):
    broker = BrokerProcess(tmp_path / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.broker_p12,
        "ssl.keystore.password": STORE_PASSWORD,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca_pem,
        "ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",  # as Kafka needs one
    }, ["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]"])  # fmt: skip
    yield broker.start()
    broker.kill()


def _client_props(tmp_path: Path, pki: Pki, *, keystore: bool = False, scram: bool = False) -> str:
    """A properties file of the client's security settings; its path."""
    props = {"security.protocol": "SASL_SSL" if scram else "SSL",
             "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca_pem}  # fmt: skip
    if keystore:
        props |= {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.client_p12,
                  "ssl.keystore.password": STORE_PASSWORD}  # fmt: skip
    if scram:
        props |= {"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": SCRAM_LOGIN}
    path = tmp_path / f"client-{len(list(tmp_path.glob('client-*')))}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return str(path)


def _java(classpath: str, props: str, port: int, topic: str, mode: str, broker: BrokerProcess) -> list[list[str]]:
    """Run SslCheck; its output lines split at tabs."""
    result = subprocess.run(["java", "-cp", classpath, "SslCheck", props, f"127.0.0.1:{port}", topic, mode,
                             str(COUNT)], capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:] + "\n--- broker ---\n" + broker.log_text()[-3000:]
    return [line.split("\t") for line in result.stdout.splitlines()]


def _expected_records() -> list[list[str]]:
    big = bytes(i % 251 for i in range(BIG))
    values = [f"value-{i}" for i in range(COUNT - 1)] + [f"{BIG}:{zlib.crc32(big):08x}"]
    return [[str(i), f"key-{i}", values[i], f"n={i};tls=yes", str(BASE_TS + i)] for i in range(COUNT)]


def _round_trip(classpath: str, props: str, port: int, topic: str, broker: BrokerProcess) -> None:
    rows = _java(classpath, props, port, topic, "round-trip", broker)
    assert [row for row in rows if row[0] == "#node"] == [["#node", "1", "127.0.0.1", str(port)]]
    assert [row for row in rows if not row[0].startswith("#")] == _expected_records()


def test_mutual_tls_round_trips_and_advertises_the_ssl_port(tls_broker, pki, classpath, tmp_path):
    props = _client_props(tmp_path, pki, keystore=True)
    _round_trip(classpath, props, tls_broker.ports[1], "ssl-java", tls_broker)
    successful, failed = tls_broker.logins("SSL")
    assert successful >= 3 and failed == 0  # at least the admin client, the producer and the consumer
    assert tls_broker.logins("SASL_SSL") == (0, 0)


def test_without_a_client_certificate_the_handshake_is_refused(tls_broker, pki, classpath, tmp_path):
    props = _client_props(tmp_path, pki)
    rows = _java(classpath, props, tls_broker.ports[1], "never", "refused", tls_broker)
    assert not [row for row in rows if row[0] == "#connected"]
    successful, failed = wait_until(lambda: (logins := tls_broker.logins("SSL"))[1] >= 2 and logins)
    assert successful == 0 and failed >= 2  # at least one refused handshake per client
    assert "TLS handshake failed (PEER_DID_NOT_RETURN_A_CERTIFICATE)" in tls_broker.log_text()
    # The client fails at once only if the broker's TLS alert reaches it (Kafka's broker flushes it before
    # closing); a connection closed without one is retried until the client's timeout.
    refused = {row[1]: row[2] for row in rows if row[0] == "#refused"}
    assert refused == {"admin": "SslAuthenticationException", "producer": "SslAuthenticationException"}, rows


def test_scram_over_sasl_ssl_round_trips_without_a_client_certificate(tls_broker, pki, classpath, tmp_path):
    props = _client_props(tmp_path, pki, scram=True)
    _round_trip(classpath, props, tls_broker.ports[2], "sasl-ssl-java", tls_broker)
    successful, failed = tls_broker.logins("SASL_SSL")
    assert successful >= 3 and failed == 0
    assert tls_broker.logins("SSL") == (0, 0)
