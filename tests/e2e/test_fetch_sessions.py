"""Incremental fetch sessions (KIP-227) with a real client: kafka-python 3.0 keeps one session per broker.

While a consumer reads three partitions that a producer keeps appending to, it must stay in one
session: many Fetch requests, one session in the cache (a client that fell back to full fetches would
open a new session with each). Every record must still arrive once, in order per partition. (The Java
client's consumer also fetches in sessions: every Java consume test goes through them.)
"""

from __future__ import annotations

import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KPTopicPartition
    from kafka.admin import NewTopic

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _fetch_requests(samples: dict) -> float:
    return sum(v for (name, labels), v in samples.items()
               if name == "kafka_network_requestmetrics_requests_total" and ("request", "Fetch") in labels)  # fmt: skip


def test_a_consumer_stays_in_one_session_and_gets_every_record(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("sessions", 3, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=1)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, fetch_max_wait_ms=50)
    try:
        producer.send("sessions", b"first", partition=0).get(30)
        consumer.assign([KPTopicPartition("sessions", p) for p in range(3)])
        consumer.seek_to_beginning()
        got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        sent = {0: [b"first"], 1: [], 2: []}
        deadline = time.monotonic() + 60
        for i in range(30):  # a record to one partition at a time: the others have nothing new
            value = b"v%d" % i
            producer.send("sessions", value, partition=i % 3).get(30)
            sent[i % 3].append(value)
            for records in consumer.poll(timeout_ms=200).values():
                for record in records:
                    got[record.partition].append(record.value)
        while got != sent and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                for record in records:
                    got[record.partition].append(record.value)
        assert got == sent
        samples = broker.scrape()
        assert samples[("kafka_server_fetchsessioncache_numincrementalfetchsessions", ())] == 1.0
        assert samples[("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", ())] == 3.0
        assert _fetch_requests(samples) > 20
    finally:
        consumer.close()
        producer.close(5)
