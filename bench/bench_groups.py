"""Consumer-group rebalance latency, ours vs the peer broker noida-db, run by hand.

    python bench/bench_groups.py [--trials N] [--only ours|peer] [--noida PATH]

Starts our broker (``tests/e2e/harness.py``, with
``group.initial.rebalance.delay.ms=0``) and, in the same run, noida-db
(``python -m venv /tmp/peers && /tmp/peers/bin/pip install noida-db==0.2.3``,
found on PATH or at ``/tmp/peers/bin/noida-db``; ``--noida`` to point
elsewhere). On each broker it creates one topic of 6 partitions and measures,
with confluent-kafka consumers using the classic protocol and eager ``range``
assignment:

(a) join: a Consumer with a fresh ``group.id`` is created and subscribes; the
    time from just before its creation to its first ``on_assign`` callback
    (bootstrap, FindCoordinator, JoinGroup (twice with MEMBER_ID_REQUIRED),
    SyncGroup). Goal: <= 200 ms.
(b) leave: three consumers in a fresh group settle (each holds 2 partitions)
    and run for ``--dwell-ms`` (default 1000) plus 0-500 ms of jitter; then
    one is closed (LeaveGroup) and the time runs from just before its close()
    to the moment both others have received their new assignment in
    ``on_assign`` (after their ``on_revoke``), covering all 6 partitions.
    Goal: no slower than the peer.

    The others learn of the rebalance only from a Heartbeat answer
    (REBALANCE_IN_PROGRESS). librdkafka's classic consumer sends a heartbeat
    only when its main loop wakes up and ``heartbeat.interval.ms`` has passed
    (``--heartbeat-ms``, default 100, same for both brokers); an idle consumer
    wakes about every 500 ms (its max.poll.interval check), so (b) is mostly
    that client-side wait (up to ~500 ms for the later of the two members)
    plus the broker's JoinGroup barrier and SyncGroup (a few ms). The jitter,
    the same sequence on both brokers, spreads the leave over the whole
    500 ms tick. With ``--dwell-ms 0`` the leave comes within 500 ms of the
    group settling, while the fresh partitions' offset lookups still wake the
    loops every ~100 ms: faster, but bimodal (a member whose loop sleeps until
    its 500 ms long-poll Fetch returns takes ~470 ms).
    The rows "of which last revoke -> assigned" isolate the broker's share:
    from the later of the two members' ``on_revoke`` (called as soon as its
    Heartbeat answer said REBALANCE_IN_PROGRESS) to both being assigned, i.e.
    JoinGroup barrier, leader's assignment and SyncGroup. The end-to-end (b)
    rows move by +-15 % from run to run with 10-20 trials (the client's tick
    phase); compare brokers on them with ``--trials 40`` or more.

Each consumer is polled by its own thread (poll returns at once when a
rebalance event arrives), so the callbacks' timestamps are the moments the
application sees them. One untimed warm-up join runs first on each broker; if
the broker's ApiVersions lacks the group APIs or the warm-up gets no
assignment, its column says "unsupported" with the reason below the table.
Every wait has a timeout (``--timeout``, default 30 s); a trial that times out
is counted as failed and left out of the median and p90.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.peers import start_noida, stop_group  # noqa: E402
from tests.e2e.harness import BrokerProcess  # noqa: E402

PARTITIONS = 6
DWELL_JITTER_S = 0.5  # librdkafka's consumer main loop ticks every 500 ms when idle: sample every phase of it
GROUP_APIS = {10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}


class Unsupported(Exception):
    """The broker does not serve classic consumer groups; the message says why."""


def api_keys(bootstrap: str, timeout: float = 5.0) -> set[int]:
    """The API keys in the broker's ApiVersions v0 answer (a raw request, no client library)."""
    host, port = bootstrap.rsplit(":", 1)
    client = b"bench-groups"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    with socket.create_connection((host, int(port)), timeout) as s, s.makefile("rb") as stream:
        s.sendall(struct.pack(">i", len(body)) + body)
        head = stream.read(4)
        data = stream.read(struct.unpack(">i", head)[0]) if len(head) == 4 else b""
    if len(data) < 6:
        raise Unsupported("connection closed during ApiVersions")
    _corr, error, count = struct.unpack_from(">ihi", data)
    if error:
        raise Unsupported(f"ApiVersions v0 answered error {error}")
    return {struct.unpack_from(">h", data, 10 + 6 * i)[0] for i in range(count)}


class Member:
    """One subscribed consumer, polled by its own thread; records its rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, topic: str, heartbeat_ms: int) -> None:
        self.events: list[tuple[float, str, frozenset[int]]] = []  # (perf_counter, "assign"/"revoke", partitions)
        self.errors: list[str] = []
        self._lock, self._stop = threading.Lock(), threading.Event()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "range",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": heartbeat_ms, "enable.auto.commit": False,
            "error_cb": lambda err: self._error(str(err)),
        })  # fmt: skip
        self.consumer.subscribe([topic], on_assign=self._on("assign"), on_revoke=self._on("revoke"))
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _on(self, kind: str):
        def callback(_consumer, partitions) -> None:
            with self._lock:
                self.events.append((time.perf_counter(), kind, frozenset(p.partition for p in partitions)))

        return callback

    def _error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    def _poll(self) -> None:
        while not self._stop.is_set():
            msg = self.consumer.poll(0.05)
            if msg is not None and msg.error() is not None:
                self._error(str(msg.error()))

    def latest(self) -> tuple[float, str, frozenset[int]] | None:
        with self._lock:
            return self.events[-1] if self.events else None

    def first_after(self, kind: str, after: float = 0.0) -> float | None:
        """Time of the first ``kind`` ("assign"/"revoke") callback after ``after``, or None."""
        with self._lock:
            return next((t for t, k, _ in self.events if k == kind and t > after), None)

    def stop_polling(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def close(self, timeout: float) -> bool:
        """Stop polling and close the consumer (LeaveGroup); False if close() did not return in time."""
        self.stop_polling(timeout)
        if self._thread.is_alive():
            return False
        closer = threading.Thread(target=self.consumer.close, daemon=True)
        closer.start()
        closer.join(timeout)
        return not closer.is_alive()


def wait_for(predicate, timeout: float, interval: float = 0.002) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def settled_assignment(members: list[Member], after: float = 0.0) -> float | None:
    """Latest assign time if every member's last event is an assign after ``after`` and they
    split all partitions between them, each holding some; else None."""
    latest = [m.latest() for m in members]
    if any(e is None or e[1] != "assign" or e[0] <= after or not e[2] for e in latest):
        return None
    parts = [e[2] for e in latest]
    if sum(len(p) for p in parts) != PARTITIONS or frozenset().union(*parts) != frozenset(range(PARTITIONS)):
        return None
    return max(e[0] for e in latest)


def fresh_group(label: str) -> str:
    return f"bench-{label}-{uuid.uuid4().hex[:12]}"


def join_trial(bootstrap: str, topic: str, args, index: int = 0) -> tuple[dict, list[str]]:
    """(a): {"join": seconds from consumer creation to its first assignment, None on timeout}."""
    started = time.perf_counter()
    member = Member(bootstrap, fresh_group("join"), topic, args.heartbeat_ms)
    try:
        wait_for(lambda: member.first_after("assign") is not None, args.timeout)
        first = member.first_after("assign")
        return {"join": None if first is None else first - started}, list(member.errors)
    finally:
        if not member.close(args.timeout):
            print("  warning: a consumer's close() did not return in time", file=sys.stderr)


def leave_trial(bootstrap: str, topic: str, args, index: int = 0) -> tuple[dict, list[str]]:
    """(b): {"leave": seconds from one member's close() to the other two holding their new
    assignment, "rejoin": seconds from the later of their revokes to that moment}; None on timeout.

    The settled group first runs for ``--dwell-ms`` plus a jitter drawn from ``random.Random(index)``
    (so both brokers see the same leave moments relative to the consumers' internal timers)."""
    group = fresh_group("leave")
    members = [Member(bootstrap, group, topic, args.heartbeat_ms) for _ in range(3)]
    try:
        if not wait_for(lambda: settled_assignment(members) is not None, args.timeout):
            errors = [e for m in members for e in m.errors]
            return {"leave": None, "rejoin": None}, ["three members never settled"] + errors
        time.sleep(args.dwell_ms / 1000 + random.Random(index).uniform(0, DWELL_JITTER_S))
        leaver, rest = members[0], members[1:]
        leaver.stop_polling(args.timeout)
        started = time.perf_counter()
        if not leaver.close(args.timeout):
            return {"leave": None, "rejoin": None}, ["close() of the leaving member did not return in time"]
        wait_for(lambda: settled_assignment(rest, after=started) is not None, args.timeout)
        done, errors = settled_assignment(rest, after=started), [e for m in rest for e in m.errors]
        revokes = [m.first_after("revoke", started) for m in rest]
        if done is None or None in revokes:
            return {"leave": None, "rejoin": None}, errors
        return {"leave": done - started, "rejoin": done - max(revokes)}, errors
    finally:
        for m in members:
            m.close(args.timeout)


def check_support(bootstrap: str, topic: str, args) -> None:
    """Raise Unsupported unless the broker lists the group APIs and a warm-up join gets an assignment."""
    missing = [name for key, name in GROUP_APIS.items() if key not in api_keys(bootstrap)]
    if missing:
        raise Unsupported("ApiVersions lacks " + ", ".join(missing))
    took, errors = join_trial(bootstrap, topic, args)
    if took["join"] is None:
        raise Unsupported(f"warm-up consumer got no assignment in {args.timeout:.0f} s; errors: {errors[:3]}")


def run(bootstrap: str, args) -> dict:
    """All measurements on one broker: {metric: [seconds or None per trial], "errors": [...]},
    or {"unsupported"/"failed": why}."""
    topic = fresh_group("topic")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(args.timeout)
    except Exception as exc:  # noqa: BLE001 - reported in the table, not raised
        return {"failed": f"CreateTopics {topic}: {exc}"}
    try:
        check_support(bootstrap, topic, args)
    except (Unsupported, OSError, struct.error) as exc:
        return {"unsupported": str(exc)}
    out: dict = {"join": [], "leave": [], "rejoin": [], "errors": []}
    for name, trial in (("join", join_trial), ("leave", leave_trial)):
        for index in range(args.trials):
            values, errors = trial(bootstrap, topic, args, index)
            for metric, took in values.items():
                out[metric].append(took)
            out["errors"] += [f"{name}: {e}" for e in errors]
    return out


def run_ours(tmp: Path, args) -> dict:
    overrides = {"prometheus.port": "0", "group.initial.rebalance.delay.ms": "0"}
    broker = BrokerProcess(tmp / "ours", overrides).start()
    try:
        return run(broker.bootstrap, args)
    finally:
        broker.kill()


def run_peer(tmp: Path, args) -> dict:
    if not (args.noida and os.path.exists(args.noida)):
        return {"missing": f"noida-db not found at {args.noida!r}"}
    proc, bootstrap = start_noida(args.noida, tmp / "noida", args.timeout)
    try:
        return run(bootstrap, args)
    finally:
        stop_group(proc)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def stat(result: dict | None, metric: str, q: float) -> float | str:
    """Milliseconds for the table, or why there is no number."""
    if result is None:
        return "not run"
    for key in ("missing", "failed", "unsupported"):
        if key in result:
            return key
    done = [t for t in result[metric] if t is not None]
    if not done:
        return "timeout"
    return 1000 * (statistics.median(done) if q == 50 else percentile(done, q))


def cell(value: float | str) -> str:
    return f"{value:>12.1f}" if isinstance(value, float) else f"{value:>12}"


def verdict(metric: str, ours: float | str, peer: float | str) -> str:
    """(a) against 200 ms; (b) against the peer; "?" when a number is missing."""
    goal = 200.0 if metric == "join" else peer
    if not isinstance(ours, float) or not isinstance(goal, float):
        return "?"
    return "met" if ours <= goal else "MISSED"


def print_table(ours: dict | None, peer: dict | None, args) -> None:
    rows = [("join", 50, "(a) new 1-member group, p50", "<= 200 ms"),
            ("join", 90, "(a) new 1-member group, p90", "<= 200 ms"),
            ("leave", 50, "(b) 3 -> 2 members after close, p50", "<= peer"),
            ("leave", 90, "(b) 3 -> 2 members after close, p90", "<= peer"),
            ("rejoin", 50, "(b) of which last revoke -> assigned, p50", "<= peer"),
            ("rejoin", 90, "(b) of which last revoke -> assigned, p90", "<= peer")]  # fmt: skip
    print(f"\nconsumer-group latency, {args.trials} trials, heartbeat.interval.ms={args.heartbeat_ms}, "
          f"dwell {args.dwell_ms} ms (+0-500), range (eager)")
    print(f"{'metric':<44}{'ours ms':>12}{'peer ms':>12}{'ratio':>8}  {'goal':<10} result")
    for metric, q, label, goal in rows:
        a, b = stat(ours, metric, q), stat(peer, metric, q)
        ratio = f"{a / b:>8.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else f"{'-':>8}"
        print(f"{label:<44}{cell(a)}{cell(b)}{ratio}  {goal:<10} {verdict(metric, a, b)}")
    print_notes("ours", ours)
    print_notes("peer", peer)


def print_notes(name: str, result: dict | None) -> None:
    if result is None:
        return
    for key in ("missing", "failed", "unsupported"):
        if key in result:
            print(f"{name}: {key}: {result[key]}")
    for metric in ("join", "leave", "rejoin"):
        failed = sum(t is None for t in result.get(metric, []))
        if failed:
            print(f"{name}: {metric}: {failed} of {len(result[metric])} trials timed out")
    errors = result.get("errors", [])
    for text in sorted(set(errors))[:10]:
        print(f"{name}: client error ({errors.count(text)}x): {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noida", default=shutil.which("noida-db") or "/tmp/peers/bin/noida-db")
    parser.add_argument("--only", choices=("ours", "peer"), help="measure one broker only")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for every wait")
    parser.add_argument("--heartbeat-ms", type=int, default=100, help="consumers' heartbeat.interval.ms")
    parser.add_argument("--dwell-ms", type=int, default=1000, help="(b): settled group runs this (+0-500) ms first")
    args = parser.parse_args()
    ours = peer = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "peer":
            ours = run_ours(Path(tmp), args)
        if args.only != "ours":
            peer = run_peer(Path(tmp), args)
    print_table(ours, peer, args)


if __name__ == "__main__":
    main()
