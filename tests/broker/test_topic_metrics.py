"""The BrokerTopicMetrics counters (``kafka_server_brokertopicmetrics_*``) as Kafka marks them.

A real broker (the ``broker`` fixture) takes frames through ``dispatch``; the
counters are read from its registry. What each test pins, from Kafka's
``ReplicaManager.appendToLocalLog``/``fetchMessages`` and ``BrokerTopicStats``:

* each meter also has Kafka's all-topics series (``topic=""``);
* a deleted topic's series leave the endpoint (``removeMetrics``), and a topic
  made again under its name counts from zero;
* Produce: every partition the append sees is a produce request, those Kafka
  refuses before it (v3+ records of the wrong shape) are not; failed ones
  are the unexpected failures only (not too large, not corrupt); rejected
  bytes are those of too-large batches; a duplicate is counted in again; and
  bytes in are the request's bytes, not the up-converted ones;
* the broker's own appends (coordinator records, transaction markers) count
  in their topics, as Kafka's coordinators append through ``appendRecords``;
* Fetch: every partition read is a fetch request, once per Fetch, those an
  incremental fetch leaves out of its answer too;
"""

from __future__ import annotations

from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder

from ._admin_client import broker, call, create_ok, produce, req, sub  # noqa: F401  (broker: a fixture)
from ._group_client import clock, commit, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_fetch_sessions import fetch as session_fetch

BTM = "kafka_server_brokertopicmetrics_"


def counted(broker, name: str, topic: str) -> float | None:
    return broker.metrics.registry.get_sample_value(f"{BTM}{name}_total", {"topic": topic})


async def delete_topic(broker, name: str) -> None:
    resp = await call(broker, 20, 4, req(20, topic_names=[name], timeout_ms=1000))
    assert resp.responses[0].error_code == 0


async def test_a_deleted_topics_counters_leave_the_endpoint(broker):
    await create_ok(broker, "gone")
    await create_ok(broker, "kept")
    await produce(broker, "gone", [1, 2, 3])
    await produce(broker, "kept", [1])
    assert counted(broker, "messagesin", "gone") == 3
    await delete_topic(broker, "gone")
    names = ("messagesin", "bytesin", "totalproducerequests")
    assert [counted(broker, name, "gone") for name in names] == [None, None, None]
    assert counted(broker, "messagesin", "kept") == 1  # the others stay
    await create_ok(broker, "gone")
    await produce(broker, "gone", [1])
    assert counted(broker, "messagesin", "gone") == 1  # counted afresh


def batch(n: int = 1, *, magic: int = 2, value: bytes = b"v", pid: int = -1, seq: int = -1) -> bytes:
    b = RecordBatchBuilder(magic=magic, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
    for i in range(n):
        b.append(b"k%d" % i, value, timestamp=1_700_000_000_000)
    return bytes(b.build())


async def send(broker, topic: str, records: bytes, version: int = 9) -> ErrorCode:
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=bytearray(records))
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    return ErrorCode((await call(broker, 0, version, body)).responses[0].partition_responses[0].error_code)


def produce_counts(broker, topic: str) -> dict[str, float | None]:
    names = ("totalproducerequests", "failedproducerequests", "bytesrejected", "messagesin", "bytesin")
    return {name: counted(broker, name, topic) for name in names}


async def test_errors_kafka_expects_are_not_failed_produce_requests(broker):
    """A too-large batch or a corrupt one is counted as a produce request, not as a failed one (Kafka's
    meter is for unexpected failures); the too-large one's bytes are rejected bytes."""
    await create_ok(broker, "small", configs={"max.message.bytes": "100"})
    big = batch(value=b"x" * 200)
    assert await send(broker, "small", big) == ErrorCode.MESSAGE_TOO_LARGE
    corrupt = bytearray(batch())
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    assert await send(broker, "small", bytes(corrupt)) == ErrorCode.CORRUPT_MESSAGE
    assert produce_counts(broker, "small") == {"totalproducerequests": 2, "failedproducerequests": None,
                                               "bytesrejected": len(big), "messagesin": None, "bytesin": None}


async def test_unexpected_errors_are_failed_produce_requests(broker):
    """Bad records and sequence errors come from the append: counted, and failed."""
    await create_ok(broker, "t")
    moved = bytearray(batch())
    moved[7] = 5  # baseOffset 5: clients must send 0
    assert await send(broker, "t", bytes(moved)) == ErrorCode.INVALID_RECORD
    assert await send(broker, "t", batch(pid=9, seq=0)) == ErrorCode.NONE
    assert await send(broker, "t", batch(pid=9, seq=5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    counts = produce_counts(broker, "t")
    assert (counts["totalproducerequests"], counts["failedproducerequests"]) == (3, 2)


async def test_records_refused_before_the_append_count_nowhere(broker):
    """Produce v3+ records Kafka's ``validateRecords`` refuses (two batches, a legacy batch, zstd below
    v7) never reach the append, whose meters stay untouched."""
    await create_ok(broker, "t")
    assert await send(broker, "t", batch() + batch()) == ErrorCode.INVALID_RECORD
    assert await send(broker, "t", batch(magic=1)) == ErrorCode.INVALID_RECORD
    zstd = RecordBatchBuilder(compression=Codec.ZSTD)
    zstd.append(b"k", b"v", timestamp=1)
    assert await send(broker, "t", bytes(zstd.build()), version=6) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert set(produce_counts(broker, "t").values()) == {None}


async def test_a_duplicate_is_counted_in_again(broker):
    """Kafka's log answers a retried idempotent batch as a successful append: its records and bytes are
    counted again."""
    await create_ok(broker, "t")
    records = batch(3, pid=9, seq=0)
    assert await send(broker, "t", records) == ErrorCode.NONE
    assert await send(broker, "t", records) == ErrorCode.NONE
    counts = produce_counts(broker, "t")
    assert (counts["messagesin"], counts["bytesin"]) == (6, 2 * len(records))


async def test_bytes_in_are_the_requests_bytes_not_the_up_converted_ones(broker):
    """``BytesInPerSec`` counts the records as the producer sent them (``records.sizeInBytes``), before
    the broker rebuilds magic-1 messages as a v2 batch."""
    await create_ok(broker, "t")
    legacy = batch(4, magic=1)
    assert await send(broker, "t", legacy, version=2) == ErrorCode.NONE
    counts = produce_counts(broker, "t")
    assert (counts["messagesin"], counts["bytesin"]) == (4, len(legacy))
    assert counted(broker, "producemessageconversions", "t") == 4


async def test_every_partition_an_incremental_fetch_reads_is_a_fetch_request(broker):
    """Kafka's ``fetchMessages`` counts each partition it reads, once per Fetch: an incremental fetch reads
    all of its session's partitions though its answer leaves out those with nothing new."""
    await create_ok(broker, "s", partitions=3)
    await produce(broker, "s", [1], partition=1)
    full = await session_fetch(broker, 0, 0, {"s": {0: 0, 1: 0, 2: 0}})
    assert counted(broker, "totalfetchrequests", "s") == 3
    quiet = await session_fetch(broker, full.session_id, 1, {"s": {1: 1}})  # the client caught up
    assert [t.partitions for t in quiet.responses] == []  # nothing new: nothing answered
    assert counted(broker, "totalfetchrequests", "s") == 6


async def test_the_all_topics_series_sums_every_topic_and_outlives_deletions(broker):
    """Kafka's all-topics meters (no topic tag; ``topic=""`` here, which Prometheus stores as no label)
    exist from the start, move with every topic's, and keep their count when a topic is deleted."""
    assert counted(broker, "messagesin", "") == 0 and counted(broker, "failedfetchrequests", "") == 0
    await create_ok(broker, "a")
    await create_ok(broker, "b")
    await produce(broker, "a", [1, 2])
    await produce(broker, "b", [1])
    assert counted(broker, "messagesin", "") == 3
    assert counted(broker, "totalproducerequests", "") == 2
    await delete_topic(broker, "a")
    assert counted(broker, "messagesin", "") == 3


async def test_the_brokers_own_appends_count_in_their_topics(groups_broker):
    """Kafka's coordinators append through ``ReplicaManager.appendRecords``: an offset commit counts in
    ``__consumer_offsets``' produce requests and messages and bytes in (and in the all-topics series)."""
    broker = groups_broker
    await create_ok(broker, "t")
    assert await commit(broker, "g", {("t", 0): 5}) == {("t", 0): ErrorCode.NONE}
    offsets = "__consumer_offsets"
    assert counted(broker, "totalproducerequests", offsets) == 1
    assert counted(broker, "messagesin", offsets) == 1
    assert counted(broker, "bytesin", offsets) > 0
    assert counted(broker, "messagesin", "") == 1


def test_a_topics_marks_are_kept_and_dropped_with_its_series():
    """``TopicCounter.labels`` hands out the same marks per topic (the produce path asks on every append), each
    topic's counting on its own series and the all-topics one; ``remove`` forgets them, so a topic made again
    under the name counts from zero on a new series, not on the removed one."""
    from broker.metrics import BrokerMetrics

    metrics = BrokerMetrics()
    first = metrics.messages_in.labels("a")
    assert metrics.messages_in.labels("a") is first
    first.inc(2)
    metrics.messages_in.labels("b").inc(5)
    sample = metrics.registry.get_sample_value
    assert [sample(f"{BTM}messagesin_total", {"topic": t}) for t in ("a", "b", "")] == [2, 5, 7]
    metrics.remove_topic("a")
    again = metrics.messages_in.labels("a")
    assert again is not first
    again.inc(1)
    assert [sample(f"{BTM}messagesin_total", {"topic": t}) for t in ("a", "")] == [1, 8]
