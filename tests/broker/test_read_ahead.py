"""Down-conversion read-ahead (``broker/read_ahead.py``): used only for the very same slice, never stale.

An old-format client reading a partition from front to back on one connection
must get exactly the bytes a connection without read-ahead gets, Fetch by
Fetch, while the read-aheads are used; and when the partition changed in
between (the topic deleted and made again, another limit) the read-ahead is
dropped and the answer is the new data.
"""

from __future__ import annotations

import pytest

from broker import read_ahead
from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder
from protocol.records import lazy_convert
from tests.protocol.records.oracle import kp_read

from ._admin_client import broker, call, create_ok, fake_connection, req, sub  # noqa: F401  (broker is a fixture)

TS0 = 1_700_000_000_000


def _batch(first: int, n: int, codec: Codec, tag: bytes = b"v") -> bytes:
    b = RecordBatchBuilder(compression=codec)
    for i in range(n):
        b.append(b"key-%d" % (first + i), tag + bytes([(first + i) % 251]) * 300, timestamp=TS0 + first + i)
    return b.build()


async def _produce(broker, topic: str, batches: int, codec: Codec, partition: int = 0, tag: bytes = b"v") -> None:
    Data = sub(0, "TopicProduceData")
    for i in range(batches):
        part = Data.PartitionProduceData(index=partition, records=_batch(i * 20, 20, codec, tag))
        body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
        resp = await call(broker, 0, 7, body)
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def _fetch(broker, topic: str, version: int, offset: int, max_bytes: int, connection, partition: int = 0):
    Topic = sub(1, "FetchTopic")
    part = Topic.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
               topics=[Topic(topic=topic, partitions=[part])])  # fmt: skip
    got = (await call(broker, 1, version, body, connection=connection)).responses[0].partitions[0]
    assert got.error_code == ErrorCode.NONE
    return bytes(got.records or b"")


def _next(data: bytes, offset: int) -> int:
    read = kp_read(data)
    return max(r[0] for r in read) + 1 if read else offset


def _outcomes(broker) -> tuple[float, float]:
    value = broker.metrics.registry.get_sample_value
    return tuple(value("minibroker_fetch_conversion_read_ahead_total", {"outcome": o}) or 0 for o in ("used", "dropped"))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 3000)  # several chunks per answer


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name)
@pytest.mark.parametrize("version", [1, 3])
async def test_a_client_reading_on_gets_what_a_fresh_connection_gets(broker, codec, version):
    await create_ok(broker, "seq", configs={"compression.type": "producer"})
    await _produce(broker, "seq", 40, codec)
    conn, offset, fetches = fake_connection(), 0, 0
    while offset < 800:
        data = await _fetch(broker, "seq", version, offset, 20_000, conn)
        assert data == await _fetch(broker, "seq", version, offset, 20_000, fake_connection())
        offset, fetches = _next(data, offset), fetches + 1
        assert fetches < 200, "no progress"
    used, dropped = _outcomes(broker)
    assert used >= fetches - 2 and dropped <= 1


async def test_a_topic_made_again_drops_the_read_ahead(broker):
    await create_ok(broker, "again", configs={"compression.type": "producer"})
    await _produce(broker, "again", 10, Codec.LZ4, tag=b"old")
    conn = fake_connection()
    offset = _next(await _fetch(broker, "again", 3, 0, 8000, conn), 0)
    assert ("again", 0) in conn.read_ahead
    resp = await call(broker, 20, 4, req(20, topic_names=["again"], timeout_ms=5000))
    assert resp.responses[0].error_code == ErrorCode.NONE
    await create_ok(broker, "again", configs={"compression.type": "producer"})
    await _produce(broker, "again", 10, Codec.LZ4, tag=b"new")
    data = await _fetch(broker, "again", 3, offset, 8000, conn)
    assert data == await _fetch(broker, "again", 3, offset, 8000, fake_connection())
    assert all(r[3].startswith(b"new") for r in kp_read(data)) and kp_read(data)
    assert _outcomes(broker) == (0, 1)


async def test_another_limit_or_version_drops_it_and_answers_as_without(broker):
    await create_ok(broker, "limits", configs={"compression.type": "producer"})
    await _produce(broker, "limits", 20, Codec.NONE)
    conn = fake_connection()
    offset = _next(await _fetch(broker, "limits", 3, 0, 8000, conn), 0)
    for version, limit in ((3, 9000), (1, 8000)):
        data = await _fetch(broker, "limits", version, offset, limit, conn)
        assert data == await _fetch(broker, "limits", version, offset, limit, fake_connection())
    assert _outcomes(broker) == (0, 2)


async def test_a_connection_holds_read_aheads_for_a_few_partitions(broker):
    partitions = read_ahead.MAX_PARTITIONS + 3
    await create_ok(broker, "many", partitions=partitions, configs={"compression.type": "producer"})
    conn = fake_connection()
    for p in range(partitions):
        await _produce(broker, "many", 3, Codec.NONE, partition=p)
        await _fetch(broker, "many", 3, 0, 5000, conn, partition=p)
    assert list(conn.read_ahead) == [("many", p) for p in range(read_ahead.MAX_PARTITIONS)]
    offset = _next(await _fetch(broker, "many", 3, 0, 5000, fake_connection(), partition=0), 0)
    await _fetch(broker, "many", 3, offset, 5000, conn, partition=0)  # takes its own, then gets one again
    assert len(conn.read_ahead) == read_ahead.MAX_PARTITIONS and _outcomes(broker)[0] == 1


async def test_a_fetch_from_the_offset_read_ahead_converts_nothing_before_it_answers(broker, monkeypatch):
    from broker import fetch_reader

    await create_ok(broker, "whole", configs={"compression.type": "producer"})
    await _produce(broker, "whole", 30, Codec.LZ4)
    started: list[int] = []
    real = fetch_reader.start_down_conversion

    def counted(piece, **kw):
        started.append(kw["fetch_offset"])
        return real(piece, **kw)

    monkeypatch.setattr(fetch_reader, "start_down_conversion", counted)
    conn, offset, fetches = fake_connection(), 0, 0
    while offset < 600:
        data = await _fetch(broker, "whole", 3, offset, 20_000, conn)
        offset, fetches = _next(data, offset), fetches + 1
    assert fetches > 3 and started == [0]  # each later Fetch asked from where its read-ahead had converted
    assert _outcomes(broker) == (fetches - 1, 0)
    assert await _fetch(broker, "whole", 3, 0, 20_000, fake_connection()) and started == [0, 0]  # no read-ahead
