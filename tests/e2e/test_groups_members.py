"""Consumer groups of kafka-python members, one process each, against a real broker process.

* three consumer processes over six partitions while members join, leave
  (SIGTERM: LeaveGroup) and crash (SIGKILL: the session timeout moves its
  partitions), then a restart of the whole group resumes at the committed
  offsets; every record is seen exactly once across the group;
* a static member (KIP-345) killed and restarted within its session timeout
  gets its partitions back without a rebalance of the others;
* kafka-python's ``api_version`` drives old JoinGroup / OffsetCommit /
  OffsetFetch versions (v0 and up) through a commit-and-resume cycle.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import OffsetAndMetadata
    from kafka import TopicPartition as KPTopicPartition


from .groups import GROUP_CONFIG, ROOT, create_topic, kp_consumer, kp_poll, produce_keys, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


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


class _Group:
    """The members (worker processes) of one consumer group over time, by name."""

    def __init__(self, bootstrap: str, topic: str, group: str, parts: int, tmp_path: Path) -> None:
        self.bootstrap, self.topic, self.group, self.parts, self.tmp_path = bootstrap, topic, group, parts, tmp_path
        self.workers: dict[str, _Worker] = {}

    def start(self, *names: str) -> None:
        for name in names:
            self.workers[name] = _Worker(name, self.bootstrap, self.topic, self.group, self.tmp_path)

    def details(self) -> str:
        return "\n".join(w.describe() for w in self.workers.values())

    def consumed(self) -> Counter:
        return Counter(k for w in self.workers.values() for k in w.keys())

    def sizes(self, names: str) -> list[int]:
        return sorted(len(self.workers[n].current() or ()) for n in names)

    def wait_stable(self, names: str, what: str) -> None:
        wait_until(lambda: _stable([self.workers[n] for n in names], self.parts), 30, what, self.details)

    def wait_consumed(self, keys, what: str) -> None:
        wait_until(lambda: set(self.consumed()) >= set(keys), 30, what, self.details)

    def produce(self, prefix: str, n: int = 60) -> dict:
        return produce_keys(self.bootstrap, self.topic, [(i % self.parts, f"{prefix}-{i:03d}") for i in range(n)])


def test_kafka_python_group_join_leave_crash_and_restart(broker_factory, tmp_path):
    broker = broker_factory(**GROUP_CONFIG)
    create_topic(broker.bootstrap, "kp-group", 6)
    g = _Group(broker.bootstrap, "kp-group", "kp-members", 6, tmp_path)
    background = _BackgroundProducer(broker.bootstrap, g.topic, g.parts)
    try:
        produced = _joins_and_a_leave(g, background)
        crash = _kill_an_idle_member(g)
        later = _restart_the_group(g)
        _check_exactly_once(g, {**produced, **crash, **later})
    finally:
        background._stop.set()
        for w in g.workers.values():
            w.kill()


def _joins_and_a_leave(g: _Group, background: _BackgroundProducer) -> dict:
    """Members join and one leaves while records keep arriving; every layout shares the partitions evenly."""
    background.start()
    g.start("a")
    g.wait_stable("a", "a alone owns all six partitions")
    g.start("b", "c")
    g.wait_stable("abc", "a, b, c share the partitions")
    assert g.sizes("abc") == [2, 2, 2]
    assert g.workers["a"].terminate() == 0  # close(): LeaveGroup
    g.wait_stable("bc", "b, c take over a's partitions")
    assert g.sizes("bc") == [3, 3]
    g.start("d")
    g.wait_stable("bcd", "b, c, d share the partitions")
    assert g.sizes("bcd") == [2, 2, 2]
    time.sleep(1.0)  # records keep flowing to the new layout
    produced = background.stop()
    g.wait_consumed(produced, "every record produced so far consumed")
    assert all(g.workers[n].keys() for n in "abcd"), g.details()  # every member did real work
    return produced


def _kill_an_idle_member(g: _Group) -> dict:
    """kill -9 of an idle member: its partitions move after the session timeout (3 s), not before."""
    victim = g.workers["b"]
    lost = victim.current()
    assert lost and len(lost) == 2
    victim.kill()
    killed_at = time.monotonic()
    crash = g.produce("crash")
    g.wait_consumed(crash, "records after the crash consumed by c and d")
    took = time.monotonic() - killed_at
    assert took >= 2.0, f"partitions of a SIGKILLed member moved after {took:.2f} s, before its 3 s session timeout"
    assert _stable([g.workers["c"], g.workers["d"]], g.parts), g.details()
    assert g.sizes("cd") == [3, 3]
    on_lost = {k for k, (p, _o) in crash.items() if p in lost}
    taken = {k for n in "cd" for (p, _o, k) in g.workers[n].records if k.startswith("crash-")}
    assert on_lost <= taken and len(on_lost) == 20
    return crash


def _restart_the_group(g: _Group) -> dict:
    """Stop the whole group, produce, start two new members: they begin at the committed offsets."""
    assert g.workers["c"].terminate() == 0
    assert g.workers["d"].terminate() == 0
    later = g.produce("later")
    g.start("e", "f")
    g.wait_consumed(later, "records after the restart consumed by e and f")
    g.wait_stable("ef", "e, f share the partitions")
    assert {k for n in "ef" for k in g.workers[n].keys()} == set(later), "a committed record was read again"
    assert g.workers["e"].terminate() == 0
    assert g.workers["f"].terminate() == 0
    return later


def _check_exactly_once(g: _Group, everything: dict) -> None:
    """Across the whole run every key was consumed once, and every offset of every partition once."""
    counts = g.consumed()
    assert {k: n for k, n in counts.items() if n != 1} == {}
    assert set(counts) == set(everything)
    seen: dict[int, list[int]] = {p: [] for p in range(g.parts)}
    for w in g.workers.values():
        for p, o, k in w.records:
            assert everything[k] == (p, o)
            seen[p].append(o)
    ends = Counter(p for p, _o in everything.values())
    assert {p: sorted(o) for p, o in seen.items()} == {p: list(range(ends[p])) for p in range(g.parts)}


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(broker_factory, tmp_path):
    """KIP-345: a member with ``group.instance.id`` that crashes and comes back within its session timeout
    takes its old place (and partitions); the other member sees no rebalance."""
    broker = broker_factory(**GROUP_CONFIG)
    topic, group, parts = "static", "static-members", 4
    create_topic(broker.bootstrap, topic, parts)
    workers: dict[str, _Worker] = {}

    def start(name: str, instance: str) -> _Worker:
        workers[name] = _Worker(name, broker.bootstrap, topic, group, tmp_path, session_ms=10000, instance=instance)
        return workers[name]

    def details() -> str:
        return "\n".join(w.describe() for w in workers.values())

    def consumed() -> Counter:
        return Counter(k for w in workers.values() for k in w.keys())

    try:
        first = produce_keys(broker.bootstrap, topic, [(i % parts, f"s1-{i:03d}") for i in range(40)])
        start("one", "instance-1")
        start("two", "instance-2")
        wait_until(lambda: _stable([workers["one"], workers["two"]], parts), 30, "both static members assigned",
                   details)  # fmt: skip
        wait_until(lambda: set(consumed()) >= set(first), 30, "first records consumed", details)
        before = workers["one"].current()
        events_two = len([e for e in workers["two"].events if e["ev"] != "rec"])

        workers["one"].kill()  # crash: no LeaveGroup; back well within the 10 s session timeout
        start("one-again", "instance-1")
        wait_until(lambda: workers["one-again"].current() == before, 8,
                   "the restarted instance gets its partitions back", details)  # fmt: skip
        second = produce_keys(broker.bootstrap, topic, [(i % parts, f"s2-{i:03d}") for i in range(40)])
        wait_until(lambda: set(consumed()) >= set(second), 30, "records after the restart consumed", details)
        assert [e for e in workers["two"].events if e["ev"] != "rec"][events_two:] == []  # no rebalance for "two"
        assert {k for k in workers["one-again"].keys()} == {k for k, (p, _o) in second.items() if p in before}
        counts = consumed()
        assert {k: n for k, n in counts.items() if n != 1} == {}
        assert set(counts) == set(first) | set(second)
    finally:
        for w in workers.values():
            w.kill()


# ------------------------------------------------------------------- confluent-kafka


@pytest.mark.parametrize("api_version", [(0, 9), (0, 11), (2, 0), (2, 4)], ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_old_group_protocol_versions(broker_factory, api_version):
    """(0, 9): GroupCoordinator v0, JoinGroup v0, OffsetCommit v2, OffsetFetch v1; (0, 11): FindCoordinator v1,
    JoinGroup v2, OffsetCommit v3; (2, 0): JoinGroup v3, OffsetCommit v4; (2, 4): the first flexible versions."""
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "old-group", "old-" + ".".join(map(str, api_version))
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    create_topic(broker.bootstrap, topic, 2)
    placed = produce_keys(broker.bootstrap, topic, [(i % 2, f"o-{i:02d}") for i in range(20)])
    consumer = kp_consumer(broker.bootstrap, group, topic, api_version=api_version)
    try:
        got = kp_poll(consumer, 20)
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items())
        consumer.commit({tp0: OffsetAndMetadata(10, "old-0", -1), tp1: OffsetAndMetadata(6, "old-1", -1)})
    finally:
        consumer.close()
    consumer = kp_consumer(broker.bootstrap, group, topic, api_version=api_version)
    try:
        committed = [consumer.committed(tp, metadata=True, timeout_ms=15000) for tp in (tp0, tp1)]
        assert [(om.offset, om.metadata) for om in committed] == [(10, "old-0"), (6, "old-1")]
        got = kp_poll(consumer, 4)
        got += kp_poll(consumer, 1, timeout=0.5)  # and nothing more
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items() if p == 1 and o >= 6)
    finally:
        consumer.close()


# ----------------------------------------------------- __consumer_offsets record layout
