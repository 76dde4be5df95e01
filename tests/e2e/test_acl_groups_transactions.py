"""ACLs on consumer groups and transactional ids, with real clients over SASL/PLAIN.

The broker runs the StandardAuthorizer with ``super.users=User:admin`` on a
SASL_PLAINTEXT listener; ``admin`` creates the topic, produces and grants
ACLs with confluent-kafka's AdminClient (CreateAcls). ``alice`` may read the
topic: a kafka-python 3.0.12 group consumer without READ on its group gets
GroupAuthorizationFailedError, and after the grant consumes and commits. A
confluent-kafka transactional producer whose user may DESCRIBE but not WRITE
its transactional id fails ``init_transactions`` with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; after the grant it commits a
transaction.
"""

from __future__ import annotations

import time
import warnings

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from .acl_users import confluent_conf, kafka_python_conf

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import GroupAuthorizationFailedError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TOPIC, GROUP, TXN = "acl-t", "acl-g", "acl-tx"


def _grant(admin: AdminClient, rtype, name: str, op) -> None:
    acl = AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)
    for future in admin.create_acls([acl]).values():
        future.result(30)


def _setup(broker) -> AdminClient:
    """As admin: the topic with three records, and READ on it for alice."""
    admin = AdminClient(confluent_conf(broker, "admin"))
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    producer = Producer(confluent_conf(broker, "admin"))
    for i in range(3):
        producer.produce(TOPIC, value=b"v%d" % i)
    assert producer.flush(30) == 0
    _grant(admin, ResourceType.TOPIC, TOPIC, AclOperation.READ)
    return admin


def _kp_consumer(broker) -> KafkaConsumer:
    return KafkaConsumer(TOPIC, **kafka_python_conf(broker, "alice"), group_id=GROUP, auto_offset_reset="earliest",
                         enable_auto_commit=False, request_timeout_ms=20_000)  # fmt: skip


def test_a_group_consumer_needs_read_on_its_group(acl_broker):
    admin = _setup(acl_broker)
    consumer = _kp_consumer(acl_broker)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=10_000)
    finally:
        consumer.close()
    _grant(admin, ResourceType.GROUP, GROUP, AclOperation.READ)
    consumer = _kp_consumer(acl_broker)
    try:
        got, deadline = [], time.time() + 30
        while len(got) < 3 and time.time() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        assert got == [b"v0", b"v1", b"v2"]
        consumer.commit()
        assert consumer.committed(TopicPartition(TOPIC, 0)) == 3
    finally:
        consumer.close()


def test_a_transactional_producer_needs_write_on_its_transactional_id(acl_broker):
    admin = _setup(acl_broker)
    _grant(admin, ResourceType.TOPIC, TOPIC, AclOperation.WRITE)
    _grant(admin, ResourceType.TRANSACTIONAL_ID, TXN, AclOperation.DESCRIBE)  # finds its coordinator, no more
    producer = Producer({**confluent_conf(acl_broker, "alice"), "transactional.id": TXN})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(30)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _grant(admin, ResourceType.TRANSACTIONAL_ID, TXN, AclOperation.WRITE)
    producer = Producer({**confluent_conf(acl_broker, "alice"), "transactional.id": TXN})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"in a transaction")
    producer.commit_transaction(30)
