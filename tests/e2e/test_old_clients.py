"""Old and new clients on one log (KIP-724 conversions, KIP-87 tombstones for old readers).

kafka-python's ``api_version`` setting drives the request versions and so the
message format: ``(0, 9)`` sends Produce v1 / Fetch v1 (magic 0), ``(0, 10,
0)`` Produce v2 / Fetch v2 (magic 1), ``(0, 10, 1)`` Produce v2 / Fetch v3
(magic 1) — checked against the captured frames in tests/fixtures/frames.
librdkafka's ``api.version.request=false`` + ``broker.version.fallback=0.9.0``
sends Produce v1 / Fetch v1 (magic 0). ``broker.version.fallback=0.10.0`` does
not give old versions: librdkafka ignores ``api.version.request=false`` for
fallbacks of 0.10 or later and negotiates with ApiVersions (seen in the
captured frames), so the 0.10 message format is driven by kafka-python's
``(0, 10, 0)``/``(0, 10, 1)`` and kcat/librdkafka are tested with 0.9.0. Every combination must see every key, value,
timestamp and offset, and an old consumer must see a null value for every
tombstone, including flagged ones that carry a payload.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings

import pytest
from confluent_kafka import Producer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaProducer
    from kafka.errors import UnsupportedCompressionTypeError

from .clients import ck_consume, kp_consume

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

OLD = {"0.9": (0, 9), "0.10.0": (0, 10, 0), "0.10.1": (0, 10, 1)}
CODECS_OLD = [None, "gzip", "snappy", "lz4"]
BASE_TS = 1_770_000_000_000


def _kp_produce(bootstrap, topic, records, api_version=None, codec=None):
    kw = {"api_version": api_version} if api_version else {}
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5, **kw)
    futures = []
    for key, value, headers, ts in records:
        extra = {"headers": headers} if headers and not api_version else {}
        futures.append(producer.send(topic, key=key, value=value, timestamp_ms=ts, partition=0, **extra))
    producer.flush(30)
    offsets = [f.get(30).offset for f in futures]
    producer.close(5)
    return offsets


def _kp_consume(bootstrap, topic, count, api_version=None):
    return kp_consume(bootstrap, topic, count, **({"api_version": api_version} if api_version else {}))


def _records(n, tag):
    return [(f"k-{tag}-{i}".encode(), f"v-{tag}-{i}".encode(), [], BASE_TS + i) for i in range(n)]


@pytest.mark.parametrize("old", list(OLD))
@pytest.mark.parametrize("codec", CODECS_OLD)
def test_old_producer_new_consumer(broker, old, codec):
    topic = f"old-new-{old}-{codec}"
    records = _records(30, old)
    assert _kp_produce(broker.bootstrap, topic, records, OLD[old], codec) == list(range(30))
    got = _kp_consume(broker.bootstrap, topic, 30)
    expected_ts = [-1] * 30 if old == "0.9" else [ts for *_, ts in records]  # magic 0 has no timestamps
    assert [(m.offset, m.key, m.value) for m in got] == [(i, k, v) for i, (k, v, _, _) in enumerate(records)]
    assert [m.timestamp for m in got] == expected_ts


@pytest.mark.parametrize("old", list(OLD))
@pytest.mark.parametrize("codec", CODECS_OLD + ["zstd"])
def test_new_producer_old_consumer_sees_null_for_every_tombstone(broker, old, codec):
    topic = f"new-old-{old}-{codec}"
    records = _records(10, old) + [
        (b"del-null", None, [], BASE_TS + 10),
        (b"del-flag", b"who deleted it", [("kafka.tombstone", b"gdpr")], BASE_TS + 11),
        (b"kept", b"", [("other", b"x")], BASE_TS + 12),
    ]
    _kp_produce(broker.bootstrap, topic, records, None, codec)
    if codec == "zstd":
        with pytest.raises(UnsupportedCompressionTypeError):  # error 76: an old client cannot read zstd
            _kp_consume(broker.bootstrap, topic, 1, OLD[old])
        return
    got = _kp_consume(broker.bootstrap, topic, len(records), OLD[old])
    assert [(m.offset, m.key) for m in got] == [(i, r[0]) for i, r in enumerate(records)]
    values = [m.value for m in got]
    assert values[:10] == [r[1] for r in records[:10]]
    assert values[10:] == [None, None, b""]  # both tombstones read as deletes; empty is not a tombstone
    new = _kp_consume(broker.bootstrap, topic, len(records))
    assert new[11].value == b"who deleted it" and list(new[11].headers) == [("kafka.tombstone", b"gdpr")]


@pytest.mark.parametrize("old", list(OLD))
def test_old_producer_old_consumer(broker, old):
    topic = f"old-old-{old}"
    records = _records(25, old)
    _kp_produce(broker.bootstrap, topic, records, OLD[old], "gzip")
    got = _kp_consume(broker.bootstrap, topic, 25, OLD[old])
    assert [(m.offset, m.key, m.value) for m in got] == [(i, k, v) for i, (k, v, _, _) in enumerate(records)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_librdkafka_fallback_0_9_both_ways(broker, codec):
    topic = f"rdk-old-{codec}"
    old = {"bootstrap.servers": broker.bootstrap, "api.version.request": False, "broker.version.fallback": "0.9.0"}
    producer = Producer({**old, "compression.codec": codec})
    for i in range(20):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    settings = {k: v for k, v in old.items() if k != "bootstrap.servers"}
    got = [(m.offset(), m.key(), m.value()) for m in ck_consume(broker.bootstrap, topic, 20, **settings)]
    assert got == [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kcat_with_0_9_fallback_both_ways(broker, codec):
    old = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]
    base = ["kcat", "-b", broker.bootstrap, *old, "-t", f"kcat-old-{codec}"]
    lines = "".join(f"key{i}:value{i}\n" for i in range(15))
    produced = subprocess.run(base + ["-P", "-K:", "-z", codec], input=lines, capture_output=True, text=True,
                              timeout=30)  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(base + ["-C", "-e", "-o", "beginning", "-f", "%o %k %s\\n"], capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    assert consumed.stdout.splitlines() == [f"{i} key{i} value{i}" for i in range(15)], consumed.stderr
    got = kp_consume(broker.bootstrap, f"kcat-old-{codec}", 15)  # a new client reads the up-converted log
    assert [(m.offset, m.key, m.timestamp) for m in got] == [(i, f"key{i}".encode(), -1) for i in range(15)]


def _many(n: int) -> list:
    return [(f"key-{i}".encode(), f"value-{i}-".encode() * (1 + i % 7), [], BASE_TS + i) for i in range(n)]


def _produce_in_small_batches(bootstrap: str, topic: str, records: list, codec) -> None:
    """Batches of 5 records (about 400 bytes): a 2 KiB slice holds several, whose v1 messages outgrow it."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec)
    offsets = []
    for i in range(0, len(records), 5):
        batch = records[i : i + 5]
        futures = [producer.send(topic, key=k, value=v, timestamp_ms=ts, partition=0) for k, v, _, ts in batch]
        producer.flush(30)
        offsets += [f.get(30).offset for f in futures]
    producer.close(5)
    assert offsets == list(range(len(records)))


@pytest.mark.parametrize("codec", [None, "lz4"])
@pytest.mark.parametrize("old", ["0.9", "0.10.1"])
def test_old_kafka_python_with_small_fetches_reads_every_record_once(broker, old, codec):
    """Answers are cut at their declared size (KIP-283): the client drops the partial tail and asks again."""
    topic = f"small-fetch-{old}-{codec}"
    records = _many(400)
    _produce_in_small_batches(broker.bootstrap, topic, records, codec)
    used = _read_aheads_used(broker)
    got = kp_consume(broker.bootstrap, topic, 400, api_version=OLD[old], max_partition_fetch_bytes=2048)
    assert [(m.offset, m.key, m.value) for m in got] == [(i, k, v) for i, (k, v, _, _) in enumerate(records)]
    counter = ("kafka_server_brokertopicmetrics_fetchmessageconversions_total", (("topic", topic),))
    assert broker.scrape()[counter] >= 400
    assert _read_aheads_used(broker) >= used + 5  # answers after the first were converted ahead (read_ahead.py)


def _read_aheads_used(broker) -> float:
    return broker.scrape().get(("minibroker_fetch_conversion_read_ahead_total", (("outcome", "used"),)), 0.0)


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_librdkafka_0_9_with_small_fetches_reads_every_record_once(broker, codec):
    topic = f"rdk-small-{codec}"
    records = _many(400)
    _produce_in_small_batches(broker.bootstrap, topic, records, None if codec == "none" else codec)
    old = {"api.version.request": False, "broker.version.fallback": "0.9.0", "fetch.message.max.bytes": 2048}
    used = _read_aheads_used(broker)
    got = [(m.offset(), m.key(), m.value()) for m in ck_consume(broker.bootstrap, topic, 400, **old)]
    assert got == [(i, k, v) for i, (k, v, _, _) in enumerate(records)]
    assert _read_aheads_used(broker) >= used + 5
