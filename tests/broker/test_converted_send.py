"""Fetch v0-v3 answers converted while they are sent (KIP-283), in-process through ``dispatch``.

An old client must make progress through any log: each answer is exactly as
long as it declares, reads as a run of whole messages (a cut-off or overflow
tail is dropped by the client), and fetching again from the offset after the
last whole message eventually returns every record once, in order. Batches
that old formats cannot carry are read past.
"""

from __future__ import annotations

import struct
import threading
import time

import pytest

from broker import converted_send
from broker.converted_send import ConvertedRecords
from protocol import ErrorCode, UnsupportedCompressionError
from protocol.records import Codec, RecordBatchBuilder
from protocol.records import lazy_convert
from protocol.records.lazy_convert import BytesSource, start_down_conversion
from tests.protocol.records.oracle import kp_read

from ._admin_client import broker, call, collect, create_ok, req, sub  # noqa: F401  (broker is a fixture)

TS0 = 1_700_000_000_000


def _batch(first: int, n: int, codec: Codec, size: int = 200, *, at: int | None = None) -> bytes:
    """Records for offsets ``first``...; the batch says ``at`` (0 when producing: the broker assigns)."""
    b = RecordBatchBuilder(compression=codec, base_offset=first if at is None else at)
    for i in range(n):
        b.append(b"key-%d" % (first + i), bytes([(first + i) % 251]) * size, timestamp=TS0 + first + i)
    return b.build()


async def _produce_raw(broker, topic: str, data: bytes) -> None:
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=data)
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    resp = await call(broker, 0, 7, body)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def _fetch(broker, topic: str, version: int, offset: int, max_bytes: int):
    Topic = sub(1, "FetchTopic")
    part = Topic.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
               topics=[Topic(topic=topic, partitions=[part])])  # fmt: skip
    return (await call(broker, 1, version, body)).responses[0].partitions[0]


async def _read_all(broker, topic: str, version: int, max_bytes: int, end: int) -> tuple[list, int]:
    offset, got, fetches = 0, [], 0
    while offset < end:
        fetches += 1
        assert fetches < 500, "no progress"
        data = (await _fetch(broker, topic, version, offset, max_bytes)).records or b""
        records = [r for r in kp_read(data) if r[0] >= offset]  # a v1 wrapper may start before it
        if records:
            got += records
            offset = records[-1][0] + 1
    return got, fetches


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name)
@pytest.mark.parametrize(("version", "max_bytes"), [(1, 5000), (1, 1 << 20), (3, 700), (3, 5000), (3, 1 << 20)])
async def test_old_fetches_read_every_record_once(broker, codec, version, max_bytes):
    await create_ok(broker, "old", configs={"compression.type": "producer"})
    for first in range(0, 300, 20):
        await _produce_raw(broker, "old", _batch(first, 20, codec, at=0))
    got, fetches = await _read_all(broker, "old", version, max_bytes, 300)
    assert [(r[0], r[2], r[3]) for r in got] == [(i, b"key-%d" % i, bytes([i % 251]) * 200) for i in range(300)]
    assert fetches > 1 if max_bytes < 1 << 20 else fetches >= 1
    conversions = broker.metrics.registry.get_sample_value(
        "kafka_server_brokertopicmetrics_fetchmessageconversions_total", {"topic": "old"})  # fmt: skip
    assert conversions >= 300


async def test_v0_to_v2_get_nothing_when_the_first_batch_is_over_the_limit(broker):
    await create_ok(broker, "big")
    await _produce_raw(broker, "big", _batch(0, 20, Codec.NONE, at=0))  # about 4.5 KB
    for version in (0, 1, 2):
        assert not (await _fetch(broker, "big", version, 0, 700)).records  # Kafka's answer: ask for more bytes
    assert kp_read((await _fetch(broker, "big", 3, 0, 700)).records)  # v3 sends the first batch whole


async def test_answer_is_as_long_as_declared_and_cut_mid_message(broker):
    await create_ok(broker, "cut")
    for first in range(0, 100, 10):
        await _produce_raw(broker, "cut", _batch(first, 10, Codec.NONE, at=0))
    data = (await _fetch(broker, "cut", 3, 0, 1 << 20)).records
    stored = broker.topics.partition("cut", 0).log.read(0, 1 << 20, min_one_message=True).read_bytes()
    assert len(data) == len(stored)  # v1 messages are longer than v2 records: cut to the slice's size
    got = kp_read(data)
    assert 0 < len(got) < 100 and [r[0] for r in got] == list(range(len(got)))


async def test_batches_that_convert_to_nothing_are_read_past(broker):
    await create_ok(broker, "emptied", configs={"segment.bytes": "1024"})
    log = broker.topics.partition("emptied", 0).log
    for base in (0, 5):  # what the cleaner leaves of a batch whose records all went
        empty = RecordBatchBuilder.empty_batch(base_offset=base, last_offset=base + 4, max_timestamp=TS0)
        log.append(empty, base, base + 4, TS0)
    log.roll()
    await _produce_raw(broker, "emptied", _batch(10, 3, Codec.NONE, at=0))
    for version in (1, 3):
        part = await _fetch(broker, "emptied", version, 2, 1 << 20)
        assert [r[0] for r in kp_read(part.records)] == [10, 11, 12]
    log_end = await _fetch(broker, "emptied", 4, 10, 1 << 20)
    assert log_end.high_watermark == 13


# -- ConvertedRecords.send ---------------------------------------------------------------


def _conversion(*batches: bytes):
    return start_down_conversion(BytesSource(b"".join(batches)), target_magic=1, fetch_offset=0)


async def _send(records: ConvertedRecords) -> bytes:
    return await collect([records])


async def test_send_stops_converting_at_the_declared_size(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)  # one batch per chunk
    batches = [_batch(i * 10, 10, Codec.NONE, size=10) for i in range(6)]  # v1 messages: twice the bytes
    conv = _conversion(*batches)
    counts, done = [], []  # one count for the first batches, then one per chunk converted
    data = await _send(ConvertedRecords(conv, counts.append, done.append))
    assert len(data) == conv.size and 1 < len(counts) < 6  # v1 output outgrows the slice before its end
    assert counts == [10] * len(counts) and len(done) == 1 and done[0] >= 0


async def test_send_pads_over_a_chunk_that_fails():
    conv = _conversion(_batch(0, 5, Codec.LZ4), _batch(5, 5, Codec.ZSTD))
    counts = []
    data = await _send(ConvertedRecords(conv, counts.append, lambda s: None))
    with pytest.raises(UnsupportedCompressionError):
        conv.start(_batch(5, 5, Codec.ZSTD))()
    assert len(data) == conv.size and [r[0] for r in kp_read(data)] == list(range(5))
    tail = data[len(conv.first.records) :]
    assert struct.unpack_from(">qi", tail) == (-1, len(tail) + 1) and counts == [5]


async def test_a_corrupt_stored_batch_fails_an_old_fetch_and_counts_as_failed(broker):
    await create_ok(broker, "bad")
    await _produce_raw(broker, "bad", _batch(0, 5, Codec.NONE, at=0))
    log = broker.topics.partition("bad", 0).log
    with open(log.segments[0].path, "r+b") as f:  # a byte of the last record: the CRC no longer matches
        f.seek(-10, 2)
        byte = f.read(1)[0]
        f.seek(-10, 2)
        f.write(bytes([byte ^ 0xFF]))
    failed = {"topic": "bad"}
    name = "kafka_server_brokertopicmetrics_failedfetchrequests_total"
    assert broker.metrics.registry.get_sample_value(name, failed) is None
    corrupt = await _fetch(broker, "bad", 3, 0, 1 << 20)
    assert (corrupt.error_code, corrupt.high_watermark) == (ErrorCode.CORRUPT_MESSAGE, -1)  # Kafka: offsets -1
    assert broker.metrics.registry.get_sample_value(name, failed) == 1
    assert (await _fetch(broker, "bad", 11, 9, 1 << 20)).error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # expected
    assert (await _fetch(broker, "bad", 11, 0, 1 << 20)).error_code == ErrorCode.NONE  # sent as stored
    assert broker.metrics.registry.get_sample_value(name, failed) == 1


def _threads_of_pieces(monkeypatch) -> list[int]:
    """Record the thread each piece of a conversion is made in."""
    seen: list[int] = []
    real = converted_send.fitted_pieces

    def watched(conversion):
        for item in real(conversion):
            seen.append(threading.get_ident())
            yield item

    monkeypatch.setattr(converted_send, "fitted_pieces", watched)
    return seen


async def test_slow_chunks_move_the_rest_of_the_conversion_to_a_worker_thread(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)  # one batch per chunk
    batches = [_batch(i * 10, 10, Codec.GZIP, size=50) for i in range(6)]
    seen, loop_thread, answers = _threads_of_pieces(monkeypatch), threading.get_ident(), []
    for slow in (True, False):
        monkeypatch.setattr(converted_send, "OFFLOAD_AFTER_S", 0.0 if slow else 60.0)
        seen.clear()
        conv, done = _conversion(*batches), []
        answers.append(await _send(ConvertedRecords(conv, lambda n: None, done.append)))
        assert len(seen) > 2 and seen[0] == loop_thread
        assert all((t != loop_thread) == slow for t in seen[1:])
        assert len(answers[-1]) == conv.size and done[0] > 0  # the worker thread's time is counted too
    assert answers[0] == answers[1]
    assert [r[0] for r in kp_read(answers[0])] == list(range(len(kp_read(answers[0])))) and len(kp_read(answers[0])) > 20


async def test_chunks_that_wait_without_working_stay_on_the_loop_thread(monkeypatch):
    """Time off the CPU (waiting for the C helper's job in hand, or for a core) keeps no chunk from the loop."""
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)  # one batch per chunk
    batches = [_batch(i * 10, 10, Codec.LZ4, size=50) for i in range(5)]
    expected = await _send(ConvertedRecords(_conversion(*batches), lambda n: None, lambda s: None))
    real_start = lazy_convert.LazyDownConversion.start

    def waiting_start(self, chunk):
        end = real_start(self, chunk)

        def waited():
            time.sleep(2 * converted_send.OFFLOAD_AFTER_S)  # as if the helper were still on it
            return end()

        return waited

    monkeypatch.setattr(lazy_convert.LazyDownConversion, "start", waiting_start)
    seen, loop_thread, done = _threads_of_pieces(monkeypatch), threading.get_ident(), []
    answer = await _send(ConvertedRecords(_conversion(*batches), lambda n: None, done.append))
    assert answer == expected and len(seen) > 3 and set(seen) == {loop_thread}
    assert done[0] >= 2 * converted_send.OFFLOAD_AFTER_S  # the waits still count as conversion time
