"""A Produce served while a topic deletion is still saving (its logs already closed and renamed ``-delete``,
the checkpoints without the topic being written on a worker thread): the broker's cached partition of the
topic must not be used. Kafka removes the partition from ``ReplicaManager.allPartitions`` before the log is
deleted, so ``getPartitionOrException`` answers UNKNOWN_TOPIC_OR_PARTITION; here the cached Partition was
kept until the whole change ended, and the append reopened the renamed segment by its old path: ENOENT, the
log dir taken offline (the broker halted when it was its only dir)."""

from __future__ import annotations

import threading

import pytest
import trio

from protocol import ErrorCode

from ._admin_client import create_ok, delete_topic, open_broker
from .test_flush_policy_off_loop import _produce


@pytest.mark.parametrize("acks", [1, -1])
async def test_a_produce_while_the_deletion_saves_its_checkpoints_is_answered_unknown(tmp_path, acks):
    b = open_broker(tmp_path, log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1)
        assert await _produce(b, "t", acks) == (ErrorCode.NONE, 0)  # the partition is cached
        checkpoints = b.topics.manager.checkpoints
        real_forget, entered, release = checkpoints.forget_cleaner_offsets, threading.Event(), threading.Event()

        def held_forget(name: str) -> None:
            entered.set()
            release.wait(10)
            real_forget(name)

        checkpoints.forget_cleaner_offsets = held_forget
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(delete_topic, b, "t")
                while not entered.is_set():
                    await trio.sleep(0.01)
                answer = await _produce(b, "t", acks)
                release.set()
        assert answer == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
        assert not b.topics.manager.failures.offline and b.topics.partition("t", 0) is None
    finally:
        release.set()
        b.close()
