"""Produce of idempotent batches through the handler: what a retried (duplicate) batch is answered.

A real broker (``groups_broker``: real storage, a hand-driven clock) takes
Produce frames through ``dispatch``. Kafka answers a duplicate with the
original batch's offsets and, as its log append time, the original's max
timestamp (whatever the topic's timestamp type), and with ``acks=-1`` only
once the original is past the high watermark: in durable mode, once the
group-commit fsync covers it.
"""

from __future__ import annotations

import threading

import pytest
import trio

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder, TimestampType

from ._admin_client import call, create_ok, req, sub
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)

NOW = 1_700_000_000_000  # the FakeClock's start


async def produce(broker, topic, pid=5, epoch=0, seq=0, ts=NOW, ts_type=TimestampType.CREATE_TIME):
    """One single-record batch of ``pid``; ``(error, base offset, log_append_time_ms)``."""
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, timestamp_type=ts_type)
    b.append(b"k", b"v", timestamp=ts)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=-1, timeout_ms=1000,
               topic_data=[Data(name=topic, partition_data=[Data.PartitionProduceData(index=0, records=b.build())])])
    answer = (await call(broker, 0, 9, body)).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset, answer.log_append_time_ms


class HeldFsync:
    """The log manager's group commit, held until ``release``; ``calls`` counts the waits for it."""

    def __init__(self, manager):
        self.calls, self._gate, self._real = 0, threading.Event(), manager.sync_to
        manager.sync_to = self._sync_to

    def _sync_to(self, generation: int) -> None:
        self.calls += 1
        self._gate.wait(10)
        self._real(generation)

    def release(self) -> None:
        self._gate.set()


@pytest.mark.parametrize("group_props", [{"log.flush.durable.enable": "true"}])
async def test_a_duplicate_with_acks_all_waits_until_the_original_is_on_disk(groups_broker):
    await create_ok(groups_broker, "t", 1)
    held, out = HeldFsync(groups_broker.topics.manager), {}

    async def send(name):
        out[name] = await produce(groups_broker, "t")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            try:
                nursery.start_soon(send, "first")
                while held.calls < 2:  # the producer's wait and the broker's own commit round
                    await trio.sleep(0.005)
                nursery.start_soon(send, "retry")
                while held.calls < 3 and "retry" not in out:  # the retry waits for the fsync, or is answered
                    await trio.sleep(0.005)
                assert out == {}  # neither answered while the original is not on disk
            finally:
                held.release()
    assert (out["first"], out["retry"]) == ((ErrorCode.NONE, 0, -1), (ErrorCode.NONE, 0, NOW))
    assert groups_broker.topics.partition("t", 0).log.log_end_offset == 1  # written once


async def test_a_duplicate_on_a_log_append_time_topic_carries_the_original_append_time(groups_broker):
    await create_ok(groups_broker, "lat", 1, {"message.timestamp.type": "LogAppendTime"})
    first = await produce(groups_broker, "lat", ts=NOW - 5)
    assert first == (ErrorCode.NONE, 0, NOW)
    groups_broker.clock.now += 5000
    assert await produce(groups_broker, "lat", ts=NOW - 5) == first
    assert await produce(groups_broker, "lat", seq=1, ts=NOW - 5) == (ErrorCode.NONE, 1, NOW + 5000)


async def test_a_duplicate_on_a_create_time_topic_carries_the_batchs_max_timestamp(groups_broker):
    """Kafka's UnifiedLog.append sets the duplicate's log append time from the batch metadata it kept (the
    batch's max timestamp) without looking at the timestamp type; a first append answers -1."""
    await create_ok(groups_broker, "t", 1)
    assert await produce(groups_broker, "t", ts=NOW - 5) == (ErrorCode.NONE, 0, -1)
    assert await produce(groups_broker, "t", ts=NOW - 5) == (ErrorCode.NONE, 0, NOW - 5)
