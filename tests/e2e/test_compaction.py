"""Compaction end to end: kafka-python producing updates and header-flagged tombstones to a compacted topic.

The topic is created through kafka-python's admin client with tiny segment
and lag settings (``max.compaction.lag.ms`` forces the roll of the active
segment and makes the log must-clean, KIP-354). Once the broker's cleaner
thread has run:

* a consumer from the beginning sees exactly the latest value of each key;
  the KIP-87 tombstones (``kafka.tombstone`` header) keep their payload and
  header, null-value tombstones stay null (both inside ``delete.retention.ms``);
* an old-format consumer (kafka-python at api_version 0.10.0: Fetch v2,
  magic 1) sees the flagged tombstones as null values, i.e. as deletes;
* the metrics endpoint, scraped over HTTP and parsed with prometheus-client's
  parser, shows the cleaner's gauges.

A second test cleans a log continuously (backoff 50 ms, tiny segments) while
confluent-kafka produces updates and tombstones and kafka-python reads it:
offsets always increase, and once it settles every key's last record is its
latest write (a tombstone may be gone, never resurrect an older value).
"""

from __future__ import annotations

import time
import warnings

import pytest

from .clients import kp_consume
from .harness import wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TOPIC = "users"
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "2048", "max.compaction.lag.ms": "1500",
           "min.cleanable.dirty.ratio": "0.99"}  # fmt: skip


def _produce(bootstrap: str) -> dict:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=1024)
    latest: dict = {}
    for i in range(300):
        key = b"user-%d" % (i % 20)
        producer.send(TOPIC, key=key, value=b"profile-%d" % i, partition=0)
        latest[key] = (b"profile-%d" % i, [])
    for n in range(5):
        key, payload = b"user-%d" % n, b"erased by request %d" % n
        producer.send(TOPIC, key=key, value=payload, partition=0, headers=[("kafka.tombstone", b"gdpr")])
        latest[key] = (payload, [("kafka.tombstone", b"gdpr")])
    for n in (5, 6):
        producer.send(TOPIC, key=b"user-%d" % n, value=None, partition=0)
        latest[b"user-%d" % n] = (None, [])
    producer.flush(30)
    producer.close()
    return latest


def test_compaction_with_kip87_tombstones_and_old_consumers(broker_factory):
    broker = broker_factory(log_cleaner_backoff_ms="200")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs=CONFIGS)])
    admin.close()
    latest = _produce(broker.bootstrap)
    total = 307

    def cleaned() -> bool:
        metrics = broker.scrape()
        return metrics.get(("kafka_log_logcleaner_cleaner_recopy_percent", ()), 0) > 0 and len(
            kp_consume(broker.bootstrap, TOPIC, total, consumer_timeout_ms=1500)) == len(latest)

    wait_until(cleaned, timeout=40, interval=0.5)
    got = kp_consume(broker.bootstrap, TOPIC, len(latest))
    assert {m.key: (m.value, list(m.headers)) for m in got} == latest
    assert [m.offset for m in got] == sorted(m.offset for m in got) and got[-1].offset == total - 1

    old = kp_consume(broker.bootstrap, TOPIC, len(latest), api_version=(0, 10, 0))
    expected_old = {k: (None if v[1] else v[0]) for k, v in latest.items()}
    assert {m.key: m.value for m in old} == expected_old

    metrics = broker.scrape()
    assert metrics[("kafka_log_logcleaner_max_compaction_delay_secs", ())] == 0
    assert ("kafka_log_logcleaner_compaction_delay_secs", (("partition", "0"), ("topic", TOPIC))) in metrics
    assert 0 < metrics[("kafka_log_logcleaner_cleaner_recopy_percent", ())] < 100
    assert metrics[("kafka_log_logcleaner_max_clean_time_secs", ())] > 0
    assert 0 < metrics[("kafka_log_logcleaner_max_buffer_utilization_percent", ())] < 1
    assert metrics[("kafka_log_logcleaner_deadthreadcount", ())] == 0
    assert metrics[("kafka_log_logcleanermanager_time_since_last_run_ms", ())] < 10_000
    assert metrics[("kafka_log_logcleanermanager_uncleanable_partitions_count",
                    (("logDirectory", str(broker.data_dir)),))] == 0  # fmt: skip


def test_the_cleaner_can_be_switched_off(broker_factory):
    broker = broker_factory(log_cleaner_enable="false")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs=CONFIGS)])
    admin.close()
    _produce(broker.bootstrap)
    time.sleep(3.5)  # past max.compaction.lag.ms: a running cleaner would have cleaned by now
    assert len(kp_consume(broker.bootstrap, TOPIC, 307)) == 307
    assert broker.scrape()[("kafka_log_logcleaner_max_compaction_delay_secs", ())] > 0


def test_cleaning_while_producing_and_consuming(broker_factory):
    """The cleaner thread swaps segments in while a producer appends and a consumer reads the same log."""
    from confluent_kafka import Producer

    broker = broker_factory(log_cleaner_backoff_ms="50")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("busy", 1, 1, topic_configs={
        "cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0"})])  # fmt: skip
    admin.close()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1, "batch.size": 2048})
    latest: dict = {}
    for i in range(6000):
        key = b"key-%d" % (i % 50)
        value = None if i % 97 == 0 else b"value-%d" % i
        producer.produce("busy", value, key=key, partition=0)
        latest[key] = value
        if i % 500 == 0:
            producer.flush(10)
            kp_consume(broker.bootstrap, "busy", 10**6, consumer_timeout_ms=300)  # read while it cleans
    assert producer.flush(30) == 0

    def settled() -> bool:
        got = kp_consume(broker.bootstrap, "busy", 10**6, consumer_timeout_ms=1000)
        offsets = [m.offset for m in got]
        assert offsets == sorted(set(offsets))
        seen = {m.key: m.value for m in got}  # the last record of each key wins, as for a consumer
        return len(got) < 1000 and all(seen.get(k) == v for k, v in latest.items())

    wait_until(settled, timeout=60, interval=1.0)
    assert "uncleanable" not in broker.log_text() and "Traceback" not in broker.log_text()


def test_min_compaction_lag_holds_records_without_timestamps(broker_factory):
    """Records sent with no timestamp (-1) are aged by their segment file's mtime, as Kafka's
    LogSegment.largestTimestamp does: a 1 h ``min.compaction.lag.ms`` keeps them all, while the same
    records on a topic without a lag are compacted by the same cleaner."""
    broker = broker_factory(log_cleaner_backoff_ms="100")
    configs = {"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("lagged", 1, 1, topic_configs={**configs, "min.compaction.lag.ms": "3600000"}),
                         NewTopic("unlagged", 1, 1, topic_configs=configs)])  # fmt: skip
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for topic in ("lagged", "unlagged"):
        for i in range(20):
            producer.send(topic, key=b"k", value=b"v%d-" % i + b"x" * 200, partition=0, timestamp_ms=-1)
            producer.flush(10)
    producer.close()
    wait_until(lambda: len(kp_consume(broker.bootstrap, "unlagged", 20, consumer_timeout_ms=1000)) < 20,
               timeout=20, interval=0.3)  # fmt: skip
    time.sleep(1)  # several more cleaner rounds
    got = kp_consume(broker.bootstrap, "lagged", 20)
    assert [m.offset for m in got] == list(range(20))
    assert {m.timestamp for m in got} == {-1}


@pytest.mark.parametrize("cleaner", ["false", "true"])
def test_compact_delete_retention_is_the_cleaners(broker_factory, cleaner):
    """Kafka's LogManager retention task skips compacted logs; the cleaner thread applies retention.ms to
    ``compact,delete`` logs after each round. So with log.cleaner.enable=false such a topic keeps records
    that a delete-only topic with the same retention loses."""
    broker = broker_factory(log_cleaner_enable=cleaner, log_cleaner_backoff_ms="100",
                            log_retention_check_interval_ms="100",
                            log_initial_task_delay_ms="0")  # fmt: skip  (Kafka's default holds the first pass 30 s)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, 1, 1, topic_configs={"cleanup.policy": policy, "retention.ms": "1000"})
                         for name, policy in (("cd", "compact,delete"), ("d", "delete"))])  # fmt: skip
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    old = int(time.time() * 1000) - 60_000
    for name in ("cd", "d"):
        for i in range(5):
            producer.send(name, key=b"k%d" % i, value=b"v", partition=0, timestamp_ms=old)
    producer.flush(30)
    producer.close()

    def start(name: str) -> float:
        return broker.scrape()[("kafka_log_log_logstartoffset", (("partition", "0"), ("topic", name)))]

    wait_until(lambda: start("d") == 5, timeout=30, interval=0.2)
    if cleaner == "true":
        wait_until(lambda: start("cd") == 5, timeout=30, interval=0.2)
        assert kp_consume(broker.bootstrap, "cd", 5, consumer_timeout_ms=1000) == []
    else:
        assert start("cd") == 0  # one retention pass takes every log: "d" trimmed means "cd" was passed over
        assert [m.key for m in kp_consume(broker.bootstrap, "cd", 5)] == [b"k%d" % i for i in range(5)]
