"""Real clients move a partition between the two log dirs of a broker process (AlterReplicaLogDirs).

kafka-python's admin: a producer keeps writing while the move runs;
afterwards ``describe_log_dirs`` lists the partition under the new dir only,
every acknowledged record is read back exactly once with its offset, key,
value and timestamp, writing goes on, and all of it is still there after a
clean restart and after a crash; a move a crash cut short (its future
directory left half filled) begins again when the broker starts. The Java Admin (kafka-clients 4.3.0) sees
the move with ``describeReplicaLogDirs`` as ``kafka-reassign-partitions.sh
--verify`` does.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaProducer, TopicPartitionReplica
    from kafka.admin import NewTopic
    from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError

from .clients import kp_consume
from .harness import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

BASE_TS = 1_750_000_000_000
NODE = 1  # config/server.properties


def _where(admin: KafkaAdminClient, topic: str) -> dict[str, bool]:
    """log dir -> whether it holds a future copy, for every dir listing partition 0 of ``topic``."""
    (answer,) = admin.describe_log_dirs()
    return {d["log_dir"]: p["is_future_key"] for d in answer["log_dirs"] for t in d["topics"] if t["name"] == topic
            for p in t["partitions"] if p["partition_index"] == 0}  # fmt: skip


def _send(producer: KafkaProducer, start: int, n: int) -> list:
    futures = [producer.send("moved", key=b"k%d" % i, value=b"value-%d " % i * 20, timestamp_ms=BASE_TS + i,
                             partition=0) for i in range(start, start + n)]  # fmt: skip
    producer.flush(30)
    return [f.get(timeout=30).offset for f in futures]


def _check(bootstrap: str, n: int) -> None:
    got = kp_consume(bootstrap, "moved", n)
    assert [(m.offset, m.key, m.value, m.timestamp) for m in got] == [
        (i, b"k%d" % i, b"value-%d " % i * 20, BASE_TS + i) for i in range(n)]


def _two_dirs_with_records(broker_factory, tmp_path, n: int):
    """A broker with log dirs a and b, topic "moved" holding ``n`` records; (broker, admin, producer, dirs)."""
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    broker = broker_factory(log_dirs=",".join(dirs), log_segment_bytes="262144")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("moved", 1, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=2, acks="all")
    assert _send(producer, 0, n) == list(range(n))
    return broker, admin, producer, dirs


def test_a_partition_moves_between_log_dirs_while_it_is_written(broker_factory, tmp_path):
    broker, admin, producer, dirs = _two_dirs_with_records(broker_factory, tmp_path, 20_000)  # ~4 MB, dozens of segments
    (source,) = _where(admin, "moved")
    target = next(d for d in dirs if os.path.abspath(d) != source)
    during: list = []

    def write_on() -> None:
        for start in range(20_000, 30_000, 100):
            during.extend(_send(producer, start, 100))

    writer = threading.Thread(target=write_on)
    writer.start()
    tpr = TopicPartitionReplica("moved", 0, NODE)
    assert admin.alter_replica_log_dirs({tpr: os.path.abspath(target)}) == {tpr: NoError}
    wait_until(lambda: _where(admin, "moved") == {os.path.abspath(target): False})
    writer.join(60)
    assert during == list(range(20_000, 30_000))
    assert _send(producer, 30_000, 10) == list(range(30_000, 30_010))
    producer.close(5)
    _check(broker.bootstrap, 30_010)
    assert not os.path.exists(os.path.join(source, "moved-0"))
    unknown = TopicPartitionReplica("moved", 1, NODE)
    answers = admin.alter_replica_log_dirs({tpr: "/not/a/log/dir", unknown: os.path.abspath(target)})
    assert answers == {tpr: LogDirNotFoundError, unknown: UnknownTopicOrPartitionError}
    admin.close()
    broker.stop()
    broker.restart()
    _check(broker.bootstrap, 30_010)
    broker.kill()  # a crash: the move must not come undone either
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    assert _where(admin, "moved") == {os.path.abspath(target): False}
    admin.close()
    _check(broker.bootstrap, 30_010)


def test_a_move_a_crash_cut_short_begins_again_at_the_next_start(broker_factory, tmp_path):
    broker, admin, producer, dirs = _two_dirs_with_records(broker_factory, tmp_path, 5_000)
    producer.close(5)
    (source,) = _where(admin, "moved")
    admin.close()
    target = next(os.path.abspath(d) for d in dirs if os.path.abspath(d) != source)
    broker.kill()
    # What a crash in the middle of a copy leaves: a future directory beside the live one, half filled.
    future = os.path.join(target, "moved-0.0123456789abcdef0123456789abcdef-future")
    os.makedirs(future)
    with open(os.path.join(future, "00000000000000000000.log"), "wb") as f:
        f.write(b"\0" * 100)
    broker.restart()
    assert "moving moved-0 to" in wait_until(lambda: "again, as it was" in broker.log_text() and broker.log_text())
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    wait_until(lambda: _where(admin, "moved") == {target: False})
    admin.close()
    _check(broker.bootstrap, 5_000)
    assert not os.path.exists(future) and not os.path.exists(os.path.join(source, "moved-0"))


def test_the_throttles_kafka_reassign_partitions_sets_slow_a_move_down(broker_factory, tmp_path):
    """``--throttle`` and ``--replica-alter-log-dirs-throttle``: the broker and topic configs the tool sets."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    broker, admin, producer, dirs = _two_dirs_with_records(broker_factory, tmp_path, 20_000)  # ~4 MB
    producer.close(5)
    rate = 1_000_000
    node = ConfigResource(ResourceType.BROKER, str(NODE), incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in (
            ("leader.replication.throttled.rate", 700_000_000), ("follower.replication.throttled.rate", 700_000_000),
            ("replica.alter.log.dirs.io.max.bytes.per.second", rate))])  # fmt: skip
    topic = ConfigResource(ResourceType.TOPIC, "moved", incremental_configs=[
        ConfigEntry(k, "0:1", incremental_operation=AlterConfigOpType.SET)
        for k in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")])  # fmt: skip
    confluent = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in confluent.incremental_alter_configs([node, topic]).values():
        future.result(30)
    described = confluent.describe_configs([ConfigResource(ResourceType.BROKER, str(NODE))])
    configs = next(iter(described.values())).result(30)
    assert configs["replica.alter.log.dirs.io.max.bytes.per.second"].value == str(rate)
    (source,) = _where(admin, "moved")
    target = next(os.path.abspath(d) for d in dirs if os.path.abspath(d) != source)
    tpr = TopicPartitionReplica("moved", 0, NODE)
    started = time.monotonic()
    assert admin.alter_replica_log_dirs({tpr: target}) == {tpr: NoError}
    wait_until(lambda: _where(admin, "moved") == {target: False}, timeout=60)
    # All but the last megabyte (copied in the final step) goes at 1 MB/s: seconds, where unthrottled is ~0.1 s.
    assert time.monotonic() - started >= 2.0
    admin.close()
    _check(broker.bootstrap, 20_000)


def test_the_java_admin_moves_a_partition_and_sees_it_in_its_new_dir(broker_factory, tmp_path):
    """kafka-clients 4.3.0: alterReplicaLogDirs, then describeReplicaLogDirs as the reassign tool's --verify."""
    from ..java_jars import compile_java

    classpath = compile_java("LogDirMove.java")
    dirs = [os.path.abspath(tmp_path / "a"), os.path.abspath(tmp_path / "b")]
    broker = broker_factory(log_dirs=",".join(dirs))
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("moved", 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    _send(producer, 0, 500)
    producer.close(5)
    result = subprocess.run(["java", "-cp", classpath, "LogDirMove", broker.bootstrap, "moved", str(NODE), dirs[1]],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines() if line.startswith("#")]
    assert rows == [["#before", dirs[0], "null"], ["#alter", "OK"], ["#after", dirs[1], "null"],
                    ["#elsewhere", "LogDirNotFoundException"]]  # fmt: skip
    _check(broker.bootstrap, 500)
