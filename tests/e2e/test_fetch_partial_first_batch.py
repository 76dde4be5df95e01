"""Consumers of two partitions whose second partition's first batch is larger than the fetch limits.

A Fetch v3+ answer gives the first partition with records its first batch
whole; a later partition whose first batch the limit would cut gets no records
(Kafka's ``readFromLocalLog``), and takes the batch whole in a later fetch.
Sent partial, kafka-python and the Java client stop ("no complete records
were found"). kafka-python and confluent-kafka must read every record, with
the limit on ``max_partition_fetch_bytes`` and on ``fetch_max_bytes``.
"""

from __future__ import annotations

import time
import warnings

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

SMALL = 20
BIG = 3000


def _topic(bootstrap: str, name: str) -> None:
    """Partition 0: ``SMALL`` small records; partition 1: one record of ``BIG`` bytes (one batch)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(timeout=15)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(SMALL):
        producer.produce(name, b"small%d" % i, partition=0)
    producer.flush(15)
    producer.produce(name, b"x" * BIG, partition=1)
    assert producer.flush(15) == 0


def _kp_read_all(bootstrap: str, topic: str, **limits) -> dict:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             **limits)  # fmt: skip
    got = {0: 0, 1: 0}
    try:
        consumer.assign([KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)])
        deadline = time.monotonic() + 20
        while (got[0] < SMALL or got[1] < 1) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got[tp.partition] += len(records)
    finally:
        consumer.close()
    return got


def _ck_read_all(bootstrap: str, topic: str, **limits) -> dict:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False, **limits})  # fmt: skip
    got = {0: 0, 1: 0}
    try:
        consumer.assign([CKTopicPartition(topic, 0, 0), CKTopicPartition(topic, 1, 0)])
        deadline = time.monotonic() + 20
        while (got[0] < SMALL or got[1] < 1) and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got[msg.partition()] += 1
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("limits", [{"max_partition_fetch_bytes": 1000}, {"fetch_max_bytes": 1500}])
def test_kafka_python_reads_a_batch_larger_than_what_is_left(broker, limits):
    _topic(broker.bootstrap, "kp")
    assert _kp_read_all(broker.bootstrap, "kp", **limits) == {0: SMALL, 1: 1}


@pytest.mark.parametrize("limits", [{"max.partition.fetch.bytes": 1000}, {"fetch.max.bytes": 1500, "message.max.bytes": 1000}])
def test_confluent_kafka_reads_a_batch_larger_than_what_is_left(broker, limits):
    _topic(broker.bootstrap, "ck")
    assert _ck_read_all(broker.bootstrap, "ck", **limits) == {0: SMALL, 1: 1}
