"""Produce and consume throughput, ours vs the peer broker noida-db, run by hand.

    python bench/bench_broker.py [--noida PATH] [--small N] [--large N]

Starts our broker (``tests/e2e/harness.py``) and, in the same run, noida-db
(``pip install noida-db==0.2.3`` into a separate venv, e.g. ``python -m venv
/tmp/peers && /tmp/peers/bin/pip install noida-db==0.2.3``, then pass
``--noida /tmp/peers/bin/noida-db``), and drives both with the same
confluent-kafka producer and consumer: 100-byte and 1 KiB records, acks=1 and
acks=all. The consumer's ``queued.min.messages`` is raised above the record
count so librdkafka's 1 s "queue full" fetch back-off (which a fast broker
triggers) does not stand in for the broker's speed. Prints records/s and MB/s for each and the ratio ours/peer (goal
>= 1.0 on every row), plus our broker's peak RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.peers import start_noida, stop_group  # noqa: E402
from tests.e2e.harness import BrokerProcess  # noqa: E402


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str) -> float:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": False, "queue.buffering.max.messages": 1_000_000})  # fmt: skip
    value = os.urandom(size)
    started = time.perf_counter()
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=value, key=str(i % 1000).encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return time.perf_counter() - started


def consume(bootstrap: str, topic: str, n: int) -> float:
    # queued.min.messages above n: librdkafka otherwise stops fetching for fetch.queue.backoff.ms (1 s) whenever
    # 100,000 fetched messages wait in its queue, which a broker that answers faster than the Python loop
    # consumes triggers, and the row would time the client's back-off instead of the broker.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "queued.min.messages": max(n, 100_000)})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, started = 0, time.perf_counter()
    deadline = started + 120
    while got < n and time.perf_counter() < deadline:
        for msg in consumer.consume(10000, 0.5):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed if got >= n else float("inf")


def run(bootstrap: str, label: str, cases) -> dict:
    results = {}
    for size, n, acks in cases:
        topic = f"bench-{label}-{size}-{acks}"
        results[(size, acks, "produce")] = produce(bootstrap, topic, n, size, acks)
        results[(size, acks, "consume")] = consume(bootstrap, topic, n)
    return results


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noida", default=shutil.which("noida-db") or "/tmp/peers/bin/noida-db")
    parser.add_argument("--small", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=50_000)
    args = parser.parse_args()
    cases = [(100, args.small, "1"), (100, args.small, "all"), (1024, args.large, "1"), (1024, args.large, "all")]
    with tempfile.TemporaryDirectory() as tmp:
        ours = BrokerProcess(Path(tmp) / "ours", {"prometheus.port": "0"}).start()
        try:
            mine = run(ours.bootstrap, "ours", cases)
            rss = peak_rss_mb(ours.proc.pid)
        finally:
            ours.kill()
        noida, bootstrap = start_noida(args.noida, Path(tmp) / "noida", 30)
        try:
            peer = run(bootstrap, "peer", cases)
        finally:
            stop_group(noida)
            noida.wait(10)
    print(f"{'size':>6} {'acks':>4} {'op':<8}{'ours rec/s':>12}{'ours MB/s':>10}{'peer rec/s':>12}{'peer MB/s':>10}{'ratio':>7}")
    for size, n, acks in cases:
        for op in ("produce", "consume"):
            a, b = mine[(size, acks, op)], peer[(size, acks, op)]
            print(f"{size:>6} {acks:>4} {op:<8}{n / a:>12,.0f}{n * size / a / 1e6:>10.1f}{n / b:>12,.0f}"
                  f"{n * size / b / 1e6:>10.1f}{b / a:>7.2f}")  # fmt: skip
    print(f"our broker's peak RSS: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
