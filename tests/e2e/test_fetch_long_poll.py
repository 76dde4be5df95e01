"""Fetch long poll and limits over a real socket: woken by appends, bounded by max_wait_ms.

A Fetch with ``min_bytes=1`` on an empty partition must wait, be answered as
soon as another connection appends (not at ``max_wait_ms``), and carry the new
record; with nothing appended it must come back empty once ``max_wait_ms``
has passed. Out-of-range offsets get OFFSET_OUT_OF_RANGE, and the v3+ first
batch rule gives a whole batch even above ``partition_max_bytes``.
"""

from __future__ import annotations

import threading
import time

import pytest

from protocol import API_BY_KEY, ErrorCode, message_class
from protocol.records import RecordBatchBuilder, iter_batches

from .harness import raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]
FETCH, PRODUCE, CREATE = API_BY_KEY[1], API_BY_KEY[0], API_BY_KEY[19]


def _call(port: int, api, version: int, body):
    return raw_call(port, api.key, version, body)


def _create(port: int, name: str) -> None:
    req = message_class(CREATE, True)
    body = req(topics=[req.CreatableTopic(name=name, num_partitions=1, replication_factor=1)], timeout_ms=5000)
    assert _call(port, CREATE, 5, body).topics[0].error_code == 0


def _produce(port: int, topic: str, value: bytes, n: int = 1) -> None:
    b = RecordBatchBuilder()
    for i in range(n):
        b.append(b"k", value, timestamp=1_700_000_000_000 + i)
    req = message_class(PRODUCE, True)
    part = req.TopicProduceData.PartitionProduceData(index=0, records=b.build())
    body = req(acks=1, timeout_ms=5000, topic_data=[req.TopicProduceData(name=topic, partition_data=[part])])
    assert _call(port, PRODUCE, 9, body).responses[0].partition_responses[0].error_code == 0


def _fetch(port: int, topic: str, offset: int, max_wait_ms: int, partition_max_bytes: int = 1 << 20):
    req = message_class(FETCH, True)
    part = req.FetchTopic.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes)
    body = req(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
               topics=[req.FetchTopic(topic=topic, partitions=[part])])  # fmt: skip
    return _call(port, FETCH, 11, body).responses[0].partitions[0]


def test_waiting_fetch_is_woken_by_an_append(broker):
    _create(broker.port, "lp")
    timer = threading.Timer(0.5, _produce, args=(broker.port, "lp", b"wake up"))
    started = time.monotonic()
    timer.start()
    part = _fetch(broker.port, "lp", 0, max_wait_ms=10_000)
    elapsed = time.monotonic() - started
    timer.join()
    assert 0.4 < elapsed < 5, elapsed
    records = [r for b in iter_batches(memoryview(bytes(part.records))) for r in b]
    assert [(r.offset, r.value) for r in records] == [(0, b"wake up")]
    assert part.high_watermark == 1


def test_fetch_with_nothing_new_returns_empty_after_max_wait(broker):
    _create(broker.port, "quiet")
    started = time.monotonic()
    part = _fetch(broker.port, "quiet", 0, max_wait_ms=400)
    elapsed = time.monotonic() - started
    assert 0.35 < elapsed < 3, elapsed
    assert part.error_code == 0 and bytes(part.records or b"") == b""


def test_out_of_range_and_first_batch_rule(broker):
    _create(broker.port, "big")
    _produce(broker.port, "big", b"x" * 5000, n=3)
    assert _fetch(broker.port, "big", 99, max_wait_ms=0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    part = _fetch(broker.port, "big", 0, max_wait_ms=0, partition_max_bytes=100)
    batches = list(iter_batches(memoryview(bytes(part.records))))
    assert len(batches) == 1 and batches[0].records_count == 3  # whole batch despite the 100-byte limit


def test_metadata_returns_advertised_listener(broker_factory):
    broker = broker_factory(advertised_listeners="PLAINTEXT://broker.compose.internal:19092")
    meta = API_BY_KEY[3]
    body = _call(broker.port, meta, 9, message_class(meta, True)(topics=None))
    assert [(b.node_id, b.host, b.port) for b in body.brokers] == [(1, "broker.compose.internal", 19092)]
    assert body.controller_id == 1 and body.cluster_id


def test_each_listener_advertises_its_own_address_to_real_clients(broker_factory):
    """The docker-compose pair: containers use INTERNAL (advertised as a service name), the host uses EXTERNAL.
    A client on EXTERNAL must get an address it can reach back, or it could not produce at all."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    broker = broker_factory(listeners="INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                            listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                            advertised_listeners="INTERNAL://broker.compose.internal:29092",
                            inter_broker_listener_name="INTERNAL")  # fmt: skip
    internal, external = broker.ports
    meta, cluster, coord = API_BY_KEY[3], API_BY_KEY[60], API_BY_KEY[10]
    for port, want in ((internal, ("broker.compose.internal", 29092)), (external, ("127.0.0.1", external))):
        body = _call(port, meta, 9, message_class(meta, True)(topics=None))
        assert [(b.host, b.port) for b in body.brokers] == [want]
        described = _call(port, cluster, 0, message_class(cluster, True)(include_cluster_authorized_operations=False))
        assert [(b.host, b.port) for b in described.brokers] == [want]
        deadline = time.monotonic() + 10
        while (found := _call(port, coord, 1, message_class(coord, True)(key="g", key_type=0))).error_code and \
                time.monotonic() < deadline:  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created
            time.sleep(0.1)
        assert (found.error_code, found.host, found.port) == (0, *want)

    bootstrap = f"127.0.0.1:{external}"
    assert AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).brokers[1].host == "127.0.0.1"
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("via-external", key=b"k", value=b"v", headers=[("h", b"1")], timestamp=1_700_000_000_000)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ext", "enable.auto.commit": False})
    consumer.assign([TopicPartition("via-external", 0, 0)])
    msg = consumer.poll(20)
    consumer.close()
    assert msg is not None and msg.error() is None
    assert (msg.key(), msg.value(), msg.headers(), msg.timestamp()[1], msg.offset()) == (
        b"k", b"v", [("h", b"1")], 1_700_000_000_000, 0)  # fmt: skip


def _create_with(port: int, name: str, **configs: str) -> None:
    req = message_class(CREATE, True)
    cfg = [req.CreatableTopic.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()]
    body = req(topics=[req.CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=cfg)],
               timeout_ms=5000)  # fmt: skip
    assert _call(port, CREATE, 5, body).topics[0].error_code == 0


def _fetch_v(port: int, topic: str, version: int):
    req = message_class(FETCH, True)
    part = req.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    body = req(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
               topics=[req.FetchTopic(topic=topic, partitions=[part])])  # fmt: skip
    return _call(port, FETCH, version, body).responses[0].partitions[0]


def test_down_conversion_switches_and_zstd_topics_for_old_fetches(broker):
    _create_with(broker.port, "noconv", **{"message.downconversion.enable": "false"})
    _create_with(broker.port, "zstdtopic", **{"compression.type": "zstd"})
    for topic in ("noconv", "zstdtopic"):
        _produce(broker.port, topic, b"x")
    assert _fetch_v(broker.port, "noconv", 3).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert _fetch_v(broker.port, "zstdtopic", 2).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    modern = _fetch_v(broker.port, "noconv", 11)  # new clients are not affected
    assert modern.error_code == 0 and [b.magic for b in iter_batches(memoryview(bytes(modern.records)))] == [2]
    assert modern.high_watermark == 1
