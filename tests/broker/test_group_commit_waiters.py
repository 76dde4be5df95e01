"""Waiters of the group commit through the broker: each answers for its own logs, whenever it asks.

A Produce with ``flush.messages`` waits for its flush, one with ``acks=-1`` in
durable mode for its fsync, and transaction markers for theirs; a round that
failed whole (a flush out of descriptors, its dir still online) refuses them
however late they ask, a log whose fsync failed refuses only its own
partition, and a partition deleted while an ``acks=-1`` answer waits is
answered as Kafka's purgatory finds it (``DelayedProduce.tryComplete``), the
append's offsets kept; so is a WriteTxnMarkers marker (``test_write_txn_markers``). One changed in place
meanwhile (config altered, partitions added, moved to another log dir) keeps its log: answered NONE.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import trio

from broker.transactions.markers import append_marker
from protocol import ErrorCode

from ..open_files import fsync_fails_under
from ._admin_client import call, create_ok, delete_topic, open_broker, req, sub
from .test_admin_handlers import grow
from .test_alter_replica_log_dirs import alter as alter_dirs, settled
from .test_config_handlers import SET, incremental
from .test_flush_policy_off_loop import _produce
from .test_log_dir_failure import STORAGE, _fail, _records

NONE = ErrorCode.NONE
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_a_flush_whose_round_failed_whole_is_refused_after_a_later_round_succeeded(tmp_path, monkeypatch):
    """The Produce to a ``flush.messages=1`` topic waits for its flush; before it asks, a round covering its
    append fails whole (EMFILE: its dir stays online, its log goes back for the next round) and a later round
    succeeds and publishes a higher generation. It is answered KAFKA_STORAGE_ERROR, as it would have been had
    it asked before the later round. Before, ``wait_flushed`` saw the later generation published and
    answered NONE: the refusal depended on when the waiter came."""
    b = open_broker(tmp_path)
    try:
        await create_ok(b, "t", 1, configs={"flush.messages": "1"})
        await create_ok(b, "u", 1, configs={"flush.messages": "1"})
        real_wait, late = b.wait_flushed, []

        async def wait_after_two_rounds(generation=None, *args, **kwargs) -> None:
            if not late:
                late.append(generation)
                with monkeypatch.context() as m:
                    _fail(m, "fsync", errno.EMFILE)
                    with pytest.raises(OSError):
                        await trio.to_thread.run_sync(b.topics.manager.sync_to, generation)
                assert await _produce(b, "u") == (NONE, 0)  # its round fsyncs both logs and succeeds
                assert b.topics.flushed_generation() > generation
            await real_wait(generation, *args, **kwargs)

        b.wait_flushed = wait_after_two_rounds
        with trio.fail_after(10):
            assert await _produce(b, "t") == (STORAGE, -1)
        assert late and not b.topics.partition("t", 0).log.offline
    finally:
        b.close()


@pytest.mark.parametrize("acks", [-1, 1])
async def test_a_partition_deleted_while_its_produce_waits_is_answered_as_kafka_answers(tmp_path, acks):
    """Durable mode and ``flush.messages=1``: the topic is deleted while the Produce waits for its round. With
    ``acks=-1`` Kafka's purgatory finds no partition (``getPartitionOrError``): UNKNOWN_TOPIC_OR_PARTITION.
    With ``acks=1`` Kafka answered once its append, with the flush in it, returned: NONE, as here. Before,
    ``acks=-1`` was answered NONE too, for records whose partition was gone (and never fsynced)."""
    b = open_broker(tmp_path, log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1, configs={"flush.messages": "1"})
        real_wait = b.wait_flushed

        async def deleted_first(*args, **kwargs) -> None:
            b.wait_flushed = real_wait
            await delete_topic(b, "t")
            await real_wait(*args, **kwargs)

        b.wait_flushed = deleted_first
        with trio.fail_after(10):
            answer = await _produce(b, "t", acks)
        assert b.wait_flushed is real_wait and b.topics.partition("t", 0) is None
        assert answer == ((UNKNOWN, 0) if acks == -1 else (NONE, 0))
    finally:
        b.close()


@pytest.mark.parametrize("recreated", [False, True], ids=["deleted", "deleted and created again"])
async def test_a_partition_deleted_while_its_produce_waits_keeps_the_append_s_offsets_in_its_answer(
        tmp_path, recreated):  # fmt: skip
    """Kafka's purgatory sets only the error of a partition it finds gone (``DelayedProduce.tryComplete``; its
    status was built from the append's ``LogAppendInfo``: ``ReplicaManager.buildProducePartitionStatus``), so
    the answer keeps the append's base offset, log append time and log start offset. They were -1. A topic of
    that name created again during the wait does not hold the records: the same answer (Kafka completes the
    waiting append when it removes the partition); it was NONE, for records that were gone."""
    b = open_broker(tmp_path, log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1, configs={"message.timestamp.type": "LogAppendTime"})
        assert await _produce(b, "t", -1) == (NONE, 0)
        real_wait = b.wait_durable

        async def deleted_first() -> None:
            b.wait_durable = real_wait
            await delete_topic(b, "t")
            if recreated:
                await create_ok(b, "t", 1)
            await real_wait()

        b.wait_durable = deleted_first
        Data = sub(0, "TopicProduceData")
        body = req(0, acks=-1, timeout_ms=1000, topic_data=[Data(name="t", partition_data=[
            Data.PartitionProduceData(index=0, records=_records())])])  # fmt: skip
        with trio.fail_after(10):
            part = (await call(b, 0, 9, body, timeout=10)).responses[0].partition_responses[0]
        now = b.topics.partition("t", 0)
        assert b.wait_durable is real_wait and (now.log.log_end_offset == 0 if recreated else now is None)
        assert (part.error_code, part.base_offset, part.log_start_offset) == (UNKNOWN, 1, 0)
        assert part.log_append_time_ms > 0  # the broker's stamp on the appended batch
    finally:
        b.close()


async def test_a_marker_is_answered_for_its_own_log_when_another_log_s_fsync_fails(tmp_path, monkeypatch):
    """Durable mode, two log dirs, a marker appended to a partition in each; the round fsyncs the first and
    the second dir's fsync fails (EIO: that dir goes offline). Only the second marker is not durable, as
    Kafka answers each append for its own log. Before, a waiter that did not pass ``checks_offline`` (the
    markers', the internal topics', the group store's) was refused for the healthy log too."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    b = open_broker(tmp_path, log_dirs=",".join(map(str, dirs)), log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 2)
        parts = {b.topics.partition("t", p).log.dir.parent: ("t", p) for p in (0, 1)}
        assert sorted(parts) == dirs
        fsync_fails_under(monkeypatch, dirs[1])
        for tp in parts.values():
            assert append_marker(b, b.topics.partition(*tp), 77, 0, False, 0) is None
        with trio.fail_after(10):
            lost = await b.not_durable([(parts[d], b.topics.partition(*parts[d])) for d in dirs], "markers")
        assert lost == [None, STORAGE]
    finally:
        b.close()


async def _alter_config(b, topic: str) -> None:
    assert (await incremental(b, topic, [("retention.ms", SET, "600000")])).error_code == NONE


async def _grow(b, topic: str) -> None:
    assert (await grow(b, topic, 2)).error_code == NONE


async def _move(b, topic: str) -> None:
    here = b.topics.partition(topic, 0).log.dir.parent
    there = next(str(d) for d in b.topics.manager.dirs if Path(d) != here)
    assert await alter_dirs(b, {there: {topic: [0]}}) == {(topic, 0): NONE}
    await settled(b)
    assert b.topics.partition(topic, 0).log.dir.parent == Path(there)


# what changes a partition in place, the log its records went to kept (not a deletion)
KEPT = {"config altered": _alter_config, "partitions added": _grow, "moved to another log dir": _move}


@pytest.mark.parametrize("change", KEPT.values(), ids=KEPT.keys())
async def test_a_partition_changed_in_place_while_its_produce_waits_is_answered_none(tmp_path, change):
    """Durable mode, ``acks=-1``: while the answer waits for its round, the topic's config is altered, it gets
    another partition, or its partition moves to the other log dir. The log holding the records is the same:
    Kafka's purgatory finds the partition (``ReplicaManager.getPartitionOrError``) and answers NONE. Before,
    the first two made a new cached Partition object (``TopicRegistry.invalidate``) that was taken for one
    of a topic deleted and created again: UNKNOWN_TOPIC_OR_PARTITION for records that are there."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    b = open_broker(tmp_path, log_dirs=",".join(map(str, dirs)), log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1)
        real_wait, log_ = b.wait_durable, b.topics.partition("t", 0).log

        async def changed_first() -> None:
            b.wait_durable = real_wait
            await change(b, "t")
            await real_wait()

        b.wait_durable = changed_first
        with trio.fail_after(10):
            assert await _produce(b, "t", -1) == (NONE, 0)
        assert b.wait_durable is real_wait and b.topics.partition("t", 0).log is log_
        assert log_.log_end_offset == 1 and log_.high_watermark == 1
    finally:
        b.close()
