"""Classic consumer groups with real clients against a real broker process.

The broker runs with ``group.initial.rebalance.delay.ms=0`` and
``group.min.session.timeout.ms=1000`` so that members join at once and a
crashed member can be timed out within seconds. Every test checks concrete
keys, offsets and metadata:

* kafka-python: three consumer processes over six partitions while members
  join, leave (SIGTERM: LeaveGroup) and crash (SIGKILL: the session timeout
  moves its partitions), then a restart of the whole group resumes at the
  committed offsets; every record is seen exactly once across the group;
* confluent-kafka with the ``range`` and ``cooperative-sticky`` assignors;
* aiokafka: commit, then a second run resumes from the commit;
* the Java client (subscribe, poll, commitSync, committed) if a JDK is there;
* committed offsets and metadata survive a broker SIGTERM and a SIGKILL, and
  the group is rebuilt from ``__consumer_offsets``;
* a static member (KIP-345) killed and restarted within its session timeout
  gets its partitions back without a rebalance of the others;
* ListGroups / DescribeGroups / DeleteGroups through kafka-python's admin
  client, on an active group (NON_EMPTY_GROUP, commits from outside the
  generation refused) and on an empty one; the deletion survives a restart;
* session timeouts outside ``group.min/max.session.timeout.ms`` are refused;
* kafka-python's ``api_version`` drives old JoinGroup / OffsetCommit /
  OffsetFetch versions (v0 and up) through a commit-and-resume cycle;
* ``__consumer_offsets`` holds Kafka's key/value layouts in Kafka's partition
  for the group, with tombstones after DeleteGroups;
* deleting a topic removes the group offsets of its partitions, as Kafka does.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KPTopicPartition
    from kafka.errors import InvalidSessionTimeoutError, NoError, UnknownMemberIdError

from protocol import API_BY_KEY, ErrorCode, message_class

from .test_bad_input import _connect, _roundtrip

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]
ROOT = Path(__file__).resolve().parents[2]

# Session timeouts as short as one second are accepted. The first join of an empty group waits
# 300 ms (Kafka's default is 3 s), not 0: kafka-python 3.0.12 sends JoinGroup before its metadata
# for the subscribed topic has arrived, so a leader that joins at once assigns nothing and rejoins
# when the metadata lands; that metadata-triggered rejoin does not set the client's rejoin flag,
# and if consumer.poll's timeout expires between its JoinGroup and SyncGroup responses the
# assignment is dropped and heartbeats stay off for good (seen once in ~10 runs; the broker
# answered both within 2 ms). With the delay, the metadata is there before the first assignment.
GROUP_CONFIG = {"group_initial_rebalance_delay_ms": "300", "group_min_session_timeout_ms": "1000"}


# --------------------------------------------------------------------------- helpers


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def _produce(bootstrap: str, topic: str, rows: list[tuple[int, str]]) -> dict[str, tuple[int, int]]:
    """Produce ``(partition, key)`` rows (value = key); returns key -> (partition, offset)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
    placed: dict[str, tuple[int, int]] = {}
    errors: list = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            placed[msg.key().decode()] = (msg.partition(), msg.offset())

    for partition, key in rows:
        producer.produce(topic, key=key.encode(), value=key.encode(), partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    assert len(placed) == len(rows)
    return placed


def _wait(predicate, timeout: float, what: str, details=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"not met within {timeout} s: {what}\n{details()}")


# ------------------------------------------------- kafka-python members as processes

_WORKER = r"""
import json, signal, sys, threading, warnings
warnings.simplefilter("ignore")
from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata
from kafka.errors import KafkaError

bootstrap, topic, group, name, session, instance = sys.argv[1:7]
lock = threading.Lock()
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())


def emit(*events):
    text = "".join(json.dumps(e) + "\n" for e in events)
    with lock:
        sys.stdout.write(text)
        sys.stdout.flush()


class Listener(ConsumerRebalanceListener):
    def on_partitions_revoked(self, revoked):
        emit({"ev": "revoked", "p": sorted(tp.partition for tp in revoked)})

    def on_partitions_assigned(self, assigned):
        emit({"ev": "assigned", "p": sorted(tp.partition for tp in assigned)})


consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=name,
                         group_instance_id=instance or None, auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=int(session), heartbeat_interval_ms=500, max_poll_interval_ms=10000,
                         fetch_max_wait_ms=100)
consumer.subscribe([topic], listener=Listener())
while not stop.is_set():
    batch = consumer.poll(timeout_ms=200, max_records=50)
    if not batch:
        continue
    # Processed = committed: a record is reported only once its offset is committed.
    offsets = {tp: OffsetAndMetadata(msgs[-1].offset + 1, name, -1) for tp, msgs in batch.items()}
    try:
        consumer.commit(offsets)
    except KafkaError as exc:
        emit({"ev": "commit-failed", "error": repr(exc)})
        for tp, msgs in batch.items():
            try:
                consumer.seek(tp, msgs[0].offset)  # not processed: read it again if still ours
            except Exception:
                pass
        continue
    emit(*({"ev": "rec", "p": m.partition, "o": m.offset, "k": m.key.decode()}
           for msgs in batch.values() for m in msgs))
consumer.close()
emit({"ev": "closed"})
"""


class _Worker:
    """One kafka-python group member in its own process, reporting JSON lines on stdout."""

    def __init__(self, name: str, bootstrap: str, topic: str, group: str, log_dir: Path, session_ms: int = 3000,
                 instance: str = "") -> None:  # fmt: skip
        self.name = name
        self.records: list[tuple[int, int, str]] = []  # (partition, offset, key), committed before reported
        self.assignment: set[int] | None = None
        self.events: list[dict] = []
        self.stderr_path = log_dir / f"worker-{name}.stderr"
        self._stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _WORKER, bootstrap, topic, group, name, str(session_ms), instance],
            stdout=subprocess.PIPE, stderr=self._stderr, text=True, cwd=ROOT,
        )  # fmt: skip
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            event = json.loads(line)
            with self._lock:
                self.events.append(event)
                if event["ev"] == "rec":
                    self.records.append((event["p"], event["o"], event["k"]))
                elif event["ev"] == "assigned":
                    self.assignment = set(event["p"])
                elif event["ev"] == "revoked":
                    self.assignment = set()
        self.proc.stdout.close()  # type: ignore[union-attr]  # EOF: the member exited

    def keys(self) -> list[str]:
        with self._lock:
            return [k for _p, _o, k in self.records]

    def current(self) -> set[int] | None:
        with self._lock:
            return None if self.assignment is None else set(self.assignment)

    def terminate(self, timeout: float = 20.0) -> int:
        self.proc.terminate()
        code = self.proc.wait(timeout)
        self._thread.join(5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._thread.join(5)
        self._stderr.close()

    def describe(self) -> str:
        tail = self.stderr_path.read_text()[-1500:] if self.stderr_path.exists() else ""
        with self._lock:
            events = [e for e in self.events if e["ev"] != "rec"][-10:]
            n = len(self.records)
        return f"[{self.name}] rc={self.proc.poll()} records={n} assignment={self.assignment} events={events}\n{tail}"


def _stable(workers: list[_Worker], partitions: int) -> bool:
    """The live members' current assignments are non-empty, disjoint and cover every partition."""
    current = [w.current() for w in workers]
    if any(not a for a in current):
        return False
    union: set[int] = set()
    for a in current:
        if union & a:  # type: ignore[operator]
            return False
        union |= a  # type: ignore[operator]
    return union == set(range(partitions))


class _BackgroundProducer:
    """Produces ``bg-<i>`` to partition ``i % partitions`` about every 10 ms until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.topic, self.partitions = topic, partitions
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
        self.placed: dict[str, tuple[int, int]] = {}
        self.errors: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.placed[msg.key().decode()] = (msg.partition(), msg.offset())

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            key = f"bg-{i:05d}"
            self.producer.produce(self.topic, key=key.encode(), value=key.encode(), partition=i % self.partitions,
                                  on_delivery=self._delivered)  # fmt: skip
            self.producer.poll(0)
            i += 1
            time.sleep(0.01)
        self.sent = i

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> dict[str, tuple[int, int]]:
        self._stop.set()
        self._thread.join(10)
        assert self.producer.flush(30) == 0
        assert self.errors == []
        assert len(self.placed) == self.sent
        return dict(self.placed)


def test_kafka_python_group_join_leave_crash_and_restart(broker_factory, tmp_path):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group, parts = "kp-group", "kp-members", 6
    _create_topic(broker.bootstrap, topic, parts)
    workers: dict[str, _Worker] = {}

    def start(name: str) -> _Worker:
        workers[name] = _Worker(name, broker.bootstrap, topic, group, tmp_path)
        return workers[name]

    def details() -> str:
        return "\n".join(w.describe() for w in workers.values())

    def consumed() -> Counter:
        return Counter(k for w in workers.values() for k in w.keys())

    def sizes(names: str) -> list[int]:
        return sorted(len(workers[n].current() or ()) for n in names)

    background = _BackgroundProducer(broker.bootstrap, topic, parts)
    try:
        # Joins and a leave while records keep arriving.
        background.start()
        start("a")
        _wait(lambda: _stable([workers["a"]], parts), 30, "a alone owns all six partitions", details)
        start("b")
        start("c")
        _wait(lambda: _stable([workers[n] for n in "abc"], parts), 30, "a, b, c share the partitions", details)
        assert sizes("abc") == [2, 2, 2]
        assert workers["a"].terminate() == 0  # close(): LeaveGroup
        _wait(lambda: _stable([workers[n] for n in "bc"], parts), 30, "b, c take over a's partitions", details)
        assert sizes("bc") == [3, 3]
        start("d")
        _wait(lambda: _stable([workers[n] for n in "bcd"], parts), 30, "b, c, d share the partitions", details)
        assert sizes("bcd") == [2, 2, 2]
        time.sleep(1.0)  # records keep flowing to the new layout
        produced = background.stop()
        _wait(lambda: set(consumed()) >= set(produced), 30, "every record produced so far consumed", details)
        assert all(workers[n].keys() for n in "abcd"), details()  # every member did real work

        # kill -9 of an idle member: its partitions move after the session timeout (3 s).
        victim = workers["b"]
        lost = victim.current()
        assert lost and len(lost) == 2
        victim.kill()
        killed_at = time.monotonic()
        crash = _produce(broker.bootstrap, topic, [(i % parts, f"crash-{i:03d}") for i in range(60)])
        _wait(lambda: set(consumed()) >= set(crash), 30, "records after the crash consumed by c and d", details)
        took = time.monotonic() - killed_at
        assert took >= 2.0, f"partitions of a SIGKILLed member moved after {took:.2f} s, before its 3 s session timeout"
        assert _stable([workers["c"], workers["d"]], parts), details()
        assert sizes("cd") == [3, 3]
        on_lost = {k for k, (p, _o) in crash.items() if p in lost}
        taken = {k for n in "cd" for (p, _o, k) in workers[n].records if k.startswith("crash-")}
        assert on_lost <= taken and len(on_lost) == 20

        # Stop the whole group, produce, start two new members: they begin at the committed offsets.
        assert workers["c"].terminate() == 0
        assert workers["d"].terminate() == 0
        later = _produce(broker.bootstrap, topic, [(i % parts, f"later-{i:03d}") for i in range(60)])
        start("e")
        start("f")
        _wait(lambda: set(consumed()) >= set(later), 30, "records after the restart consumed by e and f", details)
        _wait(lambda: _stable([workers["e"], workers["f"]], parts), 30, "e, f share the partitions", details)
        assert {k for n in "ef" for k in workers[n].keys()} == set(later), "a committed record was read again"
        assert workers["e"].terminate() == 0
        assert workers["f"].terminate() == 0

        # Exactly once across the whole run: every key once, every offset of every partition once.
        everything = {**produced, **crash, **later}
        counts = consumed()
        assert {k: n for k, n in counts.items() if n != 1} == {}
        assert set(counts) == set(everything)
        seen: dict[int, list[int]] = {p: [] for p in range(parts)}
        for w in workers.values():
            for p, o, k in w.records:
                assert everything[k] == (p, o)
                seen[p].append(o)
        ends = Counter(p for p, _o in everything.values())
        assert {p: sorted(o) for p, o in seen.items()} == {p: list(range(ends[p])) for p in range(parts)}
    finally:
        background._stop.set()
        for w in workers.values():
            w.kill()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(broker_factory, tmp_path):
    """KIP-345: a member with ``group.instance.id`` that crashes and comes back within its session timeout
    takes its old place (and partitions); the other member sees no rebalance."""
    broker = broker_factory(**GROUP_CONFIG)
    topic, group, parts = "static", "static-members", 4
    _create_topic(broker.bootstrap, topic, parts)
    workers: dict[str, _Worker] = {}

    def start(name: str, instance: str) -> _Worker:
        workers[name] = _Worker(name, broker.bootstrap, topic, group, tmp_path, session_ms=10000, instance=instance)
        return workers[name]

    def details() -> str:
        return "\n".join(w.describe() for w in workers.values())

    def consumed() -> Counter:
        return Counter(k for w in workers.values() for k in w.keys())

    try:
        first = _produce(broker.bootstrap, topic, [(i % parts, f"s1-{i:03d}") for i in range(40)])
        start("one", "instance-1")
        start("two", "instance-2")
        _wait(lambda: _stable([workers["one"], workers["two"]], parts), 30, "both static members assigned", details)
        _wait(lambda: set(consumed()) >= set(first), 30, "first records consumed", details)
        before = workers["one"].current()
        events_two = len([e for e in workers["two"].events if e["ev"] != "rec"])

        workers["one"].kill()  # crash: no LeaveGroup; back well within the 10 s session timeout
        start("one-again", "instance-1")
        _wait(lambda: workers["one-again"].current() == before, 8, "the restarted instance gets its partitions back",
              details)  # fmt: skip
        second = _produce(broker.bootstrap, topic, [(i % parts, f"s2-{i:03d}") for i in range(40)])
        _wait(lambda: set(consumed()) >= set(second), 30, "records after the restart consumed", details)
        assert [e for e in workers["two"].events if e["ev"] != "rec"][events_two:] == []  # no rebalance for "two"
        assert {k for k in workers["one-again"].keys()} == {k for k, (p, _o) in second.items() if p in before}
        counts = consumed()
        assert {k: n for k, n in counts.items() if n != 1} == {}
        assert set(counts) == set(first) | set(second)
    finally:
        for w in workers.values():
            w.kill()


# ------------------------------------------------------------------- confluent-kafka


def _ck_member(bootstrap: str, group: str, strategy: str, name: str) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
        "partition.assignment.strategy": strategy, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20000,
        "fetch.wait.max.ms": 100,
    })  # fmt: skip


def _ck_parts(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_group_shares_partitions_and_commits(broker_factory, strategy):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group, parts = f"ck-{strategy}", f"ck-group-{strategy}", 4
    _create_topic(broker.bootstrap, topic, parts)
    members = [_ck_member(broker.bootstrap, group, strategy, f"ck-member-{i}") for i in range(2)]
    got: list[list[tuple[int, int, str]]] = [[], []]
    open_members = [0, 1]

    def poll(indexes) -> None:
        for i in indexes:
            msgs = members[i].consume(num_messages=100, timeout=0.05)
            assert [m.error() for m in msgs if m.error() is not None] == []
            if msgs:
                last = {m.partition(): m.offset() for m in msgs}
                members[i].commit(offsets=[CKTopicPartition(topic, p, o + 1) for p, o in last.items()],
                                  asynchronous=False)  # fmt: skip
                got[i].extend((m.partition(), m.offset(), m.key().decode()) for m in msgs)

    def poll_until(indexes, predicate, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            poll(indexes)
            if predicate():
                return
        raise AssertionError(f"{strategy}: not met within {timeout} s: {what}; assignments "
                             f"{[_ck_parts(members[i]) for i in indexes]}, got {[len(g) for g in got]}")  # fmt: skip

    try:
        for m in members:
            m.subscribe([topic])

        def shared() -> bool:
            a, b = _ck_parts(members[0]), _ck_parts(members[1])
            return bool(a) and bool(b) and not a & b and a | b == set(range(parts))

        poll_until([0, 1], shared, 30, "both members own partitions")
        owned = [_ck_parts(members[0]), _ck_parts(members[1])]
        assert sorted(len(o) for o in owned) == [2, 2]

        first = _produce(broker.bootstrap, topic, [(i % parts, f"{strategy}-{i:03d}") for i in range(200)])
        poll_until([0, 1], lambda: len(got[0]) + len(got[1]) >= 200, 30, "all 200 records consumed")
        poll([0, 1])  # nothing more may come
        for i in (0, 1):
            assert {p for p, _o, _k in got[i]} == owned[i]  # each read exactly its own partitions
        assert sorted(k for g in got for _p, _o, k in g) == sorted(first)
        assert all(first[k] == (p, o) for g in got for p, o, k in g)
        for m in members:  # any member may read the group's offsets for every partition
            committed = m.committed([CKTopicPartition(topic, p) for p in range(parts)], timeout=15)
            assert [(tp.partition, tp.offset, tp.error) for tp in committed] == [(p, 50, None) for p in range(parts)]

        # The second member leaves; the first takes over at the second member's committed offsets.
        members[1].close()
        open_members.remove(1)
        poll_until([0], lambda: _ck_parts(members[0]) == set(range(parts)), 30, "member 0 owns all partitions")
        before = len(got[0])
        second = _produce(broker.bootstrap, topic, [(i % parts, f"{strategy}-{i:03d}") for i in range(200, 240)])
        poll_until([0], lambda: len(got[0]) - before >= 40, 30, "the next 40 records consumed by member 0")
        poll([0])
        assert sorted((p, o, k) for p, o, k in got[0][before:]) == sorted((p, o, k) for k, (p, o) in second.items())
        assert sorted({o for p, o, _k in got[0][before:]}) == list(range(50, 60))

        final = [CKTopicPartition(topic, p, 60, metadata=f"{strategy}-done-{p}") for p in range(parts)]
        members[0].commit(offsets=final, asynchronous=False)
        committed = members[0].committed([CKTopicPartition(topic, p) for p in range(parts)], timeout=15)
        assert [(tp.partition, tp.offset, tp.metadata) for tp in committed] == [
            (p, 60, f"{strategy}-done-{p}") for p in range(parts)
        ]
    finally:
        for i in open_members:
            members[i].close()


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
    _create_topic(broker.bootstrap, topic, 2)
    first = _produce(broker.bootstrap, topic, [(i % 2, f"aio-{i:02d}") for i in range(40)])
    got, extra, committed = _aio(broker.bootstrap, topic, group, 40)
    assert sorted(got) == sorted((p, o, k) for k, (p, o) in first.items())
    assert extra == 0
    assert committed == {0: 20, 1: 20}

    second = _produce(broker.bootstrap, topic, [(i % 2, f"aio-{i:02d}") for i in range(40, 50)])
    got, extra, committed = _aio(broker.bootstrap, topic, group, 10)
    assert sorted(got) == sorted((p, o, k) for k, (p, o) in second.items())  # resumed at offset 20
    assert {o for _p, o, _k in got} == set(range(20, 25))
    assert extra == 0
    assert committed == {0: 25, 1: 25}


# ----------------------------------------------------------------------- Java client


@pytest.fixture(scope="module")
def group_consumer_classpath() -> str:
    from .test_java_client import compile_java

    return compile_java("GroupConsumer.java")


def _java_group_run(classpath: str, bootstrap: str, topic: str, group: str, count: int, metadata: str) -> dict:
    result = subprocess.run(["java", "-cp", classpath, "GroupConsumer", bootstrap, topic, group, str(count), metadata],
                            capture_output=True, text=True, timeout=90)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out: dict = {"record": [], "committed": {}}
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
    return out


def test_java_consumer_group_commits_and_resumes(broker_factory, group_consumer_classpath):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "java-group", "java-members"
    _create_topic(broker.bootstrap, topic, 3)
    first = _produce(broker.bootstrap, topic, [(i % 3, f"java-{i:02d}") for i in range(30)])
    run = _java_group_run(group_consumer_classpath, broker.bootstrap, topic, group, 30, "java-run-1")
    assert sorted(run["record"]) == sorted((p, o, k, k) for k, (p, o) in first.items())
    assert run["assignment"] == [0, 1, 2]
    generation, member_id = run["member"]
    assert generation >= 1 and member_id
    assert run["committed"] == {p: (10, "java-run-1") for p in range(3)}

    second = _produce(broker.bootstrap, topic, [(i % 3, f"java-{i:02d}") for i in range(30, 45)])
    run = _java_group_run(group_consumer_classpath, broker.bootstrap, topic, group, 15, "java-run-2")
    assert sorted(run["record"]) == sorted((p, o, k, k) for k, (p, o) in second.items())  # resumed at offset 10
    assert run["committed"] == {p: (15, "java-run-2") for p in range(3)}

    # Another client reads the Java client's commits.
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        got = [consumer.committed(KPTopicPartition(topic, p), metadata=True, timeout_ms=15000) for p in range(3)]
        assert [(om.offset, om.metadata) for om in got] == [(15, "java-run-2")] * 3
    finally:
        consumer.close()


# ----------------------------------------------------- offsets across broker restarts


def _kp_consumer(bootstrap: str, group: str, *topics: str, **config) -> KafkaConsumer:
    config = {"auto_offset_reset": "earliest", "enable_auto_commit": False, "session_timeout_ms": 6000,
              "heartbeat_interval_ms": 500, "fetch_max_wait_ms": 100, **config}  # fmt: skip
    return KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, **config)


def _kp_poll(consumer: KafkaConsumer, count: int, timeout: float = 20.0) -> list[tuple[int, int, str]]:
    got: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=200).values():
            got.extend((m.partition, m.offset, m.key.decode()) for m in msgs)
    return got


def _wait_assigned(consumer: KafkaConsumer, partitions: set, timeout: float = 20.0) -> list[tuple[int, int, str]]:
    """Poll until ``partitions`` are assigned; returns the records polled meanwhile."""
    got: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=100).values():
            got.extend((m.partition, m.offset, m.key.decode()) for m in msgs)
        if consumer.assignment() == partitions:
            return got
    raise AssertionError(f"assignment {consumer.assignment()} != {partitions}")


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_committed_offsets_survive_a_broker_restart(broker_factory, stop):
    broker = broker_factory(offsets_topic_num_partitions="4", **GROUP_CONFIG)
    topic, group = "durable", "durable-members"
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    _create_topic(broker.bootstrap, topic, 2)
    placed = _produce(broker.bootstrap, topic, [(i % 2, f"d-{i:02d}") for i in range(30)])

    consumer = _kp_consumer(broker.bootstrap, group, topic)
    try:
        assert len(_kp_poll(consumer, 30)) == 30
        consumer.commit({tp0: OffsetAndMetadata(15, "all-of-p0", -1), tp1: OffsetAndMetadata(12, "first", -1)})
        consumer.commit({tp1: OffsetAndMetadata(9, "rewound-p1", -1)})  # the latest commit wins, not the highest
        generation_before = consumer.group_metadata().generation_id
        assert generation_before >= 1
    finally:
        consumer.close()
    simple = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="durable-simple", enable_auto_commit=False)
    try:  # a commit from outside any generation (assign(), generation -1) into an empty group
        simple.assign([tp0])
        simple.commit({tp0: OffsetAndMetadata(7, "simple", -1)})
    finally:
        simple.close()

    dirs = sorted(p.name for p in broker.data_dir.iterdir() if p.name.startswith("__consumer_offsets-"))
    assert dirs == [f"__consumer_offsets-{i}" for i in range(4)]
    if stop == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.restart()

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed["durable-members"]["protocol_type"] == "consumer"
        assert listed["durable-simple"]["protocol_type"] == ""
        described = admin.describe_groups(["durable-members"])["durable-members"]
        assert (described["error"], described["group_state"], described["protocol_type"], described["members"]) == (
            None, "Empty", "consumer", [])  # fmt: skip
        offsets = admin.list_group_offsets(["durable-members", "durable-simple"])
        assert {tp: (om.offset, om.metadata) for tp, om in offsets["durable-members"].items()} == {
            tp0: (15, "all-of-p0"), tp1: (9, "rewound-p1")}  # fmt: skip
        assert {tp: (om.offset, om.metadata) for tp, om in offsets["durable-simple"].items()} == {tp0: (7, "simple")}
    finally:
        admin.close()

    consumer = _kp_consumer(broker.bootstrap, group)
    try:
        committed = [consumer.committed(tp, metadata=True, timeout_ms=15000) for tp in (tp0, tp1)]
        assert [(om.offset, om.metadata) for om in committed] == [(15, "all-of-p0"), (9, "rewound-p1")]
        consumer.subscribe([topic])
        got = _kp_poll(consumer, 6)
        got += _kp_poll(consumer, 1, timeout=0.5)  # and nothing more
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items() if p == 1 and o >= 9)
        assert consumer.committed(tp0) == 15
        # The generation was restored from the log: it goes on from where it was, never back.
        assert consumer.group_metadata().generation_id > generation_before
    finally:
        consumer.close()


# ------------------------------------------------ ListGroups / DescribeGroups / DeleteGroups


def _raw_commit(broker, group: str, generation: int, member_id: str, topic: str, partition: int, offset: int) -> int:
    """OffsetCommit v8 on a socket of our own, as a member (or a zombie) would send it; the partition's error."""
    req = message_class(API_BY_KEY[8], True)
    part = req.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="raw")
    body = req(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
               topics=[req.OffsetCommitRequestTopic(name=topic, partitions=[part])])  # fmt: skip
    with _connect(broker) as s:
        _, resp = _roundtrip(s, 8, 8, body)
    return resp.topics[0].partitions[0].error_code


def test_admin_lists_describes_and_deletes_groups(broker_factory):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "adm", "adm-members"
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    _create_topic(broker.bootstrap, topic, 2)
    _produce(broker.bootstrap, topic, [(i % 2, f"a-{i:02d}") for i in range(10)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    consumer = _kp_consumer(broker.bootstrap, group, topic, client_id="adm-client")
    closed = False
    try:
        got = _wait_assigned(consumer, {tp0, tp1})
        got += _kp_poll(consumer, 10 - len(got))
        assert sorted(o for _p, o, _k in got) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
        consumer.commit({tp0: OffsetAndMetadata(5, "m0", -1), tp1: OffsetAndMetadata(4, "m1", -1)})
        member = consumer.group_metadata()
        assert member.generation_id >= 1 and member.member_id

        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["protocol_type"] == "consumer"
        if "group_state" in listed[group]:  # ListGroups v4+
            assert listed[group]["group_state"] == "Stable"
        d = admin.describe_groups([group])[group]
        assert (d["error"], d["group_state"], d["protocol_type"], d["protocol_data"]) == (
            None, "Stable", "consumer", "range")  # fmt: skip
        (m,) = d["members"]
        assert (m["member_id"], m["client_id"]) == (member.member_id, "adm-client")
        assert m["client_host"].endswith("127.0.0.1")
        assert m["member_metadata"]["topics"] == [topic]
        assert m["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]

        assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}
        # Commits into an active group: only from the current member at the current generation.
        assert admin.alter_group_offsets(group, {tp0: OffsetAndMetadata(1, "admin", -1)}) == {
            tp0: UnknownMemberIdError}  # fmt: skip
        gen, mid = member.generation_id, member.member_id
        assert _raw_commit(broker, group, gen + 1, mid, topic, 0, 1) == ErrorCode.ILLEGAL_GENERATION
        assert _raw_commit(broker, group, gen, "stranger", topic, 0, 1) == ErrorCode.UNKNOWN_MEMBER_ID
        offsets = admin.list_group_offsets(group)[group]
        assert {tp: (om.offset, om.metadata) for tp, om in offsets.items()} == {tp0: (5, "m0"), tp1: (4, "m1")}
        assert _raw_commit(broker, group, gen, mid, topic, 1, 3) == ErrorCode.NONE
        offsets = admin.list_group_offsets(group)[group]
        assert {tp: (om.offset, om.metadata) for tp, om in offsets.items()} == {tp0: (5, "m0"), tp1: (3, "raw")}

        consumer.close()  # LeaveGroup: the group is empty, its offsets stay
        closed = True
        described = admin.describe_groups([group])[group]
        assert (described["error"], described["group_state"], described["protocol_type"], described["members"]) == (
            None, "Empty", "consumer", [])  # fmt: skip
        listed = {g["group_id"]: g for g in admin.list_groups()}
        if "group_state" in listed[group]:
            assert listed[group]["group_state"] == "Empty"
        assert len(admin.list_group_offsets(group)[group]) == 2

        # A group that only holds offsets (committed from outside any generation) is kept.
        assert admin.alter_group_offsets("adm-keep", {tp0: OffsetAndMetadata(3, "kept", -1)}) == {tp0: NoError}

        assert admin.delete_groups([group]) == {group: "OK"}
        assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
        assert admin.delete_groups(["never-existed"]) == {"never-existed": "GroupIdNotFoundError"}
        assert group not in {g["group_id"] for g in admin.list_groups()}
        assert admin.list_group_offsets(group) == {group: {}}
        gone = admin.describe_groups([group])[group]
        assert (gone["group_state"], gone["members"]) == ("Dead", [])
    finally:
        if not closed:
            consumer.close()
        admin.close()

    # The deletion is stored: after a restart the group stays gone and the other group keeps its offsets.
    assert broker.stop() == 0
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        names = {g["group_id"] for g in admin.list_groups()}
        assert "adm-keep" in names and group not in names
        assert admin.list_group_offsets(group) == {group: {}}
        kept = admin.list_group_offsets("adm-keep")["adm-keep"]
        assert {tp: (om.offset, om.metadata) for tp, om in kept.items()} == {tp0: (3, "kept")}
    finally:
        admin.close()
    fresh = _kp_consumer(broker.bootstrap, group, topic)
    try:  # no committed offsets: the reset policy applies, from offset 0
        got = _kp_poll(fresh, 10)
        assert sorted(o for _p, o, _k in got) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    finally:
        fresh.close()


def test_session_timeouts_outside_the_broker_bounds_are_refused(broker_factory):
    broker = broker_factory(group_max_session_timeout_ms="10000", **GROUP_CONFIG)
    _create_topic(broker.bootstrap, "bounds", 1)
    for session, heartbeat in ((500, 100), (20000, 500)):  # below group.min / above group.max.session.timeout.ms
        consumer = _kp_consumer(broker.bootstrap, f"bounds-{session}", "bounds", session_timeout_ms=session,
                                heartbeat_interval_ms=heartbeat)  # fmt: skip
        try:
            with pytest.raises(InvalidSessionTimeoutError):
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    consumer.poll(timeout_ms=200)
        finally:
            consumer.close()
    consumer = _kp_consumer(broker.bootstrap, "bounds-ok", "bounds", session_timeout_ms=10000)
    try:  # the bounds themselves are accepted
        assert _wait_assigned(consumer, {KPTopicPartition("bounds", 0)}) == []
    finally:
        consumer.close()


@pytest.mark.parametrize("api_version", [(0, 9), (0, 11), (2, 0), (2, 4)], ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_old_group_protocol_versions(broker_factory, api_version):
    """(0, 9): GroupCoordinator v0, JoinGroup v0, OffsetCommit v2, OffsetFetch v1; (0, 11): FindCoordinator v1,
    JoinGroup v2, OffsetCommit v3; (2, 0): JoinGroup v3, OffsetCommit v4; (2, 4): the first flexible versions."""
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "old-group", "old-" + ".".join(map(str, api_version))
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    _create_topic(broker.bootstrap, topic, 2)
    placed = _produce(broker.bootstrap, topic, [(i % 2, f"o-{i:02d}") for i in range(20)])
    consumer = _kp_consumer(broker.bootstrap, group, topic, api_version=api_version)
    try:
        got = _kp_poll(consumer, 20)
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items())
        consumer.commit({tp0: OffsetAndMetadata(10, "old-0", -1), tp1: OffsetAndMetadata(6, "old-1", -1)})
    finally:
        consumer.close()
    consumer = _kp_consumer(broker.bootstrap, group, topic, api_version=api_version)
    try:
        committed = [consumer.committed(tp, metadata=True, timeout_ms=15000) for tp in (tp0, tp1)]
        assert [(om.offset, om.metadata) for om in committed] == [(10, "old-0"), (6, "old-1")]
        got = _kp_poll(consumer, 4)
        got += _kp_poll(consumer, 1, timeout=0.5)  # and nothing more
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items() if p == 1 and o >= 6)
    finally:
        consumer.close()


# ----------------------------------------------------- __consumer_offsets record layout


class _Buf:
    """Kafka's non-flexible encodings, read by hand (independent of the broker's own codec)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        assert len(out) == n, "truncated"
        self.pos += n
        return out

    def int16(self) -> int:
        return int.from_bytes(self._take(2), "big", signed=True)

    def int32(self) -> int:
        return int.from_bytes(self._take(4), "big", signed=True)

    def int64(self) -> int:
        return int.from_bytes(self._take(8), "big", signed=True)

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self._take(n).decode()

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else self._take(n)

    def done(self) -> bool:
        return self.pos == len(self.data)


def _decode_offsets_record(key: bytes, value: bytes | None) -> tuple:
    """(kind, key fields, value fields or None) as Kafka's GroupMetadataManager lays them out."""
    k = _Buf(key)
    version = k.int16()
    if version in (0, 1):
        ident = (k.string(), k.string(), k.int32())
        kind = "offset"
    elif version == 2:
        ident = (k.string(),)
        kind = "group"
    else:
        raise AssertionError(f"unknown key version {version}")
    assert k.done(), f"trailing key bytes: {key!r}"
    if value is None:
        return kind, ident, None
    v = _Buf(value)
    vv = v.int16()
    if kind == "offset":
        assert vv in (0, 1, 2, 3), f"OffsetCommitValue v{vv}"
        offset = v.int64()
        epoch = v.int32() if vv == 3 else -1
        fields = {"version": vv, "offset": offset, "leader_epoch": epoch, "metadata": v.string(),
                  "commit_timestamp": v.int64()}  # fmt: skip
        if vv == 1:
            fields["expire_timestamp"] = v.int64()
    else:
        assert vv in (0, 1, 2, 3), f"GroupMetadataValue v{vv}"
        fields = {"version": vv, "protocol_type": v.string(), "generation": v.int32(), "protocol": v.string(),
                  "leader": v.string()}  # fmt: skip
        if vv >= 2:
            fields["current_state_timestamp"] = v.int64()
        members = []
        for _ in range(v.int32()):
            m = {"member_id": v.string()}
            if vv >= 3:
                m["group_instance_id"] = v.string()
            m["client_id"], m["client_host"] = v.string(), v.string()
            if vv >= 1:
                m["rebalance_timeout"] = v.int32()
            m["session_timeout"] = v.int32()
            m["subscription"], m["assignment"] = v.bytes_(), v.bytes_()
            members.append(m)
        fields["members"] = members
    assert v.done(), f"trailing value bytes: {value!r}"
    return kind, ident, fields


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in (int.from_bytes(s.encode("utf-16-be")[i : i + 2], "big") for i in range(0, 2 * len(s), 2)):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _read_offsets_topic(bootstrap: str, partitions: int) -> list[tuple[int, int, bytes, bytes | None]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [KPTopicPartition("__consumer_offsets", p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps, timeout_ms=15000)
        out: list[tuple[int, int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=200).values():
                out.extend((m.partition, m.offset, m.key, m.value) for m in msgs)
        assert all(consumer.position(tp) >= ends[tp] for tp in tps), "could not read __consumer_offsets to its end"
        return out
    finally:
        consumer.close()


def test_consumer_offsets_topic_holds_kafka_records(broker_factory):
    broker = broker_factory(offsets_topic_num_partitions="5", **GROUP_CONFIG)
    topic, group = "layout", "layout-members"
    tp = KPTopicPartition(topic, 0)
    _create_topic(broker.bootstrap, topic, 1)
    _produce(broker.bootstrap, topic, [(0, f"l-{i}") for i in range(3)])
    started = int(time.time() * 1000)
    consumer = _kp_consumer(broker.bootstrap, group, topic, client_id="layout-client")
    try:
        assert len(_kp_poll(consumer, 3)) == 3
        consumer.commit({tp: OffsetAndMetadata(3, "layout-meta", -1)})
        member = consumer.group_metadata()
    finally:
        consumer.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    internal = admin.list_topics(timeout=15).topics["__consumer_offsets"]
    assert sorted(internal.partitions) == list(range(5))
    (future,) = admin.describe_configs([ConfigResource("topic", "__consumer_offsets")]).values()
    assert future.result(15)["cleanup.policy"].value == "compact"

    # Kafka's partition for a group: abs(groupId.hashCode) % offsets.topic.num.partitions.
    expected_partition = abs(_java_string_hash(group)) % 5
    rows = [(p, o, *_decode_offsets_record(k, v)) for p, o, k, v in _read_offsets_topic(broker.bootstrap, 5)]
    mine = [r for r in rows if r[3][0] == group]
    assert mine and {p for p, *_ in mine} == {expected_partition}
    offsets = [fields for _p, _o, kind, ident, fields in mine if kind == "offset" and ident == (group, topic, 0)]
    assert len(offsets) == 1
    (committed,) = offsets
    assert (committed["offset"], committed["metadata"]) == (3, "layout-meta")
    assert started - 1000 <= committed["commit_timestamp"] <= int(time.time() * 1000) + 1000
    assert committed["version"] in (1, 3) and committed.get("expire_timestamp", -1) == -1
    groups = [fields for _p, _o, kind, _ident, fields in mine if kind == "group"]
    stable = [g for g in groups if g["members"]]
    assert stable, groups  # written when the generation was synced: the member and its assignment
    (m,) = stable[-1]["members"]
    assert (stable[-1]["protocol_type"], stable[-1]["protocol"], stable[-1]["leader"]) == (
        "consumer", "range", member.member_id)  # fmt: skip
    assert (m["member_id"], m["client_id"], m["session_timeout"]) == (member.member_id, "layout-client", 6000)
    assert m["client_host"].endswith("127.0.0.1")
    assert m["assignment"] and topic.encode() in m["assignment"] and topic.encode() in m["subscription"]
    last = groups[-1]  # after LeaveGroup: empty, a later generation, the protocol type kept
    assert (last["protocol_type"], last["members"]) == ("consumer", [])
    assert last["generation"] > stable[-1]["generation"]

    # DeleteGroups writes tombstones: the latest record of every key of the group is null.
    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert kadmin.delete_groups([group]) == {group: "OK"}
    finally:
        kadmin.close()
    rows = [(p, o, *_decode_offsets_record(k, v)) for p, o, k, v in _read_offsets_topic(broker.bootstrap, 5)]
    latest: dict = {}
    for _p, _o, kind, ident, fields in rows:
        if ident[0] == group:
            latest[(kind, ident)] = fields
    assert latest == {("offset", (group, topic, 0)): None, ("group", (group,)): None}


def test_deleting_a_topic_removes_its_committed_offsets(broker_factory):
    """Kafka's ``GroupCoordinator.handleDeletedPartitions``: the offsets of a deleted topic are removed, so a
    topic created again under the same name is read from its start, not from the old topic's offsets."""
    broker = broker_factory(**GROUP_CONFIG)
    group = "topic-deletion"
    doomed = [KPTopicPartition("doomed", p) for p in (0, 1)]
    kept = KPTopicPartition("kept", 0)
    _create_topic(broker.bootstrap, "doomed", 2)
    _create_topic(broker.bootstrap, "kept", 1)
    _produce(broker.bootstrap, "doomed", [(i % 2, f"old-{i:02d}") for i in range(20)])
    _produce(broker.bootstrap, "kept", [(0, f"kept-{i:02d}") for i in range(10)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        offsets = {doomed[0]: OffsetAndMetadata(6, "", -1), doomed[1]: OffsetAndMetadata(6, "", -1),
                   kept: OffsetAndMetadata(4, "", -1)}  # fmt: skip
        assert admin.alter_group_offsets(group, offsets) == {tp: NoError for tp in offsets}
        assert set(admin.list_group_offsets(group)[group]) == {*doomed, kept}

        ck_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        ck_admin.delete_topics(["doomed"])["doomed"].result(15)

        def remaining() -> dict:
            return {tp: om.offset for tp, om in admin.list_group_offsets(group)[group].items()}

        _wait(lambda: remaining() == {kept: 4}, 10, "only the offsets of the remaining topic are left",
              lambda: f"OffsetFetch: {remaining()}")  # fmt: skip
    finally:
        admin.close()

    _create_topic(broker.bootstrap, "doomed", 2)
    again = _produce(broker.bootstrap, "doomed", [(i % 2, f"new-{i:02d}") for i in range(16)])
    consumer = _kp_consumer(broker.bootstrap, group, "doomed")
    try:  # no committed offsets for the new topic: auto_offset_reset=earliest reads all of it
        got = _kp_poll(consumer, 16, timeout=15)
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in again.items())
    finally:
        consumer.close()
