"""Consume helpers shared by the end-to-end tests (real clients, no consumer group)."""

from __future__ import annotations

import time
import warnings

from confluent_kafka import Consumer, TopicPartition

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition


def kp_consume(bootstrap: str, topic: str, count: int, **config) -> list:
    """Read ``count`` records of partition 0 from the start with kafka-python ``assign``."""
    config.setdefault("consumer_timeout_ms", 15000)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    try:
        consumer.assign([KPTopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        got = []
        for message in consumer:
            got.append(message)
            if len(got) >= count:
                break
        return got
    finally:
        consumer.close()


def ck_consume(bootstrap: str, topic: str, count: int, timeout: float = 30.0, **config) -> list:
    """Read ``count`` messages of partition 0 from offset 0 with confluent-kafka ``assign``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **config})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg)
        return got
    finally:
        consumer.close()
