"""The leader epoch in ListOffsets and OffsetForLeaderEpoch answers for a partition with nothing to read.

Kafka's partition takes leader epoch 0 when it is created, and ``Partition.makeLeader`` writes the leader
epoch cache's entry (0, log end offset) then, before any append. So on an empty log latest answers the
leader epoch (0), earliest and earliest-local the cache's first entry (0), OffsetForLeaderEpoch for epoch 0
the log end offset; the entry survives a restart (its checkpoint file) and deleted records (its start
offset follows the log start offset). Max timestamp answers from the batches themselves: with no batch
(``UnifiedLog.fetchOffsetByTimestamp`` finds none) offset, timestamp and leader epoch are -1, while
DeleteRecords leaves the batches in the active segment, where Kafka still finds the max timestamp.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import create_ok, delete_records, now_ms, open_broker, produce
from .test_offset_handlers import epoch_end, list_one

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
NONE = ErrorCode.NONE


async def _answers(broker, topic: str, start: int, end: int) -> None:
    """What a log with nothing to read from ``start`` (its log start and end offset ``end``) answers."""
    for version in (4, 8, 11):
        assert await list_one(broker, topic, 0, LATEST, version) == (NONE, -1, end, 0)
        assert await list_one(broker, topic, 0, EARLIEST, version) == (NONE, -1, start, 0)
        assert await list_one(broker, topic, 0, now_ms() - 3_600_000, version) == (NONE, -1, -1, -1)
    assert await list_one(broker, topic, 0, EARLIEST_LOCAL, 8) == (NONE, -1, start, 0)
    assert await epoch_end(broker, topic, 0, 0) == (NONE, 0, end)
    assert await epoch_end(broker, topic, 0, -5) == (NONE, -5, start)
    assert await epoch_end(broker, topic, 0, 1) == (NONE, -1, -1)


async def test_an_empty_log_answers_epoch_0_but_for_max_timestamp(tmp_path):
    broker = open_broker(tmp_path)
    try:
        await create_ok(broker, "empty")
        await _answers(broker, "empty", 0, 0)
        assert await list_one(broker, "empty", 0, MAX_TIMESTAMP, 7) == (NONE, -1, -1, -1)
    finally:
        broker.close()
    broker = open_broker(tmp_path)  # a restart changes nothing
    try:
        await _answers(broker, "empty", 0, 0)
        assert await list_one(broker, "empty", 0, MAX_TIMESTAMP, 9) == (NONE, -1, -1, -1)
    finally:
        broker.close()


async def test_a_log_whose_records_retention_deleted_answers_as_an_empty_one(tmp_path):
    broker = open_broker(tmp_path)
    try:
        await create_ok(broker, "expired", configs={"retention.ms": "1000"})
        await produce(broker, "expired", [now_ms() - 60_000] * 3)
        log = broker.topics.partition("expired", 0).log
        assert log.run_retention(now_ms()) == 1 and log.log_start_offset == 3  # a new empty segment at 3
        await _answers(broker, "expired", 3, 3)
        assert await list_one(broker, "expired", 0, MAX_TIMESTAMP, 7) == (NONE, -1, -1, -1)
    finally:
        broker.close()


async def test_delete_records_of_everything_keeps_epoch_0_and_the_batches_max_timestamp(tmp_path):
    broker = open_broker(tmp_path)
    try:
        await create_ok(broker, "trimmed")
        base = now_ms() - 60_000
        await produce(broker, "trimmed", [base, base + 10])
        assert await delete_records(broker, "trimmed", {0: 2}) == {0: (NONE, 2)}
        await _answers(broker, "trimmed", 2, 2)
        found = await list_one(broker, "trimmed", 0, MAX_TIMESTAMP, 7)
        assert found == (NONE, base + 10, 1, 0)  # below the log start, still in the active segment: as Kafka
    finally:
        broker.close()
