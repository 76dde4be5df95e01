"""Fetch answers as Kafka's ``ReplicaManager.readFromLocalLog`` / ``KafkaApis.handleFetchRequest`` give them, in-process.

The byte limits and the v3+ first-batch rule, the ``current_leader_epoch``
check, the ``min_bytes`` cap, zstd topics for old versions, fetches with
nothing to read, and the offsets carried by a partition in error.
"""

from __future__ import annotations

import trio

from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder, iter_batches

from ._admin_client import broker, call, create_ok, produce, req, sub  # noqa: F401  (broker: a fixture)

BIG = 3000  # one record's value: its batch is larger than the limits below


def fetch_body(partitions: dict, *, min_bytes=0, max_bytes=1 << 20, max_wait_ms=0, pmax=1 << 20, epoch=-1,
               session_id=0, session_epoch=-1, isolation=0):  # fmt: skip
    T = sub(1, "FetchTopic")
    topics = [T(topic=topic, partitions=[T.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=pmax,
                                                          current_leader_epoch=epoch) for p, o in parts.items()])
              for topic, parts in partitions.items()]  # fmt: skip
    return req(1, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
               isolation_level=isolation, session_id=session_id, session_epoch=session_epoch, topics=topics,
               forgotten_topics_data=[], rack_id="")  # fmt: skip


def by_partition(resp) -> dict:
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


def batches(p) -> list:
    return list(iter_batches(memoryview(bytes(p.records or b""))))


async def produce_big(broker, topic: str, partition: int) -> None:
    """One batch of one ``BIG``-byte record."""
    Data = sub(0, "TopicProduceData")
    builder = RecordBatchBuilder()
    builder.append(b"k", b"x" * BIG, timestamp=1)
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[
        Data.PartitionProduceData(index=partition, records=builder.build())])])  # fmt: skip
    resp = await call(broker, 0, 9, body)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def two_partitions(broker, topic: str) -> None:
    """Partition 0: a small batch; partition 1: one batch of about ``BIG`` bytes."""
    await create_ok(broker, topic, partitions=2)
    await produce(broker, topic, [1], partition=0)
    await produce_big(broker, topic, 1)


async def test_a_later_partition_whose_first_batch_is_cut_gets_no_records(broker):
    await two_partitions(broker, "cut")
    for limits in ({"pmax": 1000}, {"max_bytes": 1500}):
        got = by_partition(await call(broker, 1, 12, fetch_body({"cut": {0: 0, 1: 0}}, **limits)))
        assert len(batches(got["cut", 0])) == 1
        second = got["cut", 1]
        assert (second.error_code, len(second.records or b""), second.high_watermark) == (ErrorCode.NONE, 0, 1)
    whole = by_partition(await call(broker, 1, 12, fetch_body({"cut": {0: 1, 1: 0}}, pmax=1000)))
    assert len(batches(whole["cut", 1])) == 1  # first with records: whole despite the limit


async def test_a_cut_partition_leaves_max_bytes_to_the_next_one(broker):
    await two_partitions(broker, "a")
    await create_ok(broker, "b")
    await produce(broker, "b", [1])
    small = len(by_partition(await call(broker, 1, 12, fetch_body({"b": {0: 0}})))["b", 0].records)
    body = fetch_body({"a": {0: 0, 1: 0}, "b": {0: 0}}, max_bytes=2 * small + 100)
    got = by_partition(await call(broker, 1, 12, body))
    assert len(got["a", 1].records or b"") == 0  # cut: nothing, and none of max_bytes spent
    assert [len(batches(got[key])) for key in (("a", 0), ("b", 0))] == [1, 1]


async def test_a_cut_first_batch_counts_for_neither_min_bytes_nor_bytes_out(broker):
    await two_partitions(broker, "w")
    small = len((by_partition(await call(broker, 1, 12, fetch_body({"w": {0: 0}}))))["w", 0].records)
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({"w": {0: 0, 1: 0}}, pmax=1000, min_bytes=small + 1, max_wait_ms=300)
        got = by_partition(await call(broker, 1, 12, body))
        assert trio.current_time() - start >= 0.3  # only the small batch is there to send: the fetch waits
    assert len(got["w", 0].records) == small and len(got["w", 1].records or b"") == 0
    sent = broker.metrics.registry.get_sample_value("kafka_server_brokertopicmetrics_bytesout_total", {"topic": "w"})
    assert sent == 2 * small  # the cut partition counted no bytes


async def test_fetch_v3_down_conversion_sends_nothing_for_a_cut_first_batch(broker):
    await two_partitions(broker, "old")
    T = sub(1, "FetchTopic")
    parts = [T.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1000) for p in (0, 1)]
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[T(topic="old", partitions=parts)])
    got = by_partition(await call(broker, 1, 3, body))
    assert len(got["old", 0].records) > 0 and len(got["old", 1].records or b"") == 0
    body.topics[0].partitions = parts[1:]
    assert len(by_partition(await call(broker, 1, 3, body))["old", 1].records) > BIG  # first: converted whole


async def test_current_leader_epoch_is_checked_from_v9(broker):
    await create_ok(broker, "ep")
    await produce(broker, "ep", [1, 2])
    for version in (9, 12):
        for epoch, error in ((-1, ErrorCode.NONE), (0, ErrorCode.NONE), (-2, ErrorCode.NONE),
                             (-(2**31), ErrorCode.NONE), (5, ErrorCode.UNKNOWN_LEADER_EPOCH)):  # fmt: skip
            p = by_partition(await call(broker, 1, version, fetch_body({"ep": {0: 0}}, epoch=epoch)))["ep", 0]
            assert p.error_code == error, (version, epoch)
            assert len(p.records or b"") > 0 if error == ErrorCode.NONE else p.records in (None, b"")
            if error != ErrorCode.NONE:  # Kafka's createLogReadResult(e)
                assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (-1, -1, -1)
    unknown = by_partition(await call(broker, 1, 12, fetch_body({"ep": {3: 0}}, epoch=5)))["ep", 3]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # the partition first, then its epoch


async def test_a_negative_current_leader_epoch_is_no_epoch_and_never_fenced(broker):
    """Kafka's ``FetchRequest.fetchData`` reads any epoch below 0 as absent (``optionalEpoch``), so with our
    epoch 0 no Fetch is FENCED_LEADER_EPOCH; v16+ answers thus carry no KIP-951 ``current_leader`` or
    ``node_endpoints`` (Kafka fills them only for FENCED_LEADER_EPOCH and NOT_LEADER_OR_FOLLOWER), nor for
    UNKNOWN_LEADER_EPOCH."""
    tid = (await create_ok(broker, "neg")).topic_id
    await produce(broker, "neg", [1, 2])
    T = sub(1, "FetchTopic")
    for epoch, error in ((-2, ErrorCode.NONE), (-7, ErrorCode.NONE), (1, ErrorCode.UNKNOWN_LEADER_EPOCH)):
        part = T.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=epoch)
        body = req(1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0, session_epoch=-1,
                   topics=[T(topic_id=tid, partitions=[part])], forgotten_topics_data=[])  # fmt: skip
        for version in (16, 18):
            resp = await call(broker, 1, version, body)
            p = resp.responses[0].partitions[0]
            assert p.error_code == error and len(batches(p)) == (1 if error == ErrorCode.NONE else 0)
            assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (-1, -1)
            assert resp.node_endpoints == []


async def test_a_fenced_partition_ends_the_long_poll(broker):
    await create_ok(broker, "lp")
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({"lp": {0: 0}}, epoch=3, min_bytes=1, max_wait_ms=3000)
        p = by_partition(await call(broker, 1, 12, body))["lp", 0]
        assert trio.current_time() - start < 2 and p.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


async def test_min_bytes_above_max_bytes_is_capped_at_max_bytes(broker):
    await create_ok(broker, "mb")
    for _ in range(40):
        await produce(broker, "mb", [1, 2, 3])
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({"mb": {0: 0}}, min_bytes=10_000, max_bytes=1024, max_wait_ms=3000)
        p = by_partition(await call(broker, 1, 12, body))["mb", 0]
        assert trio.current_time() - start < 2 and len(p.records) == 1024
        start = trio.current_time()
        body = fetch_body({"mb": {0: 0}}, min_bytes=10_000, max_bytes=1 << 20, max_wait_ms=300)
        await call(broker, 1, 12, body)
        assert trio.current_time() - start >= 0.3  # below max_bytes, min_bytes still holds the fetch


async def test_a_zstd_topic_is_refused_below_v10(broker):
    await create_ok(broker, "z", configs={"compression.type": "zstd"})
    await produce(broker, "z", [1, 2])
    for version in (4, 9, 3, 0):
        p = by_partition(await call(broker, 1, version, fetch_body({"z": {0: 0}})))["z", 0]
        assert p.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE and not p.records, version
        assert p.high_watermark == -1 and (version < 5 or p.log_start_offset == -1)
    fenced = by_partition(await call(broker, 1, 9, fetch_body({"z": {0: 99}}, epoch=7)))["z", 0]
    assert fenced.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE  # it overrides the read's own errors
    served = by_partition(await call(broker, 1, 10, fetch_body({"z": {0: 0}})))["z", 0]
    assert served.error_code == ErrorCode.NONE and [b.attributes & 7 for b in batches(served)] == [4]


async def test_zstd_batches_of_a_producer_topic_go_to_v4_as_stored(broker):
    await create_ok(broker, "zp")  # compression.type=producer
    builder = RecordBatchBuilder(compression=Codec.ZSTD)
    builder.append(b"k", b"v", timestamp=1)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="zp", partition_data=[
        Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip
    assert (await call(broker, 0, 9, body)).responses[0].partition_responses[0].error_code == ErrorCode.NONE
    p = by_partition(await call(broker, 1, 4, fetch_body({"zp": {0: 0}})))["zp", 0]
    assert p.error_code == ErrorCode.NONE and [b.attributes & 7 for b in batches(p)] == [4]  # Kafka checks the topic
    old = by_partition(await call(broker, 1, 3, fetch_body({"zp": {0: 0}})))["zp", 0]
    assert old.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE  # met while converting


async def test_a_fetch_with_nothing_to_read_is_answered_at_once(broker):
    with trio.fail_after(5):
        start = trio.current_time()
        resp = await call(broker, 1, 12, fetch_body({}, min_bytes=1, max_wait_ms=3000))
        assert trio.current_time() - start < 2 and (resp.error_code, resp.responses) == (ErrorCode.NONE, [])
        start = trio.current_time()
        resp = await call(broker, 1, 12, fetch_body({"nope": {0: 0}}, min_bytes=1, max_wait_ms=3000))
        assert trio.current_time() - start < 2
        assert by_partition(resp)["nope", 0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_unknown_partitions_next_to_readable_ones_do_not_end_the_wait(broker):
    await create_ok(broker, "q")
    with trio.fail_after(5):
        start = trio.current_time()
        resp = await call(broker, 1, 12, fetch_body({"q": {0: 0, 7: 0}}, min_bytes=1, max_wait_ms=300))
        assert trio.current_time() - start >= 0.3  # Kafka waits for the partitions it reads
    got = by_partition(resp)
    assert (got["q", 0].error_code, got["q", 7].error_code) == (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def test_an_incremental_fetch_naming_nothing_waits_for_its_session(broker):
    await create_ok(broker, "s")
    opened = await call(broker, 1, 12, fetch_body({"s": {0: 0}}, session_epoch=0))
    assert opened.session_id != 0
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({}, min_bytes=1, max_wait_ms=300, session_id=opened.session_id, session_epoch=1)
        resp = await call(broker, 1, 12, body)
        assert trio.current_time() - start >= 0.3 and resp.error_code == ErrorCode.NONE


async def test_an_offset_out_of_range_answer_carries_no_offsets(broker):
    await create_ok(broker, "oor")
    await produce(broker, "oor", [1, 2])
    for offset in (99, -1):
        p = by_partition(await call(broker, 1, 12, fetch_body({"oor": {0: offset}})))["oor", 0]
        assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and not p.records
        assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (-1, -1, -1)  # createLogReadResult(e)
    ok = by_partition(await call(broker, 1, 12, fetch_body({"oor": {0: 2}})))["oor", 0]
    assert (ok.error_code, ok.high_watermark, ok.last_stable_offset, ok.log_start_offset) == (ErrorCode.NONE, 2, 2, 0)


async def test_a_session_answers_a_partition_again_once_its_error_clears(broker):
    await create_ok(broker, "se")
    await produce(broker, "se", [1, 2])
    opened = await call(broker, 1, 12, fetch_body({"se": {0: 99}}, session_epoch=0))
    assert by_partition(opened)["se", 0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    sid = opened.session_id
    again = await call(broker, 1, 12, fetch_body({}, session_id=sid, session_epoch=1))
    assert by_partition(again)["se", 0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # errors always answered
    cleared = await call(broker, 1, 12, fetch_body({"se": {0: 2}}, session_id=sid, session_epoch=2))
    p = by_partition(cleared)["se", 0]  # no records, but the cached high watermark was -1
    assert (p.error_code, p.high_watermark, p.log_start_offset, len(p.records or b"")) == (ErrorCode.NONE, 2, 0, 0)
    quiet = await call(broker, 1, 12, fetch_body({}, session_id=sid, session_epoch=3))
    assert by_partition(quiet) == {}


async def test_read_committed_with_nothing_to_read_lists_no_aborted_transactions(broker):
    # Kafka's LocalLog.read answers a read_committed read with nothing to read with an empty list, not null;
    # read_uncommitted, and a cut first batch (replaced by empty records), with null
    await two_partitions(broker, "rc")
    for isolation, want in ((1, []), (0, None)):
        got = by_partition(await call(broker, 1, 12, fetch_body({"rc": {0: 1}}, isolation=isolation)))
        assert got["rc", 0].aborted_transactions == want
    cut = by_partition(await call(broker, 1, 12, fetch_body({"rc": {0: 0, 1: 0}}, pmax=1000, isolation=1)))
    assert len(batches(cut["rc", 0])) == 1 and cut["rc", 0].aborted_transactions == []
    assert cut["rc", 1].aborted_transactions is None


async def test_min_bytes_of_an_old_fetch_counts_the_stored_bytes_not_the_down_converted(broker):
    """Kafka's ``ReplicaManager.fetchMessages`` weighs ``min_bytes`` against the bytes read from the log;
    down-conversion comes later, in ``KafkaApis``. Small records are about 3 times larger as v1 messages."""
    await create_ok(broker, "oldmin")
    await produce(broker, "oldmin", list(range(1, 41)))
    stored = len(by_partition(await call(broker, 1, 12, fetch_body({"oldmin": {0: 0}})))["oldmin", 0].records)
    converted = len(by_partition(await call(broker, 1, 2, fetch_body({"oldmin": {0: 0}})))["oldmin", 0].records)
    assert stored < converted // 2
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({"oldmin": {0: 0}}, min_bytes=stored + 1, max_wait_ms=300)
        p = by_partition(await call(broker, 1, 2, body))["oldmin", 0]
        assert trio.current_time() - start >= 0.3 and len(p.records) == converted  # waited its max_wait_ms
        start = trio.current_time()
        body = fetch_body({"oldmin": {0: 0}}, min_bytes=stored, max_wait_ms=3000)
        await call(broker, 1, 2, body)
        assert trio.current_time() - start < 2
