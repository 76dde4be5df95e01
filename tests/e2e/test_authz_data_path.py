"""The ACL authorizer on the data path, with real clients over SASL/PLAIN.

The broker runs Kafka's StandardAuthorizer rules with ``super.users=User:admin``.
The admin (confluent-kafka's AdminClient) makes topics and grants; alice,
with DESCRIBE only, is refused by Produce with the clients' own
TopicAuthorizationFailed error (kafka-python's exception, librdkafka's delivery
error) and by Fetch; after WRITE and READ grants she produces (idempotently:
WRITE on the topic is enough, KIP-679) and consumes. A Metadata listing of all
topics shows each principal only the topics it may describe.
"""

from __future__ import annotations

import time
import warnings

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from .acl_users import confluent_conf, kafka_python_conf, start_acl_broker

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import TopicAuthorizationFailedError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
def authz_broker(tmp_path):
    broker = start_acl_broker(tmp_path / "data", plaintext=True)
    yield broker
    broker.kill()


def setup(broker, topics: list[str]) -> AdminClient:
    admin = AdminClient(confluent_conf(broker, "admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    return admin


def allow(admin: AdminClient, op: AclOperation, name: str, rtype=ResourceType.TOPIC,
          pattern=ResourcePatternType.LITERAL) -> None:  # fmt: skip
    binding = AclBinding(rtype, name, pattern, "User:alice", "*", op, AclPermissionType.ALLOW)
    for future in admin.create_acls([binding]).values():
        future.result(30)


def test_kafka_python_is_refused_then_produces_and_consumes_after_grants(authz_broker):
    admin = setup(authz_broker, ["orders", "secret"])
    allow(admin, AclOperation.DESCRIBE, "orders")
    refused = KafkaProducer(**kafka_python_conf(authz_broker, "alice"), enable_idempotence=False, acks=1,
                            max_block_ms=30_000, delivery_timeout_ms=30_000)  # fmt: skip
    with pytest.raises(TopicAuthorizationFailedError):
        refused.send("orders", b"no").get(30)
    refused.close(5)
    consumer = KafkaConsumer(**kafka_python_conf(authz_broker, "alice"), consumer_timeout_ms=1000,
                             request_timeout_ms=30_000)  # fmt: skip
    assert consumer.topics() == {"orders"}  # "secret" is hidden
    consumer.assign([KpTopicPartition("orders", 0)])
    consumer.seek(KpTopicPartition("orders", 0), 0)
    with pytest.raises(TopicAuthorizationFailedError):
        _poll_until_error(consumer)
    allow(admin, AclOperation.WRITE, "orders")
    allow(admin, AclOperation.READ, "orders")
    producer = KafkaProducer(**kafka_python_conf(authz_broker, "alice"), max_block_ms=30_000)  # idempotent
    assert [producer.send("orders", b"v%d" % i).get(30).offset for i in range(3)] == [0, 1, 2]
    producer.close(5)
    got, deadline = [], time.time() + 30
    while len(got) < 3 and time.time() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


def _poll_until_error(consumer, seconds: float = 30) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        consumer.poll(timeout_ms=500)
    raise AssertionError("no error in time")


def test_confluent_kafka_is_refused_then_round_trips_after_grants_and_listings_hide_topics(authz_broker):
    admin = setup(authz_broker, ["payments", "public-news", "secret"])
    allow(admin, AclOperation.DESCRIBE, "payments")
    allow(admin, AclOperation.DESCRIBE, "public-", pattern=ResourcePatternType.PREFIXED)
    alice_conf = confluent_conf(authz_broker, "alice")
    assert set(AdminClient(alice_conf).list_topics(timeout=30).topics) == {"payments", "public-news"}
    assert {"payments", "public-news", "secret"} <= set(admin.list_topics(timeout=30).topics)
    errors: list = []
    producer = Producer({**alice_conf, "message.timeout.ms": 20_000})
    producer.produce("payments", b"no", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    for op in (AclOperation.WRITE, AclOperation.READ):
        allow(admin, op, "payments")
    allow(admin, AclOperation.READ, "g", rtype=ResourceType.GROUP)  # for the consumer's group, if it asks
    delivered: list = []
    producer = Producer({**alice_conf, "enable.idempotence": True, "message.timeout.ms": 20_000})
    for i in range(3):
        producer.produce("payments", b"v%d" % i, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0 and delivered == [None] * 3
    consumer = Consumer({**alice_conf, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("payments", 0, 0)])
    got, deadline = [], time.time() + 30
    while len(got) < 3 and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]
