"""confluent-kafka (librdkafka 2.16) and kcat (librdkafka 2.0.2) against a real broker process."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from .clients import ck_consume

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
BASE_TS = 1_760_000_000_000


def _produce(bootstrap: str, topic: str, records: list[tuple], **conf) -> list:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    delivered: list = []
    for key, value, headers, ts in records:
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=0,
                         on_delivery=lambda err, msg: delivered.append((err, msg)))  # fmt: skip
    assert producer.flush(30) == 0
    return delivered


def _records(n: int) -> list[tuple]:
    return [(f"k{i}".encode(), f"v{i}".encode() * 7, [("hdr", f"{i}".encode())], BASE_TS + i) for i in range(n)]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_producer_acks_and_codecs_round_trip(broker, acks, codec):
    topic = f"ck-{codec}-{acks}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    records = _records(40)
    delivered = _produce(broker.bootstrap, topic, records, acks=acks, **{"compression.codec": codec})
    assert all(err is None for err, _ in delivered)
    got = ck_consume(broker.bootstrap, topic, len(records))
    assert [(m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in got] == [
        (i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(records)
    ]


def test_admin_client_describes_configs(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("desc", 2, 1, config={"retention.ms": "3600000"})])["desc"].result(15)
    resource = ConfigResource("topic", "desc")
    configs = admin.describe_configs([resource])[resource].result(15)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["flush.ms"].is_default
    # config/server.properties sets log.segment.bytes, so the value comes from the broker's static config
    assert configs["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value


def test_unknown_topic_produce_fails_without_auto_create(broker_factory):
    broker = broker_factory(**{"auto_create_topics_enable": "false"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 3000})
    errors: list = []
    producer.produce("nope", b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() in (KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._MSG_TIMED_OUT)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
def test_kcat_metadata_produce_consume(broker):
    base = ["kcat", "-b", broker.bootstrap]
    listing = subprocess.run(base + ["-L"], capture_output=True, text=True, timeout=30)
    assert listing.returncode == 0 and "1 brokers" in listing.stdout, listing.stderr
    lines = "".join(f"key{i}:value{i}\n" for i in range(20))
    produced = subprocess.run(base + ["-t", "kc", "-P", "-K:", "-H", "origin=kcat", "-H", "n=1"], input=lines,
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    fmt = "%o|%k|%s|%h|%T\\n"
    consumed = subprocess.run(base + ["-t", "kc", "-C", "-e", "-o", "beginning", "-f", fmt],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    rows = [line.split("|") for line in consumed.stdout.splitlines()]
    assert [r[:4] for r in rows] == [[str(i), f"key{i}", f"value{i}", "origin=kcat,n=1"] for i in range(20)]
    stamps = [int(r[4]) for r in rows]
    assert all(abs(ts - time.time() * 1000) < 120_000 for ts in stamps)  # producer CreateTime, kept as sent
    again = ck_consume(broker.bootstrap, "kc", 20)
    assert [m.timestamp()[1] for m in again] == stamps
