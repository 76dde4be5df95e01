"""Old clients on the non-record APIs: committed offsets at the versions they send.

kafka-python's ``api_version=(0, 8, 1)`` commits and fetches offsets with
OffsetCommit v0 / OffsetFetch v0, which Kafka kept in ZooKeeper; a KRaft
broker (3.x) has none and answers UNSUPPORTED_VERSION, which the client
raises. ``(0, 8, 2)`` uses v1 of both, kept by the group coordinator.
"""

from __future__ import annotations

import warnings
from contextlib import closing

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import UnsupportedVersionError
    from kafka.structs import OffsetAndMetadata

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, value=b"v%d" % i, partition=0)
    producer.flush(30)
    producer.close(5)


def _assigned(bootstrap: str, topic: str, api_version: tuple, group: str) -> tuple[KafkaConsumer, TopicPartition]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version, group_id=group,
                             enable_auto_commit=False)  # fmt: skip
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    return consumer, tp


def test_kafka_python_0_8_1_offsets_are_unsupported_0_8_2_kept(broker):
    _produce(broker.bootstrap, "old-offsets", 5)
    consumer, tp = _assigned(broker.bootstrap, "old-offsets", (0, 8, 1), "zk-era")
    with closing(consumer):
        with pytest.raises(UnsupportedVersionError):
            consumer.commit({tp: OffsetAndMetadata(3, "", -1)})
        with pytest.raises(UnsupportedVersionError):
            consumer.committed(tp)
    consumer, tp = _assigned(broker.bootstrap, "old-offsets", (0, 8, 2), "zk-era")
    with closing(consumer):
        consumer.commit({tp: OffsetAndMetadata(3, "", -1)})
        assert consumer.committed(tp) == 3
