"""aiokafka 0.14 (asyncio) against a real broker process.

aiokafka has its own protocol stack (not kafka-python's, not librdkafka), so it
is one more independent client: produce with every codec and read back with
``assign`` (keys, values, headers, timestamps and offsets exact), the
idempotent producer (InitProducerId and sequence numbers), a group consumer
that commits and a second one that resumes from the commit, the admin client,
and the transactional producer with read_committed and read_uncommitted
consumers.
aiokafka 0.14 has no settings for old protocol versions any more (its
``api_version`` is deprecated and ignored), so it only covers today's formats.
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from protocol.records import iter_batches

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

BASE_TS = 1_760_000_000_000
STEP_S = 60  # every asyncio step of a test is bounded, so a broker that stops answering fails it


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, STEP_S))


def _records(n: int, tag: str) -> list[tuple]:
    return [
        (f"k-{tag}-{i}".encode(), f"v-{tag}-{i}".encode() * (i % 3 + 1), [("h", str(i).encode())], BASE_TS + i)
        for i in range(n)
    ] + [(b"tomb", None, [], BASE_TS + n), (None, b"keyless", [("x", b"")], BASE_TS + n + 1)]


async def _produce(bootstrap: str, topic: str, records: list[tuple], **config) -> list:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=v, key=k, partition=0, timestamp_ms=ts, headers=h)
                   for k, v, h, ts in records]  # fmt: skip
        return [await f for f in futures]
    finally:
        await producer.stop()


async def _read(bootstrap: str, topic: str, count: int, **config) -> list:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    await consumer.start()
    try:
        if "group_id" in config:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, 0)])
            await consumer.seek_to_beginning()
        got: list = []
        while len(got) < count:
            for batch in (await consumer.getmany(timeout_ms=1000)).values():
                got += batch
        if "group_id" in config:
            await consumer.commit()
        return got
    finally:
        await consumer.stop()


def _exact(got: list) -> list[tuple]:
    return [(m.offset, m.key, m.value, [(k, v) for k, v in m.headers], m.timestamp) for m in got]


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_codec(broker, codec):
    topic = f"aio-{codec or 'none'}"
    records = _records(40, str(codec))
    meta = run(_produce(broker.bootstrap, topic, records, compression_type=codec))
    assert [m.offset for m in meta] == list(range(len(records)))
    got = run(_read(broker.bootstrap, topic, len(records)))
    assert _exact(got) == [(i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(records)]


def test_idempotent_producer_gets_a_producer_id_and_stores_each_record_once(broker):
    records = _records(30, "idem")
    meta = run(_produce(broker.bootstrap, "aio-idem", records, enable_idempotence=True, acks="all"))
    assert [m.offset for m in meta] == list(range(len(records)))
    stored = run(_read(broker.bootstrap, "aio-idem", len(records)))
    assert [m.key for m in stored] == [k for k, *_ in records]
    log = (broker.data_dir / "aio-idem-0" / f"{0:020d}.log").read_bytes()
    batches = list(iter_batches(memoryview(log)))
    assert batches and all(b.producer_id >= 0 and b.producer_epoch == 0 for b in batches)
    assert [b.base_sequence for b in batches] == [b.base_offset for b in batches]  # one producer, from 0
    scrape = broker.scrape()
    assert scrape[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "aio-idem"),))] == len(records)


def test_group_consumer_commits_and_a_new_member_resumes_after_the_commit(broker):
    first, second = _records(10, "a"), _records(10, "b")
    run(_produce(broker.bootstrap, "aio-group", first))
    got = run(_read(broker.bootstrap, "aio-group", len(first), group_id="aio", auto_offset_reset="earliest"))
    assert [m.offset for m in got] == list(range(len(first)))
    run(_produce(broker.bootstrap, "aio-group", second))
    resumed = run(_read(broker.bootstrap, "aio-group", len(second), group_id="aio", auto_offset_reset="earliest"))
    assert _exact(resumed) == [(len(first) + i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(second)]


async def _admin(bootstrap: str) -> dict:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("aio-admin", 2, 1, topic_configs={"cleanup.policy": "compact"})])
        topics = await admin.list_topics()
        (described,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "aio-admin")])
        return {"topics": topics, "configs": {c[0]: c[1] for c in described.resources[0][4]}}
    finally:
        await admin.close()


def test_admin_creates_a_topic_with_configs_and_describes_it(broker):
    found = run(_admin(broker.bootstrap))
    assert "aio-admin" in found["topics"]
    assert found["configs"]["cleanup.policy"] == "compact"
    assert found["configs"]["retention.ms"] == "604800000"


async def _transactions(bootstrap: str, topic: str) -> None:
    """Commit two records, abort one, commit one more, through aiokafka's transactional producer."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aio-tx")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-1", key=b"a", partition=0)
            await producer.send_and_wait(topic, b"committed-2", key=b"b", partition=0)
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted", key=b"c", partition=0)
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-3", key=b"d", partition=0)
    finally:
        await producer.stop()


def test_transactional_producer_commits_and_aborts_for_read_committed_consumers(broker):
    run(_transactions(broker.bootstrap, "aio-tx"))
    # offsets: 0 a, 1 b, 2 COMMIT marker, 3 c, 4 ABORT marker, 5 d, 6 COMMIT marker
    committed = run(_read(broker.bootstrap, "aio-tx", 3, isolation_level="read_committed"))
    assert [(m.offset, m.key, m.value) for m in committed] == [
        (0, b"a", b"committed-1"), (1, b"b", b"committed-2"), (5, b"d", b"committed-3")]
    everything = run(_read(broker.bootstrap, "aio-tx", 4))
    assert [(m.offset, m.value) for m in everything] == [
        (0, b"committed-1"), (1, b"committed-2"), (3, b"aborted"), (5, b"committed-3")]
