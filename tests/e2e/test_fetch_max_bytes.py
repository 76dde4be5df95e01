"""A broker started with ``fetch.max.bytes=1024`` (a compose file's ``KAFKA_FETCH_MAX_BYTES``), Kafka's
smallest cap, against real consumers that ask for far more (their defaults: 50 MiB): confluent-kafka
and kafka-python still read every record, the many small batches a capped answer at a time and a
record larger than the cap whole (KIP-74). Before the key was known the broker refused to start."""

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

GROUPS, PER_GROUP, BIG = 40, 5, 3000
WANT = [b"r%03d" % i + b"." * 60 for i in range(GROUPS * PER_GROUP)] + [b"x" * BIG]


def _fill(bootstrap: str, topic: str) -> None:
    """``GROUPS`` batches of ``PER_GROUP`` small records (each batch below the cap), then one record above it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for start in range(0, len(WANT), PER_GROUP):
        for value in WANT[start:start + PER_GROUP]:
            producer.produce(topic, value, partition=0)
        assert producer.flush(15) == 0


def _ck_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False})  # fmt: skip
    got: list[bytes] = []
    try:
        consumer.assign([CKTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(got) < len(WANT) and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def _kp_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    got: list[bytes] = []
    try:
        consumer.assign([KPTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + 30
        while len(got) < len(WANT) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got


def test_consumers_read_everything_through_a_1024_byte_cap(broker_factory):
    b = broker_factory(fetch_max_bytes="1024")
    _fill(b.bootstrap, "capped")
    assert _ck_values(b.bootstrap, "capped") == WANT
    assert _kp_values(b.bootstrap, "capped") == WANT
