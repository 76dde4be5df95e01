"""DescribeProducers: each partition's active producers from its producer state, as Kafka answers.

Producers are listed by id with their epoch, last sequence and largest
timestamp written; an illegal topic name, an unknown topic and an unknown
partition get Kafka's error codes and messages.
"""

from __future__ import annotations

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)

TS = 1_760_000_000_000
Topic = sub(61, "TopicRequest")


async def _send(broker, topic: str, pid: int, epoch: int, seq: int, n: int, ts: int) -> None:  # noqa: F811
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        b.append(b"k", b"v", timestamp=ts + i)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=b.build())
    body = req(0, acks=-1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    resp = await call(broker, 0, 9, body)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE


async def _describe(broker, *topics):  # noqa: F811
    resp = await call(broker, 61, 0, req(61, topics=[Topic(name=n, partition_indexes=p) for n, p in topics]))
    return {(t.name, p.partition_index): p for t in resp.topics for p in t.partitions}


async def test_active_producers_with_epoch_last_sequence_and_timestamp(broker):  # noqa: F811
    await create_ok(broker, "t", 2)
    await _send(broker, "t", 9, 0, 0, 3, TS)
    await _send(broker, "t", 9, 0, 3, 2, TS - 100)  # the latest batch's max timestamp, even if older (addBatch)
    await _send(broker, "t", 4, 2, 0, 1, TS + 50)
    await _send(broker, "t", -1, -1, -1, 1, TS)  # not idempotent: no producer state
    got = await _describe(broker, ("t", [0, 1]))
    rows = [(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp, s.coordinator_epoch,
             s.current_txn_start_offset) for s in got[("t", 0)].active_producers]  # fmt: skip
    assert rows == [(4, 2, 0, TS + 50, -1, -1), (9, 0, 4, TS - 99, -1, -1)]
    assert (got[("t", 1)].error_code, got[("t", 1)].active_producers) == (ErrorCode.NONE, [])


async def test_unknown_and_illegal_topics_and_partitions(broker):  # noqa: F811
    await create_ok(broker, "t", 1)
    got = await _describe(broker, ("t", [5]), ("nope", [0, 1]), ("bad/name", [0]))
    assert {k: (p.error_code, p.error_message) for k, p in got.items()} == {
        ("t", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        ("nope", 1): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        ("bad/name", 0): (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' contains one or "
                          "more characters other than ASCII alphanumerics, '.', '_' and '-'"),
    }  # fmt: skip
