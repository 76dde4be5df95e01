"""SSL and SASL_SSL listeners with real clients: kcat, confluent-kafka, kafka-python, aiokafka, and raw TLS.

The broker listens on PLAINTEXT, SSL and SASL_SSL (SASL/PLAIN) at once, with
a throwaway CA (``tests/tls_pki.py``). Every client checks the broker's
certificate against that CA and round-trips records exactly. Mutual TLS:
with ``ssl.client.auth=required`` a client with a certificate signed by the
CA gets in and one without is refused in the handshake, which counts as a
failed authentication. Old clients (kafka-python ``api_version=(0, 10, 0)``)
get down-converted Fetch answers through TLS; a fetch larger than one file
read goes through the TLS path for file regions; a plaintext client on the
SSL port is closed and the broker goes on serving.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import warnings

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol import RequestHeader, encode_request
from tests.tls_pki import make_pki

from ..broker._admin_client import req
from .clients import ck_consume, kp_consume
from .test_aiokafka import _exact as _aio_rows
from .test_aiokafka import _read, _records, run
from .test_aiokafka import _produce as _aio_produce
from .harness import BrokerProcess, raw_call, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaProducer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _start(tmp_path, pki, **props) -> BrokerProcess:
    return BrokerProcess(tmp_path / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem,
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS, **props,
    }).start()  # fmt: skip


@pytest.fixture
def tls_broker(tmp_path, pki):
    broker = _start(tmp_path, pki)
    yield broker
    broker.kill()


@pytest.fixture
def mtls_broker(tmp_path, pki):
    broker = _start(tmp_path, pki, **{"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca_pem,
                                      "listener.name.ssl.ssl.client.auth": "required"})  # fmt: skip
    yield broker
    broker.kill()


def _ssl_conf(broker, pki, **extra) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{broker.ports[1]}", "security.protocol": "SSL",
            "ssl.ca.location": pki.ca_pem, **extra}  # fmt: skip


def _produce(conf: dict, topic: str, n: int, size: int = 10) -> None:
    admin = AdminClient(conf)  # kept alive until the topic is created
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({**conf, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, key=b"k%d" % i, value=b"%d" % i * size, headers=[("h", b"%d" % i)], timestamp=1000 + i)
    assert producer.flush(30) == 0


def _rows(messages) -> list:
    return [(m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in messages]


def test_confluent_over_ssl_with_large_fetches_and_metadata_of_the_ssl_listener(tls_broker, pki):
    conf = _ssl_conf(tls_broker, pki)
    _produce(conf, "t", 300, size=20_000)  # ~6 MB: fetch answers larger than one 1 MiB file read
    expected = [(i, b"k%d" % i, b"%d" % i * 20_000, [("h", b"%d" % i)], 1000 + i) for i in range(300)]
    assert _rows(ck_consume(conf["bootstrap.servers"], "t", 300, **{k: v for k, v in conf.items()
                                                                     if k != "bootstrap.servers"})) == expected
    brokers = AdminClient(conf).list_topics(timeout=10).brokers.values()
    assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", tls_broker.ports[1])]
    successful, failed = tls_broker.logins("SSL")  # each TLS handshake is a login on an SSL listener, as in Kafka
    assert successful >= 3 and failed == 0


def test_mutual_tls_lets_a_signed_client_in_and_refuses_one_without_a_certificate(mtls_broker, pki):
    conf = _ssl_conf(mtls_broker, pki, **{"ssl.certificate.location": pki.client_pem,
                                         "ssl.key.location": pki.client_key})  # fmt: skip
    _produce(conf, "m", 5)
    assert [r[:3] for r in _rows(ck_consume(conf["bootstrap.servers"], "m", 5, **{
        k: v for k, v in conf.items() if k != "bootstrap.servers"}))] == [(i, b"k%d" % i, b"%d" % i * 10)
                                                                         for i in range(5)]  # fmt: skip
    errors: list = []
    producer = Producer({**_ssl_conf(mtls_broker, pki), "error_cb": errors.append, "message.timeout.ms": 3000})
    producer.produce("m", b"never")
    assert producer.flush(10) == 0  # expired, undelivered
    assert any(e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) for e in errors)
    wait_until(lambda: mtls_broker.logins("SSL")[1] >= 1)
    assert any("TLS handshake failed" in line for line in mtls_broker.output)
    # the SASL_SSL listener keeps Kafka's default ssl.client.auth=none: no certificate needed there
    sasl = {"bootstrap.servers": f"127.0.0.1:{mtls_broker.ports[2]}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": pki.ca_pem, "sasl.mechanisms": "PLAIN", "sasl.username": "alice",
            "sasl.password": "alice-secret"}  # fmt: skip
    _produce(sasl, "s", 3)
    successful, failed = mtls_broker.logins("SASL_SSL")
    assert successful >= 2 and failed == 0


def test_kafka_python_new_and_old_over_ssl(tls_broker, pki):
    bootstrap = f"127.0.0.1:{tls_broker.ports[1]}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_cafile=pki.ca_pem)
    for i in range(10):
        producer.send("kp", key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")], timestamp_ms=5000 + i)
    producer.flush(30)
    producer.close(5)
    for api_version in (None, (0, 10, 0)):  # (0, 10, 0): Fetch v2, magic 1 down-converted through TLS
        got = kp_consume(bootstrap, "kp", 10, security_protocol="SSL", ssl_cafile=pki.ca_pem, api_version=api_version)
        assert [(m.offset, m.key, m.value, m.timestamp) for m in got] == [
            (i, b"k%d" % i, b"v%d" % i, 5000 + i) for i in range(10)]  # fmt: skip
        assert all(m.headers == ([("h", b"x")] if api_version is None else []) for m in got)


def test_aiokafka_over_ssl(tls_broker, pki):
    from aiokafka.helpers import create_ssl_context

    bootstrap, records = f"127.0.0.1:{tls_broker.ports[1]}", _records(20, "tls")
    tls = {"security_protocol": "SSL", "ssl_context": create_ssl_context(cafile=pki.ca_pem)}
    assert [m.offset for m in run(_aio_produce(bootstrap, "ak", records, **tls))] == list(range(len(records)))
    assert _aio_rows(run(_read(bootstrap, "ak", len(records), **tls))) == [(i, *r) for i, r in enumerate(records)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
def test_kcat_over_ssl_with_a_client_certificate(mtls_broker, pki):
    base = ["kcat", "-b", f"127.0.0.1:{mtls_broker.ports[1]}", "-X", "security.protocol=ssl",
            "-X", f"ssl.ca.location={pki.ca_pem}", "-X", f"ssl.certificate.location={pki.client_pem}",
            "-X", f"ssl.key.location={pki.client_key}"]  # fmt: skip
    subprocess.run(base + ["-t", "kc", "-P", "-H", "tag=1"], input="one\ntwo\n", text=True, check=True, timeout=30)
    out = subprocess.run(base + ["-t", "kc", "-C", "-e", "-f", "%o %s %h\n"], capture_output=True, text=True,
                         check=True, timeout=30).stdout  # fmt: skip
    assert out.split("\n")[:2] == ["0 one tag=1", "1 two tag=1"]
    listing = subprocess.run(base + ["-L"], capture_output=True, text=True, check=True, timeout=30).stdout
    assert f"127.0.0.1:{mtls_broker.ports[1]}" in listing


def _tls_call(sock: ssl.SSLSocket, key: int, version: int, body) -> object:
    return raw_call(sock, key, version, body, client_id="raw")


def test_a_plaintext_client_on_the_ssl_port_is_closed_and_others_go_on(tls_broker, pki):
    with socket.create_connection(("127.0.0.1", tls_broker.ports[1]), timeout=10) as sock:
        sock.sendall(encode_request(RequestHeader(18, 3, 1, "raw"), req(18)))
        assert sock.recv(1024)[:1] in (b"", b"\x15")  # closed, or a TLS alert record first
    wait_until(lambda: tls_broker.logins("SSL")[1] == 1)
    context = ssl.create_default_context(cafile=pki.ca_pem)
    with context.wrap_socket(socket.create_connection(("127.0.0.1", tls_broker.ports[1]), timeout=10),
                             server_hostname="localhost") as tls:  # fmt: skip
        versions = _tls_call(tls, 18, 0, req(18))
        assert versions.error_code == 0 and tls.version() in ("TLSv1.2", "TLSv1.3")
    with pytest.raises((ssl.SSLError, ConnectionError)):  # TLS on the PLAINTEXT port: the ClientHello reads
        context.wrap_socket(socket.create_connection(("127.0.0.1", tls_broker.ports[0]), timeout=10),
                            server_hostname="localhost")  # as a frame over socket.request.max.bytes: closed
    with socket.create_connection(("127.0.0.1", tls_broker.ports[0]), timeout=10) as plain:  # PLAINTEXT as before
        assert _tls_call(plain, 18, 0, req(18)).error_code == 0
    assert tls_broker.logins("SSL") == (1.0, 1.0)


def test_a_python_ssl_client_with_a_certificate_is_one_login(mtls_broker, pki):
    context = ssl.create_default_context(cafile=pki.ca_pem)
    context.load_cert_chain(pki.client_pem, pki.client_key)
    with context.wrap_socket(socket.create_connection(("127.0.0.1", mtls_broker.ports[1]), timeout=10),
                             server_hostname="localhost") as tls:  # fmt: skip
        assert _tls_call(tls, 18, 0, req(18)).error_code == 0
    assert mtls_broker.logins("SSL") == (1.0, 0.0)
    samples = mtls_broker.scrape()  # Kafka's SSL authenticator never claims re-authentication: it counts here too
    assert samples[("kafka_server_socket_server_metrics_successful_authentication_no_reauth_total",
                    (("listener", "SSL"),))] == 1.0  # fmt: skip
