"""Shared set-up of the consumer-group end-to-end tests (``test_groups_*.py``).

The broker runs with ``GROUP_CONFIG``: session timeouts down to one second are
accepted, so a crashed member is timed out within seconds, and the first join of
an empty group waits 300 ms. Topics are created with confluent-kafka's admin
client, keyed records produced with its idempotent producer (value = key), and
kafka-python consumers made with short heartbeats and fetch waits.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer

ROOT = Path(__file__).resolve().parents[2]

# Session timeouts as short as one second are accepted. The first join of an empty group waits
# 300 ms (Kafka's default is 3 s), not 0: kafka-python 3.0.12 sends JoinGroup before its metadata
# for the subscribed topic has arrived, so a leader that joins at once assigns nothing and rejoins
# when the metadata lands; that metadata-triggered rejoin does not set the client's rejoin flag,
# and if consumer.poll's timeout expires between its JoinGroup and SyncGroup responses the
# assignment is dropped and heartbeats stay off for good (seen once in ~10 runs; the broker
# answered both within 2 ms). With the delay, the metadata is there before the first assignment.
GROUP_CONFIG = {"group_initial_rebalance_delay_ms": "300", "group_min_session_timeout_ms": "1000"}


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def produce_keys(bootstrap: str, topic: str, rows: list[tuple[int, str]]) -> dict[str, tuple[int, int]]:
    """Produce ``(partition, key)`` rows (value = key); returns key -> (partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
    placed: dict[str, tuple[int, int]] = {}
    errors: list = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            placed[msg.key().decode()] = (msg.partition(), msg.offset())

    for partition, key in rows:
        producer.produce(topic, key=key.encode(), value=key.encode(), partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    assert len(placed) == len(rows)
    return placed


def wait_until(predicate, timeout: float, what: str, details=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not met within {timeout} s: {what}\n{details()}")


# ------------------------------------------------- kafka-python members as processes


def kp_consumer(bootstrap: str, group: str, *topics: str, **config) -> KafkaConsumer:
    config = {"auto_offset_reset": "earliest", "enable_auto_commit": False, "session_timeout_ms": 6000,
              "heartbeat_interval_ms": 500, "fetch_max_wait_ms": 100, **config}  # fmt: skip
    return KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, **config)


def kp_poll(consumer: KafkaConsumer, count: int, timeout: float = 20.0) -> list[tuple[int, int, str]]:
    got: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=200).values():
            got.extend((m.partition, m.offset, m.key.decode()) for m in msgs)
    return got


def wait_assigned(consumer: KafkaConsumer, partitions: set, timeout: float = 20.0) -> list[tuple[int, int, str]]:
    """Poll until ``partitions`` are assigned; returns the records polled meanwhile."""
    got: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=100).values():
            got.extend((m.partition, m.offset, m.key.decode()) for m in msgs)
        if consumer.assignment() == partitions:
            return got
    raise AssertionError(f"assignment {consumer.assignment()} != {partitions}")
