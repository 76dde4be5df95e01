"""``legacy.protocol.versions.enable=false`` (the versions Kafka 4.0.1 no longer serves switched off) leaves
today's clients whole: confluent-kafka and kafka-python create a topic, produce, consume, commit and read their
committed offsets back, and list offsets by time, all on the versions Kafka 4 keeps. The versions it removes
close the connection (``tests/broker/test_dispatch.py``)."""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .clients import kp_consume

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _ck_commit_and_read_back(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g4", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=15)
        return committed.offset
    finally:
        consumer.close()


def _kp_offsets(bootstrap: str, topic: str) -> tuple[int, int, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="g4", enable_auto_commit=False)
    try:
        tp = KPTopicPartition(topic, 0)
        end = consumer.end_offsets([tp])[tp]
        by_time = consumer.offsets_for_times({tp: 0})[tp]
        return end, by_time.offset, consumer.committed(tp)
    finally:
        consumer.close()


def test_todays_clients_work_with_the_kafka_4_versions_only(broker_factory):
    b = broker_factory(legacy_protocol_versions_enable="false")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("k4", 1, 1)])["k4"].result(timeout=15)
    producer = Producer({"bootstrap.servers": b.bootstrap, "compression.type": "lz4"})
    for i in range(5):
        producer.produce("k4", b"v%d" % i, key=b"k%d" % i, partition=0, timestamp=1_700_000_000_000 + i)
    assert producer.flush(15) == 0
    assert [m.value for m in kp_consume(b.bootstrap, "k4", 5)] == [b"v%d" % i for i in range(5)]
    assert _ck_commit_and_read_back(b.bootstrap, "k4") == 3
    assert _kp_offsets(b.bootstrap, "k4") == (5, 0, 3)  # end, first at or after time 0, committed
