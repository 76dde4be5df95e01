"""Compressed record data with bytes after its stream, through Produce and Fetch on a real broker (``dispatch``).

Kafka reads a batch's records through its codec's stream until that stream ends (``DefaultRecordBatch``'s
iterator, then ``ensureNoneRemaining``; ``DeepRecordsIterator`` for magic 0/1 wrappers): gzip members after
the first are read on, bytes that form no gzip header are not; nothing after an LZ4 end mark is read; bytes
after a zstd frame that are no frame make the stream throw (UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

import gzip

import zstandard

from protocol import ErrorCode
from protocol.records import Codec, compress, iter_batches
from tests.broker.test_fetch_rules import by_partition, fetch_body
from tests.broker.test_log_validator import NOW, RECS, _batch, _legacy_message, _v2_with_payload

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker: a fixture)


async def _produce(broker, topic: str, records: bytes, version: int = 9) -> int:
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=bytes(records))
    resp = await call(broker, 0, version, req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])]))
    return resp.responses[0].partition_responses[0].error_code


async def _fetched(broker, topic: str, version: int = 12) -> list:
    got = by_partition(await call(broker, 1, version, fetch_body({topic: {0: 0}})))[topic, 0]
    assert got.error_code == ErrorCode.NONE
    return [(r.offset, r.key, r.value) for b in iter_batches(memoryview(bytes(got.records))) for r in b]


def _records_section(records) -> bytes:
    return bytes(_batch(records)[61:])


async def test_gzip_members_are_all_read_and_garbage_after_them_ignored(broker):
    await create_ok(broker, "gz")
    section = _records_section(RECS)
    cut = len(_records_section(RECS[:2]))  # the first two records in one member, the third in another
    payload = gzip.compress(section[:cut]) + gzip.compress(section[cut:]) + b"not a gzip header" * 3
    assert await _produce(broker, "gz", _v2_with_payload(Codec.GZIP, payload)) == ErrorCode.NONE
    expected = [(0, b"k1", b"v1"), (1, b"k2", None), (2, None, b"v3")]
    assert await _fetched(broker, "gz") == expected
    assert await _fetched(broker, "gz", version=3) == expected  # down-converted to magic 1: decompressed again


async def test_a_legacy_wrapper_with_bytes_after_its_stream_is_up_converted(broker):
    await create_ok(broker, "legacy")
    inner = bytes(_batch([(b"k", b"v", NOW)], magic=1))
    for codec, tail in ((Codec.GZIP, b"\x00junk"), (Codec.LZ4, b"\x00junk"), (Codec.SNAPPY, b"\x00")):
        wrapper = _legacy_message(1, codec, compress(codec, inner, magic=1) + tail)
        assert await _produce(broker, "legacy", wrapper, version=2) == ErrorCode.NONE
    assert [(o, v) for o, _, v in await _fetched(broker, "legacy")] == [(0, b"v"), (1, b"v"), (2, b"v")]


async def test_zstd_frames_are_all_read_and_garbage_after_one_is_unknown_server_error(broker):
    await create_ok(broker, "zs")
    section = _records_section(RECS)
    z = zstandard.ZstdCompressor(write_content_size=False)  # as the Java producer writes them
    cut = len(_records_section(RECS[:1]))
    two_frames = z.compress(section[:cut]) + z.compress(section[cut:])
    assert await _produce(broker, "zs", _v2_with_payload(Codec.ZSTD, two_frames)) == ErrorCode.NONE
    assert [o for o, _, _ in await _fetched(broker, "zs")] == [0, 1, 2]
    garbage = _v2_with_payload(Codec.ZSTD, z.compress(section) + b"garbage")
    assert await _produce(broker, "zs", garbage) == ErrorCode.UNKNOWN_SERVER_ERROR
