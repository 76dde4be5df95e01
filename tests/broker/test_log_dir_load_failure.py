"""A log dir that fails while the logs load: the broker starts on the others, as Kafka's LogManager.loadLogs.

The server of two log dirs is started with an EIO injected while dir b's logs
load. It starts; dir a's partitions take produce requests; b is reported as
Kafka reports an offline log dir (DescribeLogDirs KAFKA_STORAGE_ERROR,
LogDirectoryOffline 1, OfflineLogDirectoryCount 1) and its partitions answer
as after a failure while running: KAFKA_STORAGE_ERROR to Produce and Fetch, no
leader in Metadata, no coordinator for the group keys of its
``__consumer_offsets`` partitions (the groups load from the others). A stop
writes the clean-shutdown marker of a only, and a start without the fault
serves b's partitions with their records. With every dir failing the start
fails with ``LogDirsFailed`` (the metrics endpoint closed, no loading thread
left, no file open); an error that is not the disk's fails it too. The old
start failed on any error.
"""

from __future__ import annotations

import errno
import os
import shutil
import threading

import pytest
import trio
from prometheus_client import generate_latest

import storage.log_loader as log_loader
from broker.config import BrokerConfig
from broker.server import serve_broker
from protocol import ErrorCode
from storage import LogDirsFailed
from storage.log_opening import CLEAN_SHUTDOWN

from ..open_files import open_files_under
from ._admin_client import NODE, call, create_ok, req, sub
from .test_log_dir_failure import _fetch_error

STORAGE = ErrorCode.KAFKA_STORAGE_ERROR
KEYS = [f"group-{i}" for i in range(8)]


def _config(*dirs) -> BrokerConfig:
    return BrokerConfig.from_props({"node.id": str(NODE), "log.dirs": ",".join(str(d) for d in dirs),
                                    "listeners": "PLAINTEXT://127.0.0.1:0", "prometheus.port": "0",
                                    "offsets.topic.num.partitions": "4"})  # fmt: skip


def _fail_loading(monkeypatch, root, error: Exception | None = None) -> None:
    """Loading any log under ``root`` raises ``error`` (an EIO by default) as its directory is listed."""
    real = log_loader.clean_directory

    def clean_directory(directory, *args, **kwargs):
        if str(directory).startswith(str(root) + os.sep):
            raise error or OSError(errno.EIO, "injected", str(directory))
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(log_loader, "clean_directory", clean_directory)


async def _produce(b, partition: int) -> int:
    from protocol.records import RecordBatchBuilder

    builder = RecordBatchBuilder()
    builder.append(b"k", b"v", timestamp=1_700_000_000_000)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=partition, records=builder.build())
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="t", partition_data=[part])])
    return (await call(b, 0, 9, body)).responses[0].partition_responses[0].error_code


async def _find(b) -> list[int]:
    resp = await call(b, 10, 4, req(10, key_type=0, coordinator_keys=KEYS))
    return [c.error_code for c in resp.coordinators]


def _samples(b, name: str) -> dict[str, float]:
    out = {}
    for line in generate_latest(b.metrics.registry).decode().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            labels, value = line.rsplit(" ", 1)
            out[labels[len(name):]] = float(value)
    return out


async def _serve(config, check) -> None:
    async with trio.open_nursery() as nursery:
        b = await nursery.start(serve_broker, config)
        await check(b)
        nursery.cancel_scope.cancel()


async def _made(a, b_dir) -> dict:
    """Topic t (4 partitions) and ``__consumer_offsets`` over dirs a and b, a record in each of t's; where
    each partition of t is and which of KEYS have their offsets partition in b."""
    placed = {}

    async def make(b) -> None:
        await create_ok(b, "t", 4)
        for p in range(4):
            assert await _produce(b, p) == ErrorCode.NONE
        assert await _find(b) == [ErrorCode.NONE] * 8
        placed["t"] = {p: b.topics.partition("t", p).log.dir.parent for p in range(4)}
        store = b.groups.store
        placed["offsets"] = {p: b.topics.partition("__consumer_offsets", p).log.dir.parent for p in range(4)}
        placed["keys"] = [b.topics.partition("__consumer_offsets", store.partition_of(k)).log.dir.parent == b_dir
                          for k in KEYS]  # fmt: skip

    await _serve(_config(a, b_dir), make)
    assert set(placed["t"].values()) == {a, b_dir} and any(placed["keys"]) and not all(placed["keys"])
    return placed


async def test_an_eio_loading_dir_b_leaves_the_broker_serving_dir_a(tmp_path, monkeypatch):
    a, b_dir = tmp_path / "a", tmp_path / "b"
    placed = await _made(a, b_dir)
    in_a = [p for p, r in placed["t"].items() if r == a]
    in_b = [p for p, r in placed["t"].items() if r == b_dir]

    async def check(b) -> None:
        assert [await _produce(b, p) for p in in_a] == [ErrorCode.NONE] * len(in_a)
        assert [await _produce(b, p) for p in in_b] == [STORAGE] * len(in_b)
        assert await _fetch_error(b, 12) == (STORAGE if 0 in in_b else ErrorCode.NONE)
        results = {r.log_dir: r for r in (await call(b, 35, 4, req(35, topics=None))).results}
        assert results[str(b_dir)].error_code == STORAGE and results[str(b_dir)].topics == []
        assert results[str(a)].error_code == ErrorCode.NONE
        assert {p.partition_index for t in results[str(a)].topics if t.name == "t" for p in t.partitions} == set(in_a)
        Topic = sub(3, "MetadataRequestTopic")
        resp = await call(b, 3, 12, req(3, topics=[Topic(name="t")], allow_auto_topic_creation=False))
        parts = {p.partition_index: (p.error_code, p.leader_id, p.offline_replicas) for p in resp.topics[0].partitions}
        assert parts == {p: (ErrorCode.LEADER_NOT_AVAILABLE, -1, [NODE]) if p in in_b else (ErrorCode.NONE, NODE, [])
                         for p in range(4)}  # fmt: skip
        assert await _find(b) == [ErrorCode.COORDINATOR_NOT_AVAILABLE if k else ErrorCode.NONE
                                  for k in placed["keys"]]  # fmt: skip
        offline = _samples(b, "kafka_log_logmanager_logdirectoryoffline")
        assert offline == {f'{{logDirectory="{a}"}}': 0.0, f'{{logDirectory="{b_dir}"}}': 1.0}
        assert _samples(b, "kafka_log_logmanager_offlinelogdirectorycount") == {"": 1.0}
        offline_replicas = len(in_b) + list(placed["offsets"].values()).count(b_dir)
        assert _samples(b, "kafka_server_replicamanager_offlinereplicacount") == {"": offline_replicas}
        sizes = _samples(b, "kafka_log_log_size")  # an offline log has no Log gauges (Kafka removes them)
        assert {k for k in sizes if 'topic="t"' in k} == {f'{{partition="{p}",topic="t"}}' for p in in_a}
        assert open_files_under(b_dir) == 0

    with monkeypatch.context() as patch:
        _fail_loading(patch, b_dir)
        await _serve(_config(a, b_dir), check)
    assert (a / CLEAN_SHUTDOWN).exists() and not (b_dir / CLEAN_SHUTDOWN).exists()

    async def recovered(b) -> None:  # the fault gone: b's logs load (recovered: no marker there) and serve
        assert not b.topics.manager.failures.offline
        assert [await _produce(b, p) for p in range(4)] == [ErrorCode.NONE] * 4
        assert {p: b.topics.partition("t", p).log.log_end_offset for p in range(4)} == {
            p: 3 if p in in_a else 2 for p in range(4)
        }
        assert await _find(b) == [ErrorCode.NONE] * 8

    await _serve(_config(a, b_dir), recovered)


async def test_every_dir_failing_stops_the_start_and_leaves_nothing_behind(tmp_path, monkeypatch):
    a, b_dir = tmp_path / "a", tmp_path / "b"
    await _made(a, b_dir)
    _fail_loading(monkeypatch, tmp_path)
    with pytest.raises(BaseException) as info:  # noqa: B017  (trio wraps it in exception groups)
        with trio.fail_after(10):
            await _serve(_config(a, b_dir), lambda _b: trio.sleep(0))
    exc = info.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    assert isinstance(exc, LogDirsFailed) and "all log dirs in" in str(exc)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("log-recovery-")]
    assert open_files_under(tmp_path) == 0


async def test_an_error_that_is_not_the_disks_still_fails_the_start(tmp_path, monkeypatch):
    a, b_dir = tmp_path / "a", tmp_path / "b"
    await _made(a, b_dir)
    _fail_loading(monkeypatch, b_dir, ValueError("a bug, not the disk"))
    with pytest.raises(BaseException) as info:  # noqa: B017
        with trio.fail_after(10):
            await _serve(_config(a, b_dir), lambda _b: trio.sleep(0))
    exc = info.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    assert isinstance(exc, ValueError)
    assert open_files_under(tmp_path) == 0


async def test_a_move_whose_source_failed_to_load_is_not_begun_again(tmp_path, monkeypatch):
    """A partition of b caught moving to a (its future copy in a): b fails as it loads, so the copy is
    dropped and the move, begun again as after any stop, answers KAFKA_STORAGE_ERROR instead of moving a
    log that is not there (the old start failed; without the check the move's task met the stand-in)."""
    a, b_dir = tmp_path / "a", tmp_path / "b"
    placed = await _made(a, b_dir)
    p = min(p for p, r in placed["t"].items() if r == b_dir)
    shutil.copytree(b_dir / f"t-{p}", a / f"t-{p}.{'0' * 32}-future")
    _fail_loading(monkeypatch, b_dir)

    async def check(b) -> None:
        assert b.topics.manager.moves.all() == [] and b.topics.partition("t", p).log.offline
        assert await _produce(b, p) == STORAGE

    await _serve(_config(a, b_dir), check)
    assert not list(a.glob("*-future"))
