"""An SSL listener's keystore rotated at runtime through a dynamic broker config, as Kafka does it.

IncrementalAlterConfigs on this node sets ``listener.name.ssl.ssl.keystore.location``: new TLS
connections get the new certificate (a confluent-kafka producer trusting the CA works with it), a
connection opened before keeps working, the same path set again reloads a file rotated in place, and
the change survives a restart. A keystore whose subject differs, or one that cannot be read, is
refused with Kafka's "Invalid dynamic configuration" and the served certificate stays.
"""

from __future__ import annotations

import shutil
import socket
import ssl

import pytest
from confluent_kafka import Producer

from ..broker._admin_client import req, sub
from ..tls_pki import issue_broker_pair, make_pki
from .harness import BrokerProcess, raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
KEY = "listener.name.ssl.ssl.keystore.location"


def _alter(port: int, location: str) -> tuple[int, str | None]:
    Res = sub(44, "AlterConfigsResource")
    body = req(44, resources=[Res(resource_type=4, resource_name="1", configs=[
        Res.AlterableConfig(name=KEY, config_operation=0, value=location)])])  # fmt: skip
    result = raw_call(port, 44, 1, body).responses[0]
    return result.error_code, result.error_message


def _served_certificate(port: int, ca: str) -> bytes:
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.getpeercert(binary_form=True)


def _produce(port: int, ca: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
                         "ssl.ca.location": ca})  # fmt: skip
    errors: list = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(30) == 0 and errors == [None]


def test_a_keystore_rotated_at_runtime_is_served_to_new_connections(tmp_path):
    pki = make_pki(tmp_path / "pki")
    keystore = tmp_path / "keystore.pem"
    shutil.copy(pki.broker_pair_pem, keystore)
    broker = BrokerProcess(tmp_path / "data", {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                                               "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)})
    broker.start()
    try:
        plain, tls = broker.ports
        first = _served_certificate(tls, pki.ca_pem)
        early = Producer({"bootstrap.servers": f"127.0.0.1:{tls}", "security.protocol": "SSL",
                          "ssl.ca.location": pki.ca_pem})  # fmt: skip
        early.produce("rotated", b"before")
        assert early.flush(30) == 0
        rotated = issue_broker_pair(pki, tmp_path / "rotated.pem")
        assert _alter(plain, str(rotated)) == (0, None)
        second = _served_certificate(tls, pki.ca_pem)
        assert second != first
        _produce(tls, pki.ca_pem, "rotated")
        early.produce("rotated", b"after")  # its connection was opened with the old certificate
        assert early.flush(30) == 0
        issue_broker_pair(pki, rotated)  # rotated in place: the same path again reloads it
        assert _alter(plain, str(rotated)) == (0, None)
        third = _served_certificate(tls, pki.ca_pem)
        assert third not in (first, second)
        other = issue_broker_pair(pki, tmp_path / "other.pem", common_name="not-the-broker")
        assert _alter(plain, str(other)) == (42, "Invalid dynamic configuration")  # INVALID_REQUEST
        assert _alter(plain, str(tmp_path / "missing.pem")) == (42, "Invalid dynamic configuration")
        assert _served_certificate(tls, pki.ca_pem) == third
        broker.stop()
        broker.start()
        assert _served_certificate(broker.ports[1], pki.ca_pem) == third
    finally:
        broker.kill()
