"""A disk failure takes the log dir offline, as Kafka's LogDirFailureChannel does (``storage.log_dir_failure``).

After one failed write or fsync, every partition of that dir answers
KAFKA_STORAGE_ERROR to Produce, Fetch (NOT_LEADER_OR_FOLLOWER before v6) and
ListOffsets until a restart, so no offset is handed out twice and nothing is
acknowledged from a disk that failed; an acks=all Produce whose durable-mode
fsync failed gets KAFKA_STORAGE_ERROR (not a closed connection); a
long-polling Fetch answers as soon as its dir fails; with two dirs the other
carries on; once no dir is left the server stops (Kafka halts).
"""

from __future__ import annotations

import errno

import pytest
import trio

from broker.config import BrokerConfig
from broker.server import AllLogDirsFailed, serve_broker
from protocol import ErrorCode
from protocol.records import RecordBatchBuilder
from storage import fileops

from ._admin_client import broker, call, create_ok, now_ms, open_broker, req, sub  # noqa: F401  (broker is a fixture)
from .test_authz_fetch import fetch_body

STORAGE = ErrorCode.KAFKA_STORAGE_ERROR


def _records() -> bytes:
    builder = RecordBatchBuilder()
    builder.append(b"k", b"v", timestamp=now_ms())
    return builder.build()


async def _produce(b, acks: int = 1) -> tuple[int, int]:
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=_records())
    body = req(0, acks=acks, timeout_ms=1000, topic_data=[Data(name="t", partition_data=[part])])
    answer = (await call(b, 0, 9, body)).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


async def _fetch_error(b, version: int) -> int:
    resp = await call(b, 1, version, fetch_body(version, {"t": {0: 0}}))
    return resp.responses[0].partitions[0].error_code


async def _list_offsets_error(b) -> int:
    T = sub(2, "ListOffsetsTopic")
    body = req(2, replica_id=-1, topics=[T(name="t", partitions=[T.ListOffsetsPartition(partition_index=0,
                                                                                        timestamp=-1)])])  # fmt: skip
    return (await call(b, 2, 7, body)).topics[0].partitions[0].error_code


def _fail(monkeypatch, name: str, code: int) -> None:
    def failing(*_args, **_kwargs):
        raise OSError(code, "injected")

    monkeypatch.setattr(fileops, name, failing)


async def test_after_a_full_disk_the_partitions_of_the_dir_answer_storage_errors(broker, monkeypatch):  # noqa: F811
    await create_ok(broker, "t", 1)
    assert await _produce(broker) == (ErrorCode.NONE, 0)
    real = fileops.pwrite
    _fail(monkeypatch, "pwrite", errno.ENOSPC)
    assert await _produce(broker) == (STORAGE, -1)
    monkeypatch.setattr(fileops, "pwrite", real)  # space again: the dir stays offline until a restart
    assert await _produce(broker) == (STORAGE, -1)
    assert await _fetch_error(broker, 12) == STORAGE
    assert await _fetch_error(broker, 4) == ErrorCode.NOT_LEADER_OR_FOLLOWER  # Kafka's down-conversion
    assert await _list_offsets_error(broker) == STORAGE


async def test_a_failed_durable_fsync_answers_storage_error_and_never_acknowledges(tmp_path, monkeypatch):
    b = open_broker(tmp_path, log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1)
        assert await _produce(b, acks=-1) == (ErrorCode.NONE, 0)
        real = fileops.fsync
        _fail(monkeypatch, "fsync", errno.EIO)
        assert await _produce(b, acks=-1) == (STORAGE, -1)
        monkeypatch.setattr(fileops, "fsync", real)  # a later fsync that succeeds proves nothing
        assert await _produce(b, acks=-1) == (STORAGE, -1)
    finally:
        b.close()


async def test_an_append_waiting_for_its_fsync_when_another_fails_in_its_dir_is_not_acknowledged(tmp_path,
                                                                                                monkeypatch):  # fmt: skip
    """Producer 1 waits (acks=-1) for the round that will fsync its record; meanwhile producer 2's append in the
    same dir hits a full disk, which takes the dir offline and drops its logs from the group commit: the next
    round succeeds without them. Before, producer 1 was answered NONE for a record never fsynced."""
    b = open_broker(tmp_path, log_flush_durable_enable="true")
    try:
        await create_ok(b, "t", 1)
        await create_ok(b, "c", 1)
        real_wait, injected = b.wait_durable, []

        async def wait_while_another_append_fails() -> None:
            if not injected:
                injected.append(True)
                with monkeypatch.context() as m:
                    _fail(m, "pwrite", errno.ENOSPC)
                    Data = sub(0, "TopicProduceData")
                    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="c", partition_data=[
                        Data.PartitionProduceData(index=0, records=_records())])])  # fmt: skip
                    other = (await call(b, 0, 9, body)).responses[0].partition_responses[0]
                    assert other.error_code == STORAGE
            await real_wait()

        b.wait_durable = wait_while_another_append_fails
        assert await _produce(b, acks=-1) == (STORAGE, -1)
    finally:
        b.close()


async def test_the_server_stops_once_every_log_dir_has_failed(tmp_path, monkeypatch):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0",
                                      "node.id": "1", "prometheus.port": "0"})  # fmt: skip
    with pytest.raises(BaseException) as info:  # noqa: B017  (trio wraps it in exception groups)
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                b = await nursery.start(serve_broker, config)
                await create_ok(b, "t", 1)
                _fail(monkeypatch, "pwrite", errno.ENOSPC)
                assert await _produce(b) == (STORAGE, -1)
                await trio.sleep_forever()
    exc = info.value
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    assert isinstance(exc, AllLogDirsFailed)
    assert not (tmp_path / "data" / ".kafka_cleanshutdown").exists()  # the next start recovers the dir


async def _serve_until_a_dir_fails(tmp_path, monkeypatch, fail_first: bool) -> BaseException | None:
    """Serve on two dirs, fail a partition's dir by a produce whose write fails, and say how the server ended."""
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    config = BrokerConfig.from_props({"log.dirs": f"{dirs[0]},{dirs[1]}", "node.id": "1", "prometheus.port": "0",
                                      "listeners": "PLAINTEXT://127.0.0.1:0"})  # fmt: skip
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                b = await nursery.start(serve_broker, config)
                await create_ok(b, "t", 1)
                log_ = b.topics.partition("t", 0).log
                if (log_.dir.parent == dirs[0]) != fail_first:  # the topic is in the other dir: one more
                    await create_ok(b, "t2", 1)
                    log_ = b.topics.partition("t2", 0).log
                assert (log_.dir.parent == dirs[0]) == fail_first
                real = fileops.pwrite
                _fail(monkeypatch, "pwrite", errno.EIO)
                with pytest.raises(Exception):  # noqa: B017  (the storage error of the failed write)
                    log_.append(_records(), 0, 0, now_ms())
                monkeypatch.setattr(fileops, "pwrite", real)
                await trio.sleep(0.5)  # the watcher would have stopped the server by now
                nursery.cancel_scope.cancel()
    except BaseException as exc:  # noqa: BLE001  (trio wraps it in exception groups)
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return exc
    return None


async def test_the_server_stops_when_the_first_log_dir_which_holds_the_metadata_fails(tmp_path, monkeypatch):
    """Kafka's ReplicaManager.handleLogDirFailure halts a KRaft broker whose metadata log dir failed (by default
    the first of log.dirs; ours holds the topics and the cluster id); another dir failing leaves it serving."""
    stopped = await _serve_until_a_dir_fails(tmp_path / "a", monkeypatch, fail_first=True)
    assert isinstance(stopped, AllLogDirsFailed) and "metadata log dir" in str(stopped)
    assert await _serve_until_a_dir_fails(tmp_path / "b", monkeypatch, fail_first=False) is None


def _gauge(b, name: str) -> float:
    from prometheus_client import generate_latest

    line = next(l for l in generate_latest(b.metrics.registry).decode().splitlines() if l.startswith(name + " "))
    return float(line.split()[1])


async def test_a_failed_dir_leaves_the_other_dir_serving(tmp_path, monkeypatch):
    """Kafka takes one log dir offline: the other's partitions carry on, new logs go there only, DescribeLogDirs
    and AlterReplicaLogDirs answer KAFKA_STORAGE_ERROR for the failed one, the gauges count it."""
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    b = open_broker(tmp_path, log_dirs=f"{d1},{d2}")
    try:
        await create_ok(b, "u", 1)  # in d1, the metadata's: its failure would stop the broker
        await create_ok(b, "t", 1)
        failed = b.topics.partition("t", 0).log.dir.parent
        assert failed == d2
        real = fileops.pwrite
        _fail(monkeypatch, "pwrite", errno.EIO)
        assert await _produce(b) == (STORAGE, -1)
        monkeypatch.setattr(fileops, "pwrite", real)
        other = b.topics.partition("u", 0).log
        assert other.dir.parent != failed and not other.offline
        other.append(_records(), 0, 0, now_ms())  # the other dir takes appends
        await create_ok(b, "v", 2)
        assert {b.topics.partition("v", i).log.dir.parent for i in range(2)} == {other.dir.parent}
        results = {r.log_dir: r.error_code for r in (await call(b, 35, 4, req(35, topics=None))).results}
        assert results == {str(failed): STORAGE, str(other.dir.parent): ErrorCode.NONE}
        Dir = sub(34, "AlterReplicaLogDir")
        body = req(34, dirs=[Dir(path=str(failed), topics=[Dir.AlterReplicaLogDirTopic(name="u", partitions=[0])])])
        assert (await call(b, 34, 2, body)).results[0].partitions[0].error_code == STORAGE
        assert _gauge(b, "kafka_log_logmanager_offlinelogdirectorycount") == 1
        assert _gauge(b, "kafka_server_replicamanager_offlinereplicacount") == 1
    finally:
        b.close()


async def test_a_long_polling_fetch_answers_as_soon_as_its_dir_fails(tmp_path, monkeypatch):
    """Kafka's DelayedFetch completes once a partition it waits on goes offline, not at max_wait_ms."""
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    config = BrokerConfig.from_props({"log.dirs": f"{d1},{d2}", "listeners": "PLAINTEXT://127.0.0.1:0",
                                      "node.id": "1", "prometheus.port": "0"})  # fmt: skip
    async with trio.open_nursery() as nursery:
        b = await nursery.start(serve_broker, config)
        await create_ok(b, "s", 1)  # in d1: t goes to d2, whose failure does not stop the broker
        await create_ok(b, "t", 1)
        assert b.topics.partition("t", 0).log.dir.parent == d2
        answers = []

        async def long_poll() -> None:
            body = fetch_body(12, {"t": {0: 0}}, max_wait_ms=30_000, min_bytes=1)
            answers.append((await call(b, 1, 12, body, timeout=5)).responses[0].partitions[0].error_code)

        nursery.start_soon(long_poll)
        await trio.sleep(0.2)
        _fail(monkeypatch, "pwrite", errno.ENOSPC)
        with trio.fail_after(5):
            assert await _produce(b) == (STORAGE, -1)
            monkeypatch.undo()  # d1 is not full: its files (the clean-shutdown marker) are written at the stop
            while not answers:
                await trio.sleep(0.05)
        assert answers == [STORAGE]
        nursery.cancel_scope.cancel()


async def test_find_coordinator_answers_not_available_for_a_key_whose_offsets_partition_failed(tmp_path):
    """In Kafka the ``__consumer_offsets`` partition of a failed dir has no leader: no coordinator for its keys."""
    b = open_broker(tmp_path, log_dirs=f"{tmp_path / 'd1'},{tmp_path / 'd2'}", offsets_topic_num_partitions="4")
    try:
        async def find(*keys: str) -> list[int]:
            resp = await call(b, 10, 4, req(10, key_type=0, coordinator_keys=list(keys)))
            return [c.error_code for c in resp.coordinators]

        keys = [f"group-{i}" for i in range(8)]
        assert await find(*keys) == [ErrorCode.NONE] * 8  # creates __consumer_offsets over both dirs
        store = b.groups.store
        failed = b.topics.partition("__consumer_offsets", store.partition_of(keys[0])).log.dir.parent
        b.topics.manager.failures.fail_dir(failed, "injected")
        in_failed = [b.topics.partition("__consumer_offsets", store.partition_of(k)).log.dir.parent == failed
                     for k in keys]  # fmt: skip
        assert any(in_failed) and not all(in_failed)
        expected = [ErrorCode.COORDINATOR_NOT_AVAILABLE if f else ErrorCode.NONE for f in in_failed]
        assert await find(*keys) == expected
        resp = await call(b, 10, 3, req(10, key_type=0, key=keys[0]))
        assert (resp.error_code, resp.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    finally:
        b.close()


async def test_metadata_shows_a_partition_of_a_failed_dir_without_leader(tmp_path):
    """Kafka's metadata after a log dir failure: the partition's only replica is offline, so no leader."""
    b = open_broker(tmp_path, log_dirs=f"{tmp_path / 'd1'},{tmp_path / 'd2'}")
    try:
        await create_ok(b, "t", 2)
        failed = b.topics.partition("t", 0).log.dir.parent
        b.topics.manager.failures.fail_dir(failed, "injected")
        Topic = sub(3, "MetadataRequestTopic")
        resp = await call(b, 3, 12, req(3, topics=[Topic(name="t")], allow_auto_topic_creation=False))
        parts = {p.partition_index: (p.error_code, p.leader_id, p.offline_replicas) for p in resp.topics[0].partitions}
        assert parts == {0: (ErrorCode.LEADER_NOT_AVAILABLE, -1, [3]), 1: (ErrorCode.NONE, 3, [])}
        T = sub(75, "TopicRequest")
        resp = await call(b, 75, 0, req(75, topics=[T(name="t")], response_partition_limit=10))
        parts = {p.partition_index: (p.error_code, p.leader_id, p.offline_replicas) for p in resp.topics[0].partitions}
        assert parts == {0: (ErrorCode.LEADER_NOT_AVAILABLE, -1, [3]), 1: (ErrorCode.NONE, 3, [])}
    finally:
        b.close()


async def test_describe_producers_answers_storage_error_for_a_partition_of_a_failed_dir(broker):  # noqa: F811
    await create_ok(broker, "t", 1)
    broker.topics.manager.failures.fail_dir(broker.topics.partition("t", 0).log.dir.parent, "injected")
    T = sub(61, "TopicRequest")
    resp = await call(broker, 61, 0, req(61, topics=[T(name="t", partition_indexes=[0])]))
    assert resp.topics[0].partitions[0].error_code == STORAGE
