"""Topic creation cost as the number of topics grows, and the start with many topics, run by hand.

    python bench/bench_topics.py [--counts 100,1000,3000] [--dir PATH]

For each count N, on a fresh data dir, starts our broker (``tests/e2e/harness.py``,
``config/server.properties``) and creates N topics of one partition with one config
override (``retention.ms``), one CreateTopics v5 request per topic, each answered
before the next is sent, on one connection. It prints the mean and the slowest
milliseconds per creation over the first and the last hundred creations: with a
metadata store whose every change costs O(number of topics), the last hundred cost
more than the first. For the largest N it then times three starts on that data:
after a clean stop (SIGTERM), and after a SIGKILL right after the last answer
(the start then replays whatever the crash left), from the ``serve`` command to the
"serving on" line.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import API_BY_KEY, message_class  # noqa: E402
from tests.e2e.harness import BrokerProcess, raw_call  # noqa: E402

CREATE_TOPICS, VERSION = 19, 5


def _create_request(name: str):
    request = message_class(API_BY_KEY[CREATE_TOPICS], True)
    topic = request.CreatableTopic
    config = topic.CreatableTopicConfig(name="retention.ms", value="86400000")
    return request(topics=[topic(name=name, num_partitions=1, replication_factor=-1, configs=[config],
                                 assignments=[])], timeout_ms=30_000)  # fmt: skip


def _create_all(broker: BrokerProcess, count: int) -> list[float]:
    """Seconds per creation, in order."""
    times = []
    with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as sock:
        for i in range(count):
            body = _create_request(f"topic-{i:05d}")
            started = time.perf_counter()
            answer = raw_call(sock, CREATE_TOPICS, VERSION, body)
            times.append(time.perf_counter() - started)
            code = answer.topics[0].error_code
            if code != 0:
                raise SystemExit(f"creating topic-{i:05d} failed with error code {code}")
    return times


def _row(count: int, times: list[float]) -> str:
    first, last = times[:100], times[-100:]
    ms = [f"{1000 * statistics.mean(part):8.2f} {1000 * max(part):8.2f}" for part in (first, last)]
    return f"{count:>6} {ms[0]}   {ms[1]}   {sum(times):8.1f}"


def _timed_start(broker: BrokerProcess) -> float:
    started = time.perf_counter()
    broker.restart()
    return time.perf_counter() - started


def _starts(broker: BrokerProcess) -> list[str]:
    broker.stop()
    clean = _timed_start(broker)
    broker.kill()
    crashed = _timed_start(broker)
    broker.stop()
    again = _timed_start(broker)
    broker.stop()
    return [f"start after a clean stop:           {clean:6.2f} s",
            f"start after SIGKILL (replay):       {crashed:6.2f} s",
            f"start after a clean stop, again:    {again:6.2f} s"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="100,1000,3000", help="topic counts, comma-separated")
    parser.add_argument("--dir", default=None, help="where the data dirs go (default: a temporary directory)")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        print(f"{'topics':>6} {'first 100: mean / max ms':>26}   {'last 100: mean / max ms':>25}   {'total s':>8}")
        lines = []
        for count in counts:
            broker = BrokerProcess(Path(scratch) / f"data-{count}").start(timeout=120)
            try:
                print(_row(count, _create_all(broker, count)), flush=True)
                if count == max(counts):
                    lines = _starts(broker)
            finally:
                broker.kill()
        print(f"\nwith {max(counts)} topics:")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
