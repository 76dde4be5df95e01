"""Long-lived Java group members (``GroupConsumer`` with count -1), one JVM each, driven from a test.

``JavaMember`` starts the program with its client settings passed as
``-Dclient.props`` and a thread that collects its output lines as they come:
the rebalance listener's ``assigned`` / ``revoked`` / ``lost`` calls and the
records it has committed (printed only once committed, so the records printed
by all members of a group are what the group committed). ``owned()`` replays
the listener's calls (eager: all revoked, then the new assignment; cooperative:
only the moved partitions), so it works for either protocol. The client logs
through Log4j 2, its warnings and errors kept apart (``warnings()``). ``stop()`` makes
the member commit its positions and close (a dynamic member leaves the group,
a static one does not); ``kill()`` is a crash (SIGKILL). ``Feeder`` produces
keyed records in small batches on a thread while members come and go.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from ..java_jars import with_logging
from .groups import wait_until


class JavaMember:
    """One ``GroupConsumer`` JVM in stream mode."""

    def __init__(self, classpath: str, bootstrap: str, topic: str, group: str, assignor: str, name: str,
                 **props: str) -> None:  # fmt: skip
        self.name = name
        settings = {"client.id": name, **props}
        client_props = "\n".join(f"{k}={v}" for k, v in settings.items())
        self.proc = subprocess.Popen(
            ["java", f"-Dclient.props={client_props}", *with_logging(classpath), "GroupConsumer", bootstrap, topic,
             group, "-1", f"{name}-done", assignor],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[list[str]] = []
        self.err: list[str] = []
        self._lock = threading.RLock()  # details() reads under it too
        self._pumps = [threading.Thread(target=self._pump, args=(stream, into), daemon=True)
                       for stream, into in ((self.proc.stdout, self.lines), (self.proc.stderr, self.err))]  # fmt: skip
        for pump in self._pumps:
            pump.start()

    def _pump(self, stream, into: list) -> None:
        for line in stream:
            with self._lock:
                into.append(line.rstrip("\n").split("\t") if into is self.lines else line)

    def of(self, kind: str) -> list[list[str]]:
        with self._lock:
            return [fields[1:] for fields in self.lines if fields[0] == kind]

    def records(self) -> list[tuple[int, int, str]]:
        return [(int(p), int(o), k) for p, o, k, _v in self.of("record")]

    def events(self) -> list[tuple[str, set[int]]]:
        """The rebalance listener's calls in order: (kind, partitions)."""
        with self._lock:
            lines = [f for f in self.lines if f[0] in ("assigned", "revoked", "lost")]
        return [(f[0], {int(p) for p in f[-1].split(",") if p}) for f in lines]

    def generations(self) -> list[int]:
        return [int(g) for g, _parts in self.of("assigned")]

    def owned(self) -> set[int]:
        owned: set[int] = set()
        for kind, parts in self.events():
            owned = owned | parts if kind == "assigned" else owned - parts
        return owned

    def details(self) -> str:
        with self._lock:
            return f"{self.name}: events {self.events()}\nstderr tail: {''.join(self.err[-20:])}"

    def warnings(self) -> list[str]:
        """The client's log lines of level WARN and above (``log4j2-warnings.properties``)."""
        with self._lock:
            return [line for line in self.err if line.startswith(("LOG WARN", "LOG ERROR", "LOG FATAL"))]

    def stop(self, timeout: float = 60) -> None:
        """Commit, report and close (as the program's "stop" command does); the JVM must exit cleanly."""
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout) == 0, self.details()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    def close(self) -> None:
        """Kill the JVM if it still runs; close its pipes once the pumps have read them to the end."""
        if self.proc.poll() is None:
            self.kill()
        for pump in self._pumps:
            pump.join(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


def wait_owned(members: list[JavaMember], want: list[set[int]] | None, parts: int, timeout: float = 40) -> None:
    """Until each member owns ``want``'s set (if given) or the members' sets split ``range(parts)`` among all."""

    def split() -> bool:
        owned = [m.owned() for m in members]
        if want is not None:
            return owned == want
        return all(owned) and sum(map(len, owned)) == parts and set().union(*owned) == set(range(parts))

    wait_until(split, timeout, f"assignments of {[m.name for m in members]}",
               lambda: "\n".join(m.details() for m in members))  # fmt: skip


def describe(bootstrap: str, group: str) -> tuple[str, dict[str, set[int]]]:
    """DescribeGroups through confluent-kafka's admin client: (state, client id -> assigned partitions)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept while waiting: a dropped one ends its futures
    described = admin.describe_consumer_groups([group])[group].result(15)
    return described.state.name, {
        m.client_id: {tp.partition for tp in m.assignment.topic_partitions} for m in described.members
    }


class Feeder:
    """Produces keyed records (value = key) round-robin over the partitions, a small batch every 50 ms, on a
    thread while running; ``placed`` maps every acknowledged key to its (partition, offset)."""

    def __init__(self, bootstrap: str, topic: str, parts: int, prefix: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
        self.topic, self.parts, self.prefix = topic, parts, prefix
        self.placed: dict[str, tuple[int, int]] = {}
        self.errors: list = []
        self.sent = 0
        self._running = threading.Event()
        self._thread: threading.Thread | None = None

    def batch(self, n: int) -> None:
        for _ in range(n):
            key = f"{self.prefix}-{self.sent:05d}"
            self.producer.produce(self.topic, key=key, value=key, partition=self.sent % self.parts,
                                  on_delivery=self._delivered)  # fmt: skip
            self.sent += 1
        assert self.producer.flush(30) == 0

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.placed[msg.key().decode()] = (msg.partition(), msg.offset())

    def start(self) -> None:
        self._running.set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._running.is_set():
            self.batch(5)
            time.sleep(0.05)

    def pause(self) -> None:
        self._running.clear()
        if self._thread is not None:
            self._thread.join(30)

    def expected(self) -> Counter:
        assert self.errors == []
        return Counter((p, o, k) for k, (p, o) in self.placed.items())


def client_warnings(members: list[JavaMember]) -> list[str]:
    return [f"{m.name}: {line}" for m in members for line in m.warnings()]


def consumed(members: list[JavaMember]) -> Counter:
    return Counter(r for m in members for r in m.records())


def wait_consumed(members: list[JavaMember], feeder: Feeder, timeout: float = 40) -> None:
    """Until every record the feeder placed has been committed by some member (pause the feeder first)."""
    want = feeder.expected()
    wait_until(lambda: consumed(members) >= want, timeout, f"{sum(want.values())} records consumed",
               lambda: f"missing {list((want - consumed(members)).items())[:10]}\n"
                       + "\n".join(m.details() for m in members))  # fmt: skip
