"""AlterReplicaLogDirs: partitions move between the log dirs of a broker, as Kafka moves them.

A broker with two log dirs (``d1``, ``d2``; a one-partition topic made first
lands in ``d1``). Per partition: a path not in ``log.dirs`` is
LOG_DIR_NOT_FOUND, one that cannot be read KAFKA_STORAGE_ERROR, a topic whose
future directory name would pass 255 characters INVALID_TOPIC_EXCEPTION, a
partition the broker lacks UNKNOWN_TOPIC_OR_PARTITION (the path is kept for
its creation), the dir it is in NONE with nothing done; otherwise NONE and
the move runs in the background: DescribeLogDirs shows a future log under the
destination while it copies, then the partition there, with every record
fetched back as produced, before, during and after the move, and after a
restart.
"""

from __future__ import annotations

import errno
import os
import threading
import types
from pathlib import Path

import pytest
import trio

from broker import log_dir_moves
from broker.config import BrokerConfig
from broker.core import Broker
from protocol import ErrorCode
from protocol.records import RecordBatchBuilder, iter_batches
from storage import fileops, log_move
from storage.log_move import LogMove

from ._admin_client import call, create_ok, req, sub

Dir = sub(34, "AlterReplicaLogDir")
TS = 1_750_000_000_000


def _props(tmp_path) -> dict[str, str]:
    dirs = ",".join(str(tmp_path / d) for d in ("d1", "d2"))
    return {"node.id": "1", "log.dirs": dirs, "prometheus.port": "0", "log.segment.bytes": "8192"}


@pytest.fixture
def two_dirs(tmp_path):
    b = Broker.open(BrokerConfig.from_props(_props(tmp_path)))
    yield b
    b.close()


@pytest.fixture
def gate(monkeypatch):
    """Holds every copy round on its worker thread until ``gate.open.set()``; ``gate.entered`` once one waits."""
    held = threading.Event()
    entered = threading.Event()
    real = LogMove.copy

    def copy(self, plan):
        entered.set()
        held.wait(10)
        return real(self, plan)

    monkeypatch.setattr(LogMove, "copy", copy)
    yield type("Gate", (), {"open": held, "entered": entered})
    held.set()


async def alter(broker, moves: dict[str, dict[str, list[int]]], version: int = 2) -> dict[tuple[str, int], int]:
    dirs = [Dir(path=path, topics=[Dir.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()])
            for path, topics in moves.items()]  # fmt: skip
    resp = await call(broker, 34, version, req(34, dirs=dirs))
    return {(t.topic_name, p.partition_index): p.error_code for t in resp.results for p in t.partitions}


async def listed(broker) -> dict[str, dict[tuple[str, int], bool]]:
    """DescribeLogDirs: dir name -> {(topic, partition): is a future log}."""
    resp = await call(broker, 35, 4, req(35, topics=None))
    return {os.path.basename(r.log_dir): {(t.name, p.partition_index): p.is_future_key for t in r.topics
                                          for p in t.partitions} for r in resp.results}  # fmt: skip


async def produce(broker, n: int, start: int, topic: str = "t") -> int:
    builder = RecordBatchBuilder()
    for i in range(start, start + n):
        builder.append(b"k%d" % i, b"value-%d" % i * 8, timestamp=TS + i)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=-1, timeout_ms=1000, topic_data=[
        Data(name=topic, partition_data=[Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip
    answer = (await call(broker, 0, 9, body)).responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NONE
    return answer.base_offset


async def fetch_all(broker, topic: str = "t") -> list[tuple[int, bytes, bytes, int]]:
    T = sub(1, "FetchTopic")
    out: list[tuple[int, bytes, bytes, int]] = []
    while True:
        part = T.FetchPartition(partition=0, fetch_offset=len(out), partition_max_bytes=1 << 16)
        body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 16, isolation_level=0,
                   topics=[T(topic=topic, partitions=[part])])  # fmt: skip
        p = (await call(broker, 1, 11, body)).responses[0].partitions[0]
        assert p.error_code == ErrorCode.NONE
        got = [(r.offset, r.key, r.value, r.timestamp) for b in iter_batches(memoryview(p.records or b""))
               for r in b.iter_records() if r.offset >= len(out)]  # fmt: skip
        if not got:
            return out
        out += got


def expected(n: int) -> list[tuple[int, bytes, bytes, int]]:
    return [(i, b"k%d" % i, b"value-%d" % i * 8, TS + i) for i in range(n)]


async def settled(broker) -> None:
    """Until no move runs any more."""
    with trio.fail_after(10):
        while broker.log_dir_moves._running:
            await trio.sleep(0.01)


def _dirs(broker) -> tuple[str, str]:
    return tuple(os.path.abspath(d) for d in broker.topics.manager.dirs)


@pytest.mark.parametrize("version", range(3))
async def test_a_partition_moves_to_the_other_dir_with_every_record(two_dirs, version):
    d1, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    for start in range(0, 300, 50):
        await produce(two_dirs, 50, start)
    assert len(two_dirs.topics.partition("t", 0).log.segments) > 3
    assert await alter(two_dirs, {d2: {"t": [0]}}, version) == {("t", 0): ErrorCode.NONE}
    await settled(two_dirs)
    assert await listed(two_dirs) == {"d1": {}, "d2": {("t", 0): False}}
    assert not os.path.exists(os.path.join(d1, "t-0")) and os.listdir(d2).count("t-0") == 1
    assert await fetch_all(two_dirs) == expected(300)
    assert await produce(two_dirs, 20, 300) == 300
    assert await fetch_all(two_dirs) == expected(320)


async def test_the_dir_it_is_in_is_answered_none_and_nothing_happens(two_dirs):
    d1, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    await produce(two_dirs, 10, 0)
    before = sorted(os.listdir(d2))
    assert await alter(two_dirs, {d1: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}
    assert not two_dirs.log_dir_moves._running and two_dirs.topics.manager.moves.all() == []
    assert sorted(os.listdir(d2)) == before and await listed(two_dirs) == {"d1": {("t", 0): False}, "d2": {}}


async def test_a_path_not_in_log_dirs_is_log_dir_not_found(two_dirs, tmp_path):
    _, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    answers = await alter(two_dirs, {str(tmp_path / "d3"): {"t": [0]}, d2 + "/": {"u": [0]}, "d2": {"v": [0]}})
    assert answers == {("t", 0): ErrorCode.LOG_DIR_NOT_FOUND, ("u", 0): ErrorCode.LOG_DIR_NOT_FOUND,
                       ("v", 0): ErrorCode.LOG_DIR_NOT_FOUND}  # fmt: skip
    assert two_dirs.topics.manager.moves.all() == [] and two_dirs.topics.manager.moves.preferred == {}


async def test_a_dir_that_cannot_be_read_is_a_storage_error(two_dirs, monkeypatch):
    _, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)

    def unreadable(path):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("broker.handlers.alter_replica_log_dirs.os.statvfs", unreadable)
    assert await alter(two_dirs, {d2: {"t": [0]}}) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert two_dirs.topics.manager.moves.all() == []


async def test_a_topic_too_long_for_a_future_dir_name_is_invalid(two_dirs):
    _, d2 = _dirs(two_dirs)
    name = "x" * 249  # a legal topic: its directory name fits, its future directory name (+ 40) does not
    await create_ok(two_dirs, name, 1)
    answers = await alter(two_dirs, {d2: {name: [0]}, "/nowhere": {"y" * 220: [0]}})
    assert answers == {(name, 0): ErrorCode.INVALID_TOPIC_EXCEPTION, ("y" * 220, 0): ErrorCode.INVALID_TOPIC_EXCEPTION}
    assert two_dirs.topics.manager.moves.all() == []


async def test_an_unknown_partition_is_unknown_and_is_made_in_that_dir_later(two_dirs):
    d1, _ = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    assert await alter(two_dirs, {d1: {"later": [0], "t": [1]}}) == {
        ("later", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("t", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    await create_ok(two_dirs, "later", 1)  # d2 holds fewer partitions: without the preference it would go there
    assert await listed(two_dirs) == {"d1": {("t", 0): False, ("later", 0): False}, "d2": {}}
    assert two_dirs.topics.manager.moves.preferred == {("t", 1): two_dirs.topics.manager.dirs[0]}


async def test_the_last_path_naming_a_partition_wins(two_dirs):
    d1, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    assert await alter(two_dirs, {d2: {"t": [0]}, d1: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}
    assert two_dirs.topics.manager.moves.all() == []


async def test_a_move_in_progress_is_a_future_log_until_the_swap(two_dirs, gate):
    _, d2 = _dirs(two_dirs)
    assert await _held_move(two_dirs, gate, d2) == {("t", 0): ErrorCode.NONE}
    assert await listed(two_dirs) == {"d1": {("t", 0): False}, "d2": {("t", 0): True}}
    resp = await call(two_dirs, 35, 4, req(35, topics=None))
    future = resp.results[1].topics[0].partitions[0]
    assert (future.partition_size, future.offset_lag) == (0, 100)  # nothing copied yet
    Topic = sub(35, "DescribableLogDirTopic")
    others = await call(two_dirs, 35, 4, req(35, topics=[Topic(topic="other", partitions=[0])]))
    assert [r.topics for r in others.results] == [[], []]  # a future log is left out like its log
    assert await alter(two_dirs, {d2: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}  # the same move goes on
    assert len(two_dirs.topics.manager.moves.all()) == 1
    gate.open.set()
    await settled(two_dirs)
    assert await listed(two_dirs) == {"d1": {}, "d2": {("t", 0): False}}


async def _held_move(two_dirs, gate, to: str) -> dict:
    """Topic ``t`` (100 records) moving to ``to``, its copy held at the gate; the request's answer."""
    await create_ok(two_dirs, "t", 1)
    await produce(two_dirs, 100, 0)
    answer = await alter(two_dirs, {to: {"t": [0]}})
    await trio.to_thread.run_sync(gate.entered.wait, 10)
    return answer


async def test_a_request_for_the_current_dir_gives_a_move_up(two_dirs, gate):
    d1, d2 = _dirs(two_dirs)
    await _held_move(two_dirs, gate, d2)
    assert await alter(two_dirs, {d1: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}
    assert await listed(two_dirs) == {"d1": {("t", 0): False}, "d2": {}}
    gate.open.set()
    await settled(two_dirs)
    assert not any(n.startswith("t-0") for n in os.listdir(d2))
    assert await fetch_all(two_dirs) == expected(100)


@pytest.mark.parametrize("final_bytes", [log_dir_moves.FINAL_BYTES, 0, -1],
                         ids=["default", "rounds until nothing is left", "as many rounds as allowed"])
async def test_records_produced_while_the_copy_runs_are_all_there_once(two_dirs, gate, monkeypatch, final_bytes):
    monkeypatch.setattr(log_dir_moves, "FINAL_BYTES", final_bytes)
    rounds = []
    monkeypatch.setattr(log_move.LogMove, "finish", _counting(log_move.LogMove.finish, rounds, "finish"))
    monkeypatch.setattr(log_move.LogMove, "plan", _counting(log_move.LogMove.plan, rounds, "plan"))
    _, d2 = _dirs(two_dirs)
    await _held_move(two_dirs, gate, d2)
    for start in range(100, 400, 30):  # rolls included: 8 KiB segments
        assert await produce(two_dirs, 30, start) == start
        assert len(await fetch_all(two_dirs)) == start + 30
    gate.open.set()
    await settled(two_dirs)
    assert await listed(two_dirs) == {"d1": {}, "d2": {("t", 0): False}}
    assert await fetch_all(two_dirs) == expected(400)
    assert await produce(two_dirs, 5, 400) == 400
    copies = rounds.index("finish") - 1  # a plan per round copied, then the plan that found little left
    assert copies == {0: 2, -1: log_dir_moves.MAX_ROUNDS}.get(final_bytes, 1)


def _counting(fn, calls: list, name: str):
    def counted(self, *args):
        calls.append(name)
        return fn(self, *args)

    return counted


async def test_a_moved_partition_is_there_after_a_restart(tmp_path):
    broker = Broker.open(BrokerConfig.from_props(_props(tmp_path)))
    try:
        _, d2 = _dirs(broker)
        await create_ok(broker, "t", 1)
        for start in range(0, 200, 50):
            await produce(broker, 50, start)
        await alter(broker, {d2: {"t": [0]}})
        await settled(broker)
    finally:
        broker.close()
    again = Broker.open(BrokerConfig.from_props(_props(tmp_path)))
    try:
        assert await listed(again) == {"d1": {}, "d2": {("t", 0): False}}
        assert await fetch_all(again) == expected(200)
    finally:
        again.close()


async def test_deleting_the_topic_during_a_move_removes_the_copy(two_dirs, gate):
    _, d2 = _dirs(two_dirs)
    await _held_move(two_dirs, gate, d2)
    deleted = await call(two_dirs, 20, 4, req(20, topic_names=["t"], timeout_ms=1000))
    assert deleted.responses[0].error_code == ErrorCode.NONE
    gate.open.set()
    await settled(two_dirs)
    assert not any(n.startswith("t-0") for n in os.listdir(d2))


async def test_a_move_that_fails_leaves_the_partition_where_it_was(two_dirs, monkeypatch, caplog):
    _, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    await produce(two_dirs, 100, 0)

    def no_space(src, dst, dst_path, start, end, stopped, throttle):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(log_move, "_copy_range", no_space)
    assert await alter(two_dirs, {d2: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}  # the move runs afterwards
    await settled(two_dirs)
    assert "moving t-0 to" in caplog.text and "No space left on device" in caplog.text
    assert await listed(two_dirs) == {"d1": {("t", 0): False}, "d2": {}}
    assert not any(n.startswith("t-0") for n in os.listdir(d2))
    assert await produce(two_dirs, 5, 100) == 100 and await fetch_all(two_dirs) == expected(105)


async def test_a_broker_stopping_during_a_move_keeps_the_copy_and_the_next_start_moves_it_again(tmp_path, gate):
    broker = Broker.open(BrokerConfig.from_props(_props(tmp_path)))
    try:
        _, d2 = _dirs(broker)
        await create_ok(broker, "t", 1)
        await produce(broker, 100, 0)
        await alter(broker, {d2: {"t": [0]}})
        await trio.to_thread.run_sync(gate.entered.wait, 10)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(broker.log_dir_moves.stop)  # what serve_broker awaits as it shuts down
            await trio.sleep(0.05)
            gate.open.set()
        assert [n for n in os.listdir(d2) if n.startswith("t-0")][0].endswith("-future")  # kept, as Kafka does
    finally:
        broker.close()
    again = Broker.open(BrokerConfig.from_props(_props(tmp_path)))
    try:
        assert again.topics.manager.interrupted_moves == [(("t", 0), Path(d2))]
        assert await listed(again) == {"d1": {("t", 0): False}, "d2": {}}  # the copy was removed at start
        again.log_dir_moves.resume_interrupted()  # what serve_broker does once it serves
        await settled(again)
        assert await listed(again) == {"d1": {}, "d2": {("t", 0): False}}
        assert await fetch_all(again) == expected(100) and again.topics.manager.interrupted_moves == []
    finally:
        again.close()


async def test_a_copy_cancelled_on_its_thread_stops_the_move_and_is_waited_for():
    stopped, finished = threading.Event(), []

    def copy() -> None:  # a copy returns at its next chunk once its move is stopped
        stopped.wait(10)
        finished.append(True)

    with trio.move_on_after(0.05):
        await log_dir_moves._off_loop(types.SimpleNamespace(stop=stopped.set), copy)
    assert stopped.is_set() and finished == [True]


async def test_a_move_whose_destination_fails_takes_that_dir_offline_and_the_log_stays(two_dirs, monkeypatch):
    """Kafka's future log failing takes its log dir offline; the partition carries on where it was."""
    d1, d2 = _dirs(two_dirs)
    await create_ok(two_dirs, "t", 1)
    await create_ok(two_dirs, "u", 1)
    assert await listed(two_dirs) == {"d1": {("t", 0): False}, "d2": {("u", 0): False}}
    await produce(two_dirs, 10, 0)
    real = fileops.open_file

    def full_destination(path, flags, mode=0o644):
        if flags & os.O_CREAT and os.path.abspath(path).startswith(d2):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, flags, mode)

    monkeypatch.setattr(fileops, "open_file", full_destination)
    assert await alter(two_dirs, {d2: {"t": [0]}}) == {("t", 0): ErrorCode.NONE}
    await settled(two_dirs)
    monkeypatch.undo()
    assert two_dirs.topics.partition("u", 0).log.offline and not two_dirs.topics.partition("t", 0).log.offline
    resp = await call(two_dirs, 35, 4, req(35, topics=None))
    assert {os.path.basename(r.log_dir): r.error_code for r in resp.results} == {
        "d1": ErrorCode.NONE, "d2": ErrorCode.KAFKA_STORAGE_ERROR}
    await produce(two_dirs, 5, 10)
    assert await fetch_all(two_dirs) == expected(15)
