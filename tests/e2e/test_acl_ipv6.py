"""ACL hosts of IPv6 clients, as Kafka's authorizer names them: Java's ``InetAddress.getHostAddress()``.

A client connected from ``::1`` is host ``0:0:0:0:0:0:0:1`` to Kafka, so an
ACL naming that host applies to it (and one naming ``::1`` does not). The
broker's SASL listener is on the IPv6 loopback; confluent-kafka produces as
``alice``, who may do ALL to the topic from any host, but is denied WRITE
from her IPv6 host.
"""

from __future__ import annotations

import socket

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)  # fmt: skip

from .acl_users import JAAS, STANDARD_AUTHORIZER
from .harness import BrokerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def ipv6_broker(tmp_path_factory):
    if not _has_ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    broker = BrokerProcess(tmp_path_factory.mktemp("v6") / "data", {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://[::1]:0", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"})  # fmt: skip
    yield broker.start()
    broker.kill()


def _conf(broker, who: str) -> dict:
    return {"bootstrap.servers": f"[::1]:{broker.ports[1]}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": who, "sasl.password": f"{who}-secret"}  # fmt: skip


def _produce(broker, topic: str) -> KafkaError | None:
    results: list = []
    producer = Producer({**_conf(broker, "alice"), "message.timeout.ms": 5000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: results.append(err))
    producer.flush(15)
    assert len(results) == 1
    return results[0]


@pytest.mark.parametrize(("denied_host", "refused"), [("0:0:0:0:0:0:0:1", True), ("::1", False)])
def test_an_acl_names_an_ipv6_client_as_java_prints_its_address(ipv6_broker, denied_host, refused):
    topic = f"v6-{len(denied_host)}"
    admin = AdminClient(_conf(ipv6_broker, "admin"))  # kept: a handle collected at once ends its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    acls = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                       AclOperation.ALL, AclPermissionType.ALLOW),
            AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", denied_host,
                       AclOperation.WRITE, AclPermissionType.DENY)]  # fmt: skip
    for future in admin.create_acls(acls, request_timeout=15).values():
        future.result()
    error = _produce(ipv6_broker, topic)
    if refused:
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    else:
        assert error is None, error
