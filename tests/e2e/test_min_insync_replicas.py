"""A single node whose ``min.insync.replicas`` is above 1 (a docker-compose copied from a 3-broker cluster).

Kafka 3.7+ checks acks=all against ``min(min.insync.replicas, replicas)``
(``Partition.effectiveMinIsr``, KAFKA-15583), 1 on one node: producers with
acks=all (confluent-kafka, kafka-python, with no retries to hide a refusal),
a transactional producer (``transaction.state.log.min.isr=2``) and a
consumer committing its offsets all work, where Kafka before 3.7 answered
NOT_ENOUGH_REPLICAS.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .test_kafka_python import produce as kp_produce
from .test_transactions import rows, send, txn_producer, wait_stable

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.fixture
def strict_broker(broker_factory):
    return broker_factory(min_insync_replicas="2", transaction_state_log_min_isr="2")


def test_acks_all_producers_and_the_coordinators_write_above_the_one_replica(strict_broker):
    bootstrap = strict_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("strict", 1, 1, config={"min.insync.replicas": "3"})])["strict"].result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "enable.idempotence": False,
                         "delivery.timeout.ms": 10_000})  # fmt: skip
    assert send(producer, "strict", rows("ck", 3)) == [0, 1, 2]
    assert [m.offset for m in kp_produce(bootstrap, "strict", rows("kp", 2), acks="all", retries=0)] == [3, 4]
    txn = txn_producer(bootstrap, "strict-txn")
    txn.begin_transaction()
    assert send(txn, "strict", rows("tx", 2)) == [5, 6]
    txn.commit_transaction(30)
    wait_stable(bootstrap, "strict", {0: 8})  # the marker at 7
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "strict-g", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition("strict", 0, 8)], asynchronous=False)
        assert [tp.offset for tp in consumer.committed([TopicPartition("strict", 0)], timeout=15)] == [8]
    finally:
        consumer.close()
