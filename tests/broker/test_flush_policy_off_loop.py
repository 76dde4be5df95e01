"""The flush policy's fsyncs (``flush.messages``, ``flush.ms``) run on a worker thread, not on the event loop.

A client may set ``flush.messages=1`` on its own topic; each Produce to it is
then answered once its records are fsynced (Kafka's ``UnifiedLog.append``
flushes before it returns), but the fsync runs in a group-commit round on a
worker thread (``Broker.append`` notes it, the Produce waits with
``wait_flushed``), so every other connection is served meanwhile. Here the
fsyncs of that topic's files are held back (``storage.fileops``, the
fault-injection seam) until the test lets them go. Before, the append fsynced
inline, on the event loop: every connection of the broker waited for it.
"""

from __future__ import annotations

import errno
import os
import threading

import pytest
import trio

from broker.dispatch import CloseConnection
from protocol import ErrorCode
from storage import fileops

from ..open_files import fsync_fails_under
from ._admin_client import broker, call, create_ok, open_broker, req  # noqa: F401  (broker is a fixture)
from .test_log_dir_failure import STORAGE, _fail, _records, sub

HELD_AT_MOST = 3.0  # seconds a held fsync waits before it goes on by itself (the old code never lets go)


class HeldFsyncs:
    """The fsyncs of files in the directory ``part_dir`` wait until ``release``; ``held`` is set once one waits,
    ``threads`` names the threads they ran on."""

    def __init__(self, part_dir: str) -> None:
        self.held, self._go = threading.Event(), threading.Event()
        self.real, self.part_dir, self.threads = fileops.fsync, f"/{part_dir}/", set()

    def fsync(self, fd: int) -> None:
        if self.part_dir in os.readlink(f"/proc/self/fd/{fd}"):
            self.threads.add(threading.current_thread() is threading.main_thread())
            self.held.set()
            self._go.wait(HELD_AT_MOST)
        self.real(fd)

    def release(self) -> None:
        self._go.set()


async def _produce(b, topic: str, acks: int = 1) -> tuple[int, int]:
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=_records())
    body = req(0, acks=acks, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    answer = (await call(b, 0, 9, body, timeout=10)).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


async def _metadata(b) -> list[str]:
    resp = await call(b, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
    return sorted(t.name for t in resp.topics)


@pytest.mark.parametrize("acks", [1, -1])
async def test_other_connections_are_served_while_a_flush_messages_fsync_is_held(broker, monkeypatch, acks):  # noqa: F811
    """The Produce to the flush.messages=1 topic is answered only after its fsync (its recovery point moved
    then); meanwhile a Metadata and a Produce to another topic are answered. Before, they waited for it."""
    await create_ok(broker, "slow", configs={"flush.messages": "1"})
    await create_ok(broker, "fast")
    log = broker.topics.partition("slow", 0).log
    fsyncs, order = HeldFsyncs("slow-0"), []
    monkeypatch.setattr(fileops, "fsync", fsyncs.fsync)

    async def slow() -> None:
        answer = await _produce(broker, "slow", acks)
        order.append(("slow answered", answer, log.recovery_point))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await trio.to_thread.run_sync(fsyncs.held.wait, HELD_AT_MOST)
            order.append(("metadata answered", await _metadata(broker)))
            order.append(("fast answered", await _produce(broker, "fast", acks), log.recovery_point))
            fsyncs.release()
    assert order == [("metadata answered", ["fast", "slow"]), ("fast answered", (ErrorCode.NONE, 0), 0),
                     ("slow answered", (ErrorCode.NONE, 0), 1)]  # fmt: skip
    assert fsyncs.threads == {False}  # every fsync of the flush on a worker thread


async def test_a_failed_flush_answers_storage_error_and_takes_the_dir_offline(broker, monkeypatch):  # noqa: F811
    """The flush fails on its worker thread: the Produce is answered KAFKA_STORAGE_ERROR, the dir is offline
    (later Produces too are refused) and the recovery point stays. Before, the fsync ran on the event loop."""
    await create_ok(broker, "slow", configs={"flush.messages": "1"})
    log = broker.topics.partition("slow", 0).log
    threads = []

    def failing(_fd: int) -> None:
        threads.append(threading.current_thread() is threading.main_thread())
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(fileops, "fsync", failing)
    assert await _produce(broker, "slow") == (STORAGE, -1)
    assert threads and not any(threads)
    assert log.offline and log.recovery_point == 0
    assert await _produce(broker, "slow") == (STORAGE, -1)


async def test_the_flush_ms_timer_flushes_on_a_worker_thread(broker, monkeypatch):  # noqa: F811
    """A ``flush.ms`` flush found due by the timer (``tick``) runs on a worker thread while requests are served,
    and moves the recovery point. Before, ``tick`` fsynced on the event loop."""
    await create_ok(broker, "timed", configs={"flush.ms": "60000"})
    log = broker.topics.partition("timed", 0).log
    assert await _produce(broker, "timed") == (ErrorCode.NONE, 0)
    assert log.recovery_point == 0
    log.last_flush_ms -= 60_000
    fsyncs = HeldFsyncs("timed-0")
    monkeypatch.setattr(fileops, "fsync", fsyncs.fsync)
    with trio.fail_after(10):
        broker.tick()
        await trio.to_thread.run_sync(fsyncs.held.wait, HELD_AT_MOST)
        assert await _metadata(broker) == ["timed"] and log.recovery_point == 0
        fsyncs.release()
        while log.recovery_point == 0:
            await trio.sleep(0.01)
    assert fsyncs.threads == {False}


@pytest.mark.parametrize("acks", [1, 0])
async def test_a_partition_whose_dir_fails_while_it_waits_for_its_flush_is_not_acknowledged(tmp_path, monkeypatch,
                                                                                          acks):  # fmt: skip
    """The Produce to the flush.messages=1 topic waits for its flush; meanwhile another append in the same dir
    hits a full disk, which takes the dir offline and drops its logs from the group commit: the round succeeds
    without them. The partition answers KAFKA_STORAGE_ERROR (acks=0: the connection is closed), as Kafka's
    append, whose flush meets the closed log, does. Before, acks 0 and 1 were answered NONE for a record never
    fsynced."""
    b = open_broker(tmp_path)
    try:
        await create_ok(b, "t", 1, configs={"flush.messages": "1"})
        await create_ok(b, "c", 1)
        real_wait, injected = b.wait_flushed, []

        async def wait_while_another_append_fails(generation: int | None = None) -> None:
            if not injected:
                injected.append(True)
                with monkeypatch.context() as m:
                    _fail(m, "pwrite", errno.ENOSPC)
                    assert await _produce(b, "c") == (STORAGE, -1)
            await real_wait(generation)

        b.wait_flushed = wait_while_another_append_fails
        log = b.topics.partition("t", 0).log
        if acks:
            assert await _produce(b, "t", acks) == (STORAGE, -1)
        else:
            with pytest.raises(CloseConnection):
                await _produce(b, "t", acks)
        assert injected and log.offline and log.recovery_point == 0
    finally:
        b.close()


async def test_a_produce_does_not_wait_for_a_flush_ms_flush(broker, monkeypatch):  # noqa: F811
    """Kafka's ``UnifiedLog.append`` flushes only when ``flush.messages`` are unflushed; ``flush.ms`` is the
    scheduler's (``LogManager.flushDirtyLogs``). A Produce after which a ``flush.ms`` flush is due is answered
    without waiting for it; the timer (``tick``) runs it. Before, the Produce waited for that fsync."""
    await create_ok(broker, "timed", configs={"flush.ms": "60000"})
    log = broker.topics.partition("timed", 0).log
    log.last_flush_ms -= 60_000
    fsyncs = HeldFsyncs("timed-0")
    monkeypatch.setattr(fileops, "fsync", fsyncs.fsync)
    with trio.fail_after(10):
        assert await _produce(broker, "timed") == (ErrorCode.NONE, 0)
        assert not fsyncs.held.is_set() and log.recovery_point == 0
        fsyncs.release()
        broker.tick()
        while log.recovery_point == 0:
            await trio.sleep(0.01)


@pytest.mark.parametrize("durable", [False, True], ids=["flush.messages", "durable"])
async def test_a_failed_fsync_in_one_dir_fails_only_the_partitions_of_that_dir(tmp_path, monkeypatch, durable):
    """One Produce to two partitions, one in each of two log dirs, of a flush.messages=1 topic (or with acks=-1
    in durable mode); both wait for the same group-commit round, whose fsync of the second dir's log fails.
    That dir goes offline and its partition answers KAFKA_STORAGE_ERROR; the first dir's partition is fsynced
    and answered, as Kafka's append, which flushes only its own log, answers it. Before, the whole round
    failed: the healthy partition was refused too (and its records, on disk, counted as refused)."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    b = open_broker(tmp_path, log_dirs=f"{dirs[0]},{dirs[1]}", log_flush_durable_enable=str(durable).lower())
    try:
        await create_ok(b, "t", 2, configs={} if durable else {"flush.messages": "1"})
        logs = [b.topics.partition("t", p).log for p in (0, 1)]
        sick = next(log for log in logs if log.dir.parent == dirs[1])
        fsync_fails_under(monkeypatch, dirs[1])
        Data = sub(0, "TopicProduceData")
        parts = [Data.PartitionProduceData(index=p, records=_records()) for p in (0, 1)]
        body = req(0, acks=-1 if durable else 1, timeout_ms=1000, topic_data=[Data(name="t", partition_data=parts)])
        with trio.fail_after(10):
            answers = (await call(b, 0, 9, body, timeout=10)).responses[0].partition_responses
        got = {a.index: (a.error_code, a.base_offset) for a in answers}
        healthy = logs.index(next(log for log in logs if log is not sick))
        assert got == {healthy: (ErrorCode.NONE, 0), 1 - healthy: (STORAGE, -1)}
        assert sick.offline and not logs[healthy].offline and logs[healthy].recovery_point == 1
        assert logs[healthy].high_watermark == 1  # in durable mode the fsynced offset: readable
    finally:
        b.close()
