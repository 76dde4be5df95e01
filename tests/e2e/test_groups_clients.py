"""Consumer groups of confluent-kafka, aiokafka and Java members against a real broker process.

* confluent-kafka with the ``range`` and ``cooperative-sticky`` assignors:
  partitions shared and moved, commits with metadata read back;
* aiokafka: commit, then a second run resumes from the commit;
* the Java client (subscribe, poll, commitSync, committed; then the Admin
  client's listConsumerGroups and describeConsumerGroups) if a JDK is there:
  4.3.0 with its default assignors, and 3.9.1 (Flink 2.0's) with ``range``
  and with ``cooperative-sticky``. 3.9.1 sends (the broker's request metrics
  by version) FindCoordinator v6, JoinGroup v9, SyncGroup v5, OffsetCommit v9,
  OffsetFetch v9, LeaveGroup v5, Fetch v17, ListOffsets v9, Metadata v12,
  ListGroups v5 and, for describeConsumerGroups, ConsumerGroupDescribe v0
  first (a classic group: GROUP_ID_NOT_FOUND) then DescribeGroups v5; 4.3.0
  the same but Fetch v18, ListOffsets v11, Metadata v13, ConsumerGroupDescribe
  v1 and DescribeGroups v6.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import warnings

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KPTopicPartition


from .groups import GROUP_CONFIG, create_topic, produce_keys

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


def _ck_member(bootstrap: str, group: str, strategy: str, name: str) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
        "partition.assignment.strategy": strategy, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20000,
        "fetch.wait.max.ms": 100,
    })  # fmt: skip


def _ck_parts(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


class _CKGroup:
    """Two confluent-kafka members of one group: what each consumed, committing after every poll."""

    def __init__(self, bootstrap: str, topic: str, group: str, strategy: str, parts: int) -> None:
        self.bootstrap, self.topic, self.strategy, self.parts = bootstrap, topic, strategy, parts
        self.members = [_ck_member(bootstrap, group, strategy, f"ck-member-{i}") for i in range(2)]
        self.got: list[list[tuple[int, int, str]]] = [[], []]
        self.open = [0, 1]

    def poll(self, indexes) -> None:
        for i in indexes:
            msgs = self.members[i].consume(num_messages=100, timeout=0.05)
            assert [m.error() for m in msgs if m.error() is not None] == []
            if msgs:
                last = {m.partition(): m.offset() for m in msgs}
                self.members[i].commit(offsets=[CKTopicPartition(self.topic, p, o + 1) for p, o in last.items()],
                                       asynchronous=False)  # fmt: skip
                self.got[i].extend((m.partition(), m.offset(), m.key().decode()) for m in msgs)

    def poll_until(self, indexes, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll(indexes)
            if predicate():
                return
        owned = [_ck_parts(self.members[i]) for i in indexes]
        raise AssertionError(f"{self.strategy}: not met within {timeout} s: {what}; assignments {owned}, "
                             f"got {[len(g) for g in self.got]}")  # fmt: skip

    def shared(self) -> bool:
        a, b = _ck_parts(self.members[0]), _ck_parts(self.members[1])
        return bool(a) and bool(b) and not a & b and a | b == set(range(self.parts))

    def committed(self, i: int) -> list:
        return self.members[i].committed([CKTopicPartition(self.topic, p) for p in range(self.parts)], timeout=15)

    def produce(self, first: int, last: int) -> dict:
        keys = [(i % self.parts, f"{self.strategy}-{i:03d}") for i in range(first, last)]
        return produce_keys(self.bootstrap, self.topic, keys)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_group_shares_partitions_and_commits(broker_factory, strategy):
    broker = broker_factory(**GROUP_CONFIG)
    create_topic(broker.bootstrap, f"ck-{strategy}", 4)
    g = _CKGroup(broker.bootstrap, f"ck-{strategy}", f"ck-group-{strategy}", strategy, 4)
    try:
        for m in g.members:
            m.subscribe([g.topic])
        _two_members_share_and_commit(g)
        _the_survivor_takes_over(g)
    finally:
        for i in g.open:
            g.members[i].close()


def _two_members_share_and_commit(g: _CKGroup) -> None:
    """Each member owns two partitions, reads exactly those, and either may read the group's offsets."""
    g.poll_until([0, 1], g.shared, 30, "both members own partitions")
    owned = [_ck_parts(g.members[0]), _ck_parts(g.members[1])]
    assert sorted(len(o) for o in owned) == [2, 2]
    first = g.produce(0, 200)
    g.poll_until([0, 1], lambda: len(g.got[0]) + len(g.got[1]) >= 200, 30, "all 200 records consumed")
    g.poll([0, 1])  # nothing more may come
    for i in (0, 1):
        assert {p for p, _o, _k in g.got[i]} == owned[i]  # each read exactly its own partitions
    assert sorted(k for got in g.got for _p, _o, k in got) == sorted(first)
    assert all(first[k] == (p, o) for got in g.got for p, o, k in got)
    for i in (0, 1):
        assert [(tp.partition, tp.offset, tp.error) for tp in g.committed(i)] == [(p, 50, None) for p in range(4)]


def _the_survivor_takes_over(g: _CKGroup) -> None:
    """The second member leaves; the first takes over at its committed offsets and commits with metadata."""
    g.members[1].close()
    g.open.remove(1)
    g.poll_until([0], lambda: _ck_parts(g.members[0]) == set(range(g.parts)), 30, "member 0 owns all partitions")
    before = len(g.got[0])
    second = g.produce(200, 240)
    g.poll_until([0], lambda: len(g.got[0]) - before >= 40, 30, "the next 40 records consumed by member 0")
    g.poll([0])
    assert sorted((p, o, k) for p, o, k in g.got[0][before:]) == sorted((p, o, k) for k, (p, o) in second.items())
    assert sorted({o for p, o, _k in g.got[0][before:]}) == list(range(50, 60))
    final = [CKTopicPartition(g.topic, p, 60, metadata=f"{g.strategy}-done-{p}") for p in range(g.parts)]
    g.members[0].commit(offsets=final, asynchronous=False)
    assert [(tp.partition, tp.offset, tp.metadata) for tp in g.committed(0)] == [
        (p, 60, f"{g.strategy}-done-{p}") for p in range(g.parts)
    ]


# --------------------------------------------------------------------------- aiokafka


async def _aio_run(bootstrap: str, topic: str, group: str, expect: int) -> tuple[list, int, dict]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AIOTopicPartition

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, client_id=f"aio-{group}", auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500, fetch_max_wait_ms=100,
    )  # fmt: skip
    await consumer.start()
    try:
        got: list[tuple[int, int, str]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while len(got) < expect and loop.time() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for msgs in batch.values():
                got.extend((m.partition, m.offset, m.key.decode()) for m in msgs)
            if batch:
                await consumer.commit()
        extra = sum(len(v) for v in (await consumer.getmany(timeout_ms=300)).values())
        committed = {p: await consumer.committed(AIOTopicPartition(topic, p)) for p in (0, 1)}
        return got, extra, committed
    finally:
        await consumer.stop()


def _aio(bootstrap: str, topic: str, group: str, expect: int):
    return asyncio.run(asyncio.wait_for(_aio_run(bootstrap, topic, group, expect), 60))


def test_aiokafka_group_commits_and_resumes(broker_factory):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "aio-group", "aio-members"
    create_topic(broker.bootstrap, topic, 2)
    first = produce_keys(broker.bootstrap, topic, [(i % 2, f"aio-{i:02d}") for i in range(40)])
    got, extra, committed = _aio(broker.bootstrap, topic, group, 40)
    assert sorted(got) == sorted((p, o, k) for k, (p, o) in first.items())
    assert extra == 0
    assert committed == {0: 20, 1: 20}

    second = produce_keys(broker.bootstrap, topic, [(i % 2, f"aio-{i:02d}") for i in range(40, 50)])
    got, extra, committed = _aio(broker.bootstrap, topic, group, 10)
    assert sorted(got) == sorted((p, o, k) for k, (p, o) in second.items())  # resumed at offset 20
    assert {o for _p, o, _k in got} == set(range(20, 25))
    assert extra == 0
    assert committed == {0: 25, 1: 25}


# ----------------------------------------------------------------------- Java client


def _java_group_run(classpath: str, bootstrap: str, topic: str, group: str, count: int, metadata: str,
                    assignor: str | None) -> dict:
    args = [bootstrap, topic, group, str(count), metadata, *([assignor] if assignor else [])]
    result = subprocess.run(["java", "-cp", classpath, "GroupConsumer", *args], capture_output=True, text=True,
                            timeout=90)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out: dict = {"record": [], "committed": {}, "listed": [], "described": []}
    for line in result.stdout.splitlines():
        kind, *fields = line.split("\t")
        if kind == "record":
            out["record"].append((int(fields[0]), int(fields[1]), fields[2], fields[3]))
        elif kind == "committed":
            out["committed"][int(fields[0])] = (int(fields[1]), fields[2])
        elif kind == "member":
            out["member"] = (int(fields[0]), fields[1])
        elif kind == "assignment":
            out["assignment"] = [int(p) for p in fields[0].split(",") if p]
        elif kind in ("listed", "described"):
            out[kind].append(fields)
    return out


@pytest.mark.parametrize(("client", "assignor", "protocol"), [
    ("4.3", None, "range"),  # the client's default list: range first
    ("3.9", "RangeAssignor", "range"),
    ("3.9", "CooperativeStickyAssignor", "cooperative-sticky"),
    ("3.9", "assign", ""),  # Flink's KafkaSource: assign(), commits into a group it never joins
])  # fmt: skip
def test_java_consumer_group_commits_and_resumes(broker_factory, client, assignor, protocol):
    from ..java_jars import compile_java

    classpath = compile_java("GroupConsumer.java", client=client)
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "java-group", "java-members"
    create_topic(broker.bootstrap, topic, 3)
    first = produce_keys(broker.bootstrap, topic, [(i % 3, f"java-{i:02d}") for i in range(30)])
    run = _java_group_run(classpath, broker.bootstrap, topic, group, 30, "java-run-1", assignor)
    assert sorted(run["record"]) == sorted((p, o, k, k) for k, (p, o) in first.items())
    assert run["assignment"] == [0, 1, 2]
    generation, member_id = run["member"]
    assert (generation, member_id) == (-1, "") if assignor == "assign" else generation >= 1 and member_id
    assert run["committed"] == {p: (10, "java-run-1") for p in range(3)}
    if assignor == "assign":  # a simple group: offsets only, no members, no protocol
        assert run["listed"] == [[group, "Empty", "true"]]
        assert run["described"] == [["Empty", "", "true", "0", "-"]]
    else:
        assert run["listed"] == [[group, "Stable", "false"]]
        assert run["described"] == [["Stable", protocol, "false", "1", "[0, 1, 2]"]]

    second = produce_keys(broker.bootstrap, topic, [(i % 3, f"java-{i:02d}") for i in range(30, 45)])
    run = _java_group_run(classpath, broker.bootstrap, topic, group, 15, "java-run-2", assignor)
    assert sorted(run["record"]) == sorted((p, o, k, k) for k, (p, o) in second.items())  # resumed at offset 10
    assert run["committed"] == {p: (15, "java-run-2") for p in range(3)}

    # Another client reads the Java client's commits.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        got = [consumer.committed(KPTopicPartition(topic, p), metadata=True, timeout_ms=15000) for p in range(3)]
        assert [(om.offset, om.metadata) for om in got] == [(15, "java-run-2")] * 3
    finally:
        consumer.close()
