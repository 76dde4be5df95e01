"""KIP-390 topic compression levels through confluent-kafka's AdminClient, producer and consumer."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from protocol.records import Codec, compress, decompress, iter_batches

from .clients import ck_consume

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _values(n: int) -> list[bytes]:
    return [(" ".join(f"field{(i * j) % 53}={j}" for j in range(40))).encode() for i in range(n)]


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.codec": "none"})
    for i, value in enumerate(values):
        producer.produce(topic, key=f"k{i}".encode(), value=value, partition=0)
    assert producer.flush(30) == 0


def test_topics_compress_at_their_configured_level(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    levels = {"gz1": ("gzip", "compression.gzip.level", "1"), "gz9": ("gzip", "compression.gzip.level", "9"),
              "lz4hc": ("lz4", "compression.lz4.level", "12"), "lz4fast": ("lz4", "compression.lz4.level", "9")}  # fmt: skip
    topics = [NewTopic(name, 1, 1, config={"compression.type": codec, key: level})
              for name, (codec, key, level) in levels.items()]  # fmt: skip
    for future in admin.create_topics(topics).values():
        future.result(15)
    resource = ConfigResource("topic", "gz1")
    described = admin.describe_configs([resource])[resource].result(15)
    assert described["compression.gzip.level"].value == "1"
    assert described["compression.gzip.level"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["compression.zstd.level"].value == "3" and described["compression.zstd.level"].is_default
    values = _values(300)
    for name in levels:
        _produce(broker.bootstrap, name, values)  # uncompressed: the broker compresses at the topic's level
        got = ck_consume(broker.bootstrap, name, len(values))
        assert [(m.offset(), m.key(), m.value()) for m in got] == [(i, f"k{i}".encode(), v) for i, v in enumerate(values)]
    size = {name: (broker.data_dir / f"{name}-0" / f"{0:020d}.log").stat().st_size for name in levels}
    assert size["gz9"] < size["gz1"] and size["lz4hc"] < size["lz4fast"]


@pytest.mark.parametrize("key, value", [("compression.lz4.level", "18"), ("compression.gzip.level", "0"),
                                        ("compression.zstd.level", "23")])  # fmt: skip
def test_out_of_range_levels_are_invalid_config(broker, key, value):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    future = admin.create_topics([NewTopic("bad", 1, 1, config={key: value})])["bad"]
    with pytest.raises(KafkaException) as caught:
        future.result(15)
    assert caught.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert key in caught.value.args[0].str()


def test_broker_level_keys_set_every_topics_level(broker_factory):
    broker = broker_factory(compression_zstd_level="-5")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("z", 1, 1, config={"compression.type": "zstd"})])["z"].result(15)
    resource = ConfigResource("topic", "z")
    entry = admin.describe_configs([resource])[resource].result(15)["compression.zstd.level"]
    assert entry.value == "-5" and entry.source == ConfigSource.STATIC_BROKER_CONFIG.value
    values = _values(50)
    _produce(broker.bootstrap, "z", values)
    got = ck_consume(broker.bootstrap, "z", len(values))
    assert [m.value() for m in got] == values
    stored = list(iter_batches(memoryview((broker.data_dir / "z-0" / f"{0:020d}.log").read_bytes())))
    for batch in stored:  # each one as zstd writes it at level -5
        plain = decompress(Codec.ZSTD, batch.records_section)
        assert batch.compression is Codec.ZSTD and bytes(batch.records_section) == compress(Codec.ZSTD, plain, level=-5)
