"""What Produce answers for records the validator refuses: Kafka's codes, record errors (v8+) and messages.

A real broker (``groups_broker``) takes Produce frames through ``dispatch``.
Kafka's ReplicaManager fills ``error_message`` only for errors of records
(a RecordValidationException: "One or more records have been rejected due
to ..."), with ``record_errors`` naming each record; every other error
(MESSAGE_TOO_LARGE, CORRUPT_MESSAGE, a refused batch) has no message.
"""

from __future__ import annotations

import crc32c

from protocol import ErrorCode
from protocol.records import Codec, RecordBatchBuilder, TimestampType, iter_batches

from ._admin_client import call, create_ok, req, sub
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)

NOW = 1_700_000_000_000  # the FakeClock's start


def batch(records, **kw) -> bytearray:
    b = RecordBatchBuilder(**kw)
    for key, value, ts in records:
        b.append(key, value, timestamp=ts)
    return bytearray(b.build())


async def produce(broker, topic, records: bytes, version=9):
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=bytes(records))
    body = req(0, acks=-1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    a = (await call(broker, 0, version, body)).responses[0].partition_responses[0]
    errors = [(e.batch_index, e.batch_index_error_message) for e in a.record_errors or []]
    return a.error_code, a.error_message, errors


async def first_stored_batch(broker, topic):
    T = sub(1, "FetchTopic")
    part = T.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[T(topic=topic,
                                                                                         partitions=[part])])  # fmt: skip
    records = (await call(broker, 1, 11, body)).responses[0].partitions[0].records
    return next(iter_batches(memoryview(bytes(records))))


async def test_record_errors_carry_kafkas_summary_and_each_record(groups_broker):
    await create_ok(groups_broker, "cmp", 1, {"cleanup.policy": "compact", "message.timestamp.before.max.ms": "1000"})
    key_error = "Compacted topic cannot accept message without key in topic partition cmp-0"
    answer = await produce(groups_broker, "cmp", batch([(None, b"v", NOW - 10_000), (b"k", b"v", NOW)]))
    assert answer == (ErrorCode.INVALID_RECORD, "One or more records have been rejected due to 1 record errors in "
                      "total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='"
                      f"{key_error}')]", [(0, key_error)])  # fmt: skip
    error, message, errors = await produce(groups_broker, "cmp", batch([(b"k", b"v", NOW - 10_000)]))
    assert (error, message) == (ErrorCode.INVALID_TIMESTAMP,
                                "One or more records have been rejected due to invalid timestamp")
    assert [i for i, _ in errors] == [0]


async def test_other_errors_have_no_message(groups_broker):
    await create_ok(groups_broker, "small", 1, {"max.message.bytes": "200"})
    assert await produce(groups_broker, "small", batch([(b"k", b"x" * 500, NOW)])) == (
        ErrorCode.MESSAGE_TOO_LARGE, None, [])  # fmt: skip
    corrupt = batch([(b"k", b"v", NOW)])
    corrupt[-1] ^= 0x55
    assert await produce(groups_broker, "small", corrupt) == (ErrorCode.CORRUPT_MESSAGE, None, [])
    control = batch([(b"k", b"v", NOW)], is_control=True)
    assert await produce(groups_broker, "small", control) == (ErrorCode.INVALID_RECORD, None, [])


async def test_log_append_time_claimed_by_a_producer(groups_broker):
    """Taken on a CreateTime topic when its timestamp is in range; refused record by record on a LogAppendTime one."""
    await create_ok(groups_broker, "ct", 1)
    await create_ok(groups_broker, "lat", 1, {"message.timestamp.type": "LogAppendTime"})
    claimed = batch([(b"k", b"v", NOW)], timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW - 3)
    assert await produce(groups_broker, "ct", claimed) == (ErrorCode.NONE, None, [])
    stored = await first_stored_batch(groups_broker, "ct")
    assert (stored.timestamp_type, stored.max_timestamp) == (TimestampType.CREATE_TIME, NOW - 3)
    error, message, errors = await produce(groups_broker, "lat", claimed)
    assert (error, message) == (ErrorCode.INVALID_TIMESTAMP,
                                "One or more records have been rejected due to invalid timestamp")
    assert errors == [(0, f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW - 3}, key=1 "
                          "bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime.")]


async def test_legacy_messages_claiming_log_append_time(groups_broker):
    """Produce v0-v2 (magic 1, plain and gzip): a claimed message with a timestamp is stored as CreateTime with
    it on a CreateTime topic; on a LogAppendTime topic the claim is refused (Produce v0-v2 carry only the code)."""
    await create_ok(groups_broker, "ct1", 1)
    await create_ok(groups_broker, "lat1", 1, {"message.timestamp.type": "LogAppendTime"})
    for version, codec in ((0, Codec.NONE), (1, Codec.GZIP), (2, Codec.NONE)):
        claimed = batch([(b"k", b"v", NOW)], magic=1, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME,
                        log_append_time=NOW - 3)  # fmt: skip
        assert await produce(groups_broker, "ct1", claimed, version) == (ErrorCode.NONE, None, [])
        assert (await produce(groups_broker, "lat1", claimed, version))[0] == ErrorCode.INVALID_TIMESTAMP
    stored = await first_stored_batch(groups_broker, "ct1")
    assert (stored.timestamp_type, stored.max_timestamp) == (TimestampType.CREATE_TIME, NOW - 3)


async def test_codec_ids_5_to_7_fail_a_whole_v3_to_v6_request_and_one_partition_from_v7(groups_broker):
    """Kafka's ``ProduceRequest.validateRecords`` reads the first batch's codec below v7 only: its
    IllegalArgumentException fails the whole request (nothing written); from v7 the append refuses that
    partition alone. Both answer UNKNOWN_SERVER_ERROR, with no message."""
    await create_ok(groups_broker, "codec", 2)
    bad = batch([(b"k", b"v", NOW)])
    bad[22] |= 5
    bad[17:21] = crc32c.crc32c(bytes(bad[21:])).to_bytes(4, "big")
    Data = sub(0, "TopicProduceData")
    parts = [Data.PartitionProduceData(index=0, records=bytes(batch([(b"k", b"v", NOW)]))),
             Data.PartitionProduceData(index=1, records=bytes(bad))]  # fmt: skip
    body = req(0, acks=-1, timeout_ms=1000, topic_data=[Data(name="codec", partition_data=parts)])
    for version, expected in ((5, [ErrorCode.UNKNOWN_SERVER_ERROR] * 2), (7, [0, ErrorCode.UNKNOWN_SERVER_ERROR])):
        answer = (await call(groups_broker, 0, version, body)).responses[0].partition_responses
        assert [(p.error_code, p.error_message) for p in answer] == [(code, None) for code in expected], version
    T = sub(2, "ListOffsetsTopic")
    latest = T(name="codec", partitions=[T.ListOffsetsPartition(partition_index=0, timestamp=-1)])
    ends = await call(groups_broker, 2, 7, req(2, replica_id=-1, topics=[latest]))
    assert ends.topics[0].partitions[0].offset == 1  # partition 0 holds the v7 request's one record alone
