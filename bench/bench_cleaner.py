"""Log cleaner benchmark (issue 6): cleaning throughput, and produce p99 while the cleaner runs.

Part 1, in process: a compacted log of ``--records`` records of about 100
bytes over ``--keys`` keys (default 5 M over 500 k, uniformly random keys,
batches of 500), then one cleaning round timed with the cleaner's own
statistics: records/s and MB/s of log read. Goal: >= 500,000 records/s.

Part 2, against a broker process: a topic is filled with ``--broker-records``
records while it is ``cleanup.policy=delete`` (so the cleaner ignores it);
the produce latency of a confluent-kafka producer (acks=1, one message at a
time at ``--rate`` messages/s to another topic) is measured while the cleaner
is idle, then the big topic is switched to ``compact`` with
IncrementalAlterConfigs and the same latency is measured while the cleaner
cleans it, until its round ends (so the busy figure covers the whole round,
whose duration is printed). Goal: p99 while cleaning <= 2x p99 idle. One
producer serves both windows and is warmed up first: a new producer's first
message waits for its connection and metadata (up to ~100 ms), and with
under a thousand samples that one wait decided the p99 of whichever window
it fell in.

Run by hand: ``.venv/bin/python -m bench.bench_cleaner`` (``--quick`` for a
smaller run). Results are printed as a table with the ratio to the goal.
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from pathlib import Path

from cleaner import CleanerConfig, LogCleaner
from protocol.records import RecordBatchBuilder
from storage import LogManager

TS = 1_700_000_000_000


def build_log(path: Path, records: int, keys: int):
    lm = LogManager.open([path], {"log.cleanup.policy": "compact", "log.cleaner.enable": "false"}, lambda: TS)
    lm.create_topic("bench", 1, {"segment.bytes": str(1 << 30)})
    log_ = lm.get_log("bench", 0)
    rng, value = random.Random(7), b"v" * 84
    for base in range(0, records, 500):
        n = min(500, records - base)
        b = RecordBatchBuilder(base_offset=base)
        for _ in range(n):
            b.append(b"key-%08d" % rng.randrange(keys), value, timestamp=TS)
        log_.append(b.build(), base, base + n - 1, TS)
    log_.roll()
    return lm, log_


def cleaning_throughput(records: int, keys: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        lm, log_ = build_log(Path(tmp), records, keys)
        size = log_.size_in_bytes
        cleaner = LogCleaner(lm, CleanerConfig(), clock=lambda: TS)
        t0 = time.perf_counter()
        assert cleaner.run_once()
        elapsed = time.perf_counter() - t0
        stats = cleaner.last_stats[0]
        lm.close()
    return {"records": records, "kept": stats.records_kept, "seconds": elapsed, "rps": records / elapsed,
            "mbps": stats.bytes_read / elapsed / 1e6, "log_mb": size / 1e6}  # fmt: skip


def _producer(bootstrap: str, topic: str):
    """One producer for both windows, warmed up: connected, metadata known, first batches sent."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    for _ in range(20):
        producer.produce(topic, b"warm-up")
        producer.flush(10)
    return producer


def _latencies(producer, topic: str, seconds: float, rate: int, until=None) -> list[float]:
    """Produce latencies for ``seconds``, or (with ``until``) until it returns true, 120 s at most."""
    out: list[float] = []
    interval, end = 1 / rate, time.monotonic() + (120 if until else seconds)
    while time.monotonic() < end and not (until and until()):
        sent = time.monotonic()
        producer.produce(topic, b"x" * 100, on_delivery=lambda err, _m, t=sent: out.append(time.monotonic() - t))
        producer.poll(0)
        time.sleep(max(0.0, sent + interval - time.monotonic()))
    producer.flush(10)
    return out


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(len(ordered) * 0.99) - 1] * 1000 if ordered else float("nan")


def _fill(bootstrap: str, topic: str, records: int, keys: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 500_000})
    rng, value = random.Random(3), b"v" * 84
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, key=b"key-%08d" % rng.randrange(keys), partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def latency_under_cleaning(records: int, keys: int, seconds: float, rate: int) -> dict:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    from tests.e2e.harness import BrokerProcess

    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp), {"log.cleaner.backoff.ms": "100"}).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            topics = [NewTopic("big", 1, 1, config={"segment.bytes": str(4 << 20)}), NewTopic("probe", 1, 1)]
            for future in admin.create_topics(topics).values():
                future.result(15)
            _fill(broker.bootstrap, "big", records, keys)
            producer = _producer(broker.bootstrap, "probe")
            idle = _latencies(producer, "probe", seconds, rate)
            entry = ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
            resource = ConfigResource(ConfigResource.Type.TOPIC, "big", incremental_configs=[entry])
            admin.incremental_alter_configs([resource])[resource].result(15)
            started = time.monotonic()
            busy = _latencies(producer, "probe", seconds, rate, until=lambda: _cleaned(broker))
            del producer
            wall = time.monotonic() - started
            rounds = re.findall(r"cleaned up to offset \d+: .* in ([0-9.]+) s", broker.log_text())
        finally:
            broker.stop()
    return {"idle_p99_ms": _p99(idle), "busy_p99_ms": _p99(busy), "clean_s": sum(map(float, rounds)),
            "wall_s": wall}  # fmt: skip


def _cleaned(broker) -> bool:
    return "cleaned up to offset" in broker.log_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=500_000)
    parser.add_argument("--broker-records", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.records, args.keys, args.broker_records, args.seconds = 500_000, 50_000, 200_000, 3.0
    t = cleaning_throughput(args.records, args.keys)
    lat = latency_under_cleaning(args.broker_records, args.keys, args.seconds, args.rate)
    print(f"| measure | value | goal | ratio to goal |\n|---|---|---|---|")
    print(f"| cleaning, {t['records']:,} records ({t['log_mb']:.0f} MB) -> {t['kept']:,} | "
          f"{t['rps']:,.0f} records/s, {t['mbps']:.1f} MB/s read, {t['seconds']:.1f} s | >= 500,000 records/s | "
          f"{t['rps'] / 500_000:.2f}x |")
    ratio = lat["busy_p99_ms"] / lat["idle_p99_ms"]
    print(f"| produce p99, idle cleaner | {lat['idle_p99_ms']:.2f} ms | | |")
    print(f"| produce p99, while cleaning | {lat['busy_p99_ms']:.2f} ms (measured until the round ended: "
          f"{lat['wall_s']:.1f} s; the round took {lat['clean_s']:.1f} s) | "
          f"<= 2x idle | {ratio:.2f}x idle |")


if __name__ == "__main__":
    main()
