"""Produce and consume throughput, ours vs the peer broker noida-db, run by hand.

    python bench/bench_broker.py [--noida PATH] [--small N] [--large N] [--trials N] [--sustained]
                                 [--rows SIZE:ACKS,...]

Starts our broker (``tests/e2e/harness.py``) and, in the same run, noida-db
(``pip install noida-db==0.2.3`` into a separate venv, e.g. ``python -m venv
/tmp/peers && /tmp/peers/bin/pip install noida-db==0.2.3``, then pass
``--noida /tmp/peers/bin/noida-db``), and drives both with the same
confluent-kafka producer and consumer: 100-byte and 1 KiB records, acks=1 and
acks=all. The consumer's ``queued.min.messages`` is raised above the record
count so librdkafka's 1 s "queue full" fetch back-off (which a fast broker
triggers) does not stand in for the broker's speed.

Both brokers run for the whole benchmark, and every row is run ``--trials``
times on each, alternating which broker goes first, each time on a fresh
topic; the median is printed. Before each run both brokers are let go quiet:
noida-db acknowledges produce before doing much of its work and keeps a core
busy for seconds afterwards, which otherwise lands on the next run. (Run back
to back, single runs moved by 10-30%.) During a run the other broker is
stopped (SIGSTOP, then SIGCONT once the run's broker is quiet again): noida-db
also starts work on its own later, after it has gone quiet (0.23 s of CPU
was seen inside one of our 0.13 s runs, which then took 0.19 s). The CPU each broker used for a row's
produce and consume, its deferred work included, is printed too.
``--rows`` runs only the rows named by record size and acks (``--rows 100:1,1024:1``).
By default the 100 B rows have 200,000 records (``--small``) and the 1 KiB rows 50,000 (``--large``).
The 1 KiB rows' batch and consume windows then last only 0.03-0.1 s, and single runs of one row were
seen to range from 0.17 to 1.92 times each other; ``--large 200000`` gives windows of 0.1-0.5 s, but
noida-db keeps every record it is sent in memory for good (deleting the topic frees almost none: about
100 MB of resident memory per 100 MB produced), and with five trials of both 1 KiB rows it grew past
18 GB. So run those one row at a time, with fewer trials: ``--rows 1024:1 --large 200000 --trials 3``.
``--sustained`` adds rows long enough (1 M x 100 B, 300 k x 1 KiB) that the
deferred work falls inside the run. Prints records/s and
MB/s for each and the ratio ours/peer (goal >= 1.0 on every row), plus our
broker's peak RSS.

Produce is timed two ways, each on its own fresh topic. ``produce`` calls
``Producer.produce()`` once per record, as most Python applications do; on a
2-core machine that loop is the bottleneck for both brokers, so the row sits at
parity and its spread straddles 1.0. Its raw limit shows it: once per trial the same
loop runs with every broker paused (SIGSTOP; ``client_floor``), the client alone, and
each broker's loop (the window before its final ``flush``) is compared with that.
No broker can make the loop take less. ``batch`` hands librdkafka 10,000 records
per ``produce_batch()`` call, so the row measures librdkafka and the broker.
Our broker writes every batch to the segment file (page cache) before it
acknowledges, as Kafka does; noida-db keeps records in memory and saves them
later from a background thread (a whole-store ``kafka.json``). So the
``batch`` row also prints a raw limit, ``pwrite`` of the same bytes into a new
file with no broker, and our rate as a fraction of it. On a VM, pages the
guest has never touched (or has handed back to the host) cost far more to
write: on the Firecracker VM this was written on, 300 MB into new page cache
took 0.07 s when the memory had just been used and 0.5-0.9 s when it had not.
In the slow case that write was 48 % of our broker's CPU on 1 KiB batches
(perf), and 61 % in a later profile; it was most of the run-to-run drift in the
produce rows. (That VM's kernel reports freed memory back to the host through
virtio-balloon free page reporting, in 2 MiB blocks: ``page_reporting_order``
9 and ``min_free_ms`` 0 under ``/sys/module/page_reporting/parameters``; freed
memory stayed warm for about 3 s and was cold again after about 10 s.) So just
before each run, and before each raw write, four times the run's record bytes
are written to a scratch file and deleted (``bench/timing.py``
``warm_pages``): the run, whichever broker it is for, starts on warm memory.

A second table shows where each produce row's time went: the CPU the client (this process: the Python
loop and librdkafka's threads) and each broker used inside the timed window, and the cores the two kept
busy together: 2 on a 2-core machine would mean the run was bound by the CPU they share, so that what
a broker does before it acknowledges (ours: check the batch and write it to the segment file, as Kafka
does; noida-db: keep it in memory) came straight out of the client's throughput; below that, part of
the time one side waited for the other.

Each producer learns the topic's metadata (``list_topics``) before its clock
starts. Without that, a producer used within ~50 ms of its creation waits out
librdkafka's sparse-connection back-off before it looks up a topic it has not
seen (its bootstrap Metadata asks for no topics, and Kafka, like our broker,
answers with none); noida-db answers that empty request with every topic, so
its producers skipped the wait, and a 50 k-record row billed us ~50 ms of it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.peers import (  # noqa: E402
    cpu_seconds, cpu_seconds_exact, group_pids, paused, settle, start_noida, stop_group,
)
from bench.timing import warm_pages  # noqa: E402
from tests.e2e.harness import BrokerProcess  # noqa: E402

# Before each run, this many times the run's record bytes are written to a scratch file and deleted
# (``warm_pages``): the two produce topics' segments, and the client's and the broker's buffers.
_WARM_FACTOR = 4


@attrs.frozen
class Window:
    """A timed produce: its seconds, the seconds until the last record was handed to librdkafka (``loop``:
    the rest is the final ``flush``), and the CPU seconds this process (the client: the Python loop and
    librdkafka's threads) and the broker used inside it (deferred work not included)."""

    seconds: float
    loop: float
    client_cpu: float
    broker_cpu: float


def produce(bootstrap: str, topic: str, n: int, size: int, acks: str, extra: dict | None = None,
            value: bytes | None = None, per_record: bool = False) -> float:  # fmt: skip
    """Seconds of ``produce_window`` (no broker CPU)."""
    return produce_window(bootstrap, topic, n, size, acks, extra, value, per_record).seconds


def produce_window(bootstrap: str, topic: str, n: int, size: int, acks: str, extra: dict | None = None,
                   value: bytes | None = None, per_record: bool = False, broker: list[int] = (),
                   alone: list[int] | None = None) -> Window:  # fmt: skip
    """Create ``topic`` and produce ``n`` records of ``value`` (``size`` random bytes by default).

    By default the records go in with ``produce_batch`` (one call per 10,000, built before the clock starts),
    so the time is librdkafka's and the broker's; ``per_record`` calls ``produce()`` once per record, whose
    Python loop is then what the row measures on a 2-core machine. With ``alone`` (process ids) those
    processes are paused (SIGSTOP) while the records are handed over and continued for the final flush:
    the loop is then the client's alone, with no broker taking any of the machine (``client_floor``)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "enable.idempotence": False,
                         "queue.buffering.max.messages": 1_000_000, **(extra or {})})  # fmt: skip
    value = os.urandom(size) if value is None else value
    chunks = [] if per_record else _chunks(n, value)
    producer.list_topics(topic, 30)  # metadata and leader known before the clock starts (module doc)
    with paused(alone or []):
        client, server, started = time.process_time(), cpu_seconds_exact(list(broker)), time.perf_counter()
        if per_record:
            _produce_each(producer, topic, n, value)
        for chunk in chunks:
            _produce_batch(producer, topic, chunk)
        loop = time.perf_counter() - started
    producer.flush(120)
    elapsed = time.perf_counter() - started
    return Window(elapsed, loop, time.process_time() - client, cpu_seconds_exact(list(broker)) - server)


def client_floor(bootstrap: str, topic: str, n: int, size: int, acks: str, everyone: list[int]) -> float:
    """Seconds the per-record ``produce()`` loop takes with every broker paused: the client alone, the
    least any broker can make that loop take (the records go to ``bootstrap``'s broker once it continues)."""
    return produce_window(bootstrap, topic, n, size, acks, per_record=True, alone=everyone).loop


def _produce_each(producer: Producer, topic: str, n: int, value: bytes) -> None:
    """One ``produce()`` per record (keys cycling over 1000), polling while librdkafka's queue is full; the
    loop is what the row measures, so it does nothing else."""
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=value, key=str(i % 1000).encode(), partition=0)
                break
            except BufferError:
                producer.poll(0.01)


def _produce_batch(producer: Producer, topic: str, chunk: list[dict]) -> None:
    """``produce_batch`` of ``chunk``, offering again what it could not queue while its queue was full."""
    while chunk:  # a full queue does not raise here: librdkafka marks what it could not queue with "_error"
        if producer.produce_batch(topic, chunk, partition=0) < len(chunk):
            producer.poll(0.01)
        chunk = [_requeue(m) for m in chunk if "_error" in m]


def _chunks(n: int, value: bytes, size: int = 10_000) -> list[list[dict]]:
    """``n`` messages (keys cycling over 1000) in lists of ``size`` for ``produce_batch``."""
    keys = [str(i).encode() for i in range(1000)]
    return [[{"key": keys[i % 1000], "value": value} for i in range(s, min(s + size, n))] for s in range(0, n, size)]


def _requeue(message: dict) -> dict:
    """A message ``produce_batch`` could not queue, to offer again: only a full queue is worth waiting out."""
    if message["_error"].code() != KafkaError._QUEUE_FULL:
        raise RuntimeError(f"produce_batch refused a message: {message['_error']}")
    return {"key": message["key"], "value": message["value"]}


def consume(bootstrap: str, topic: str, n: int, extra: dict | None = None) -> float:
    # queued.min.messages above n: librdkafka otherwise stops fetching for fetch.queue.backoff.ms (1 s) whenever
    # 100,000 fetched messages wait in its queue, which a broker that answers faster than the Python loop
    # consumes triggers, and the row would time the client's back-off instead of the broker.
    # receive.message.max.bytes at its maximum: noida-db ignores fetch.max.bytes and answers a fetch with the
    # whole partition (518 MB seen), which librdkafka otherwise refuses, retrying forever.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "queued.min.messages": max(n, 100_000),
                         "receive.message.max.bytes": 2147483647, **(extra or {})})  # fmt: skip
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


def run_case(bootstrap: str, label: str, case: tuple, trial: int, pids: list[int]) -> dict[str, float]:
    """Seconds per op on fresh topics: ``produce()`` per record, ``produce_batch``, then consume the first;
    and for both produce ops the client's and the broker's CPU seconds inside the timed window."""
    size, n, acks = case
    topic = f"bench-{label}-{size}-{n}-{acks}-{trial}"
    each = produce_window(bootstrap, topic, n, size, acks, per_record=True, broker=pids)
    batch = produce_window(bootstrap, topic + "-b", n, size, acks, broker=pids)
    out = {"consume": consume(bootstrap, topic, n)}
    for op, window in (("produce", each), ("batch", batch)):
        out |= {op: window.seconds, f"{op} client cpu": window.client_cpu, f"{op} broker cpu": window.broker_cpu}
    return out | {"produce loop": each.loop}


def write_limit(directory: Path, nbytes: int) -> float:
    """Seconds to ``pwrite`` ``nbytes`` in 1 MiB pieces into a new file in ``directory`` (kept, as a broker's
    segments are): the page-cache append every produce pays before its acknowledgement, without a broker."""
    piece = os.urandom(1 << 20)
    fd, _ = tempfile.mkstemp(dir=directory)
    started = time.perf_counter()
    for pos in range(0, nbytes, len(piece)):
        os.pwrite(fd, piece[: nbytes - pos], pos)
    elapsed = time.perf_counter() - started
    os.close(fd)
    return elapsed


def run_all(brokers: dict[str, tuple[str, list[int]]], cases: list, trials: int, scratch: Path) -> dict:
    """Every case ``trials`` times on each broker, alternating which goes first, and the raw write limit.

    Before each run every broker is let go quiet (``settle``), then the others are paused (``paused``)
    until the run's broker is quiet again; a run's CPU is what its broker used from the start until then,
    deferred work included. Returns the samples in trial order: seconds per (broker, case, op), CPU seconds
    per (broker, case, "cpu"), seconds per ("raw", case, "batch") and the client floor's seconds per
    ("raw", case, "produce").
    """
    samples: dict = {}
    everyone = [pid for _, pids in brokers.values() for pid in pids]
    for case in cases:
        for trial in range(trials):
            for label in list(brokers) if trial % 2 == 0 else list(reversed(brokers)):
                bootstrap, pids = brokers[label]
                settle(everyone)
                with paused([pid for pid in everyone if pid not in pids]):
                    warm_pages(scratch, _WARM_FACTOR * case[0] * case[1])
                    cpu = cpu_seconds(pids)
                    times = run_case(bootstrap, label, case, trial, pids)
                    settle(pids)
                    times["cpu"] = cpu_seconds(pids) - cpu
                for op, value in times.items():
                    samples.setdefault((label, case, op), []).append(value)
            samples.setdefault(("raw", case, "produce"), []).append(_client_floor(brokers, case, trial, scratch))
            settle(everyone)
            with paused(everyone):
                warm_pages(scratch, case[0] * case[1])
                samples.setdefault(("raw", case, "batch"), []).append(write_limit(scratch, case[0] * case[1]))
    return samples


def _client_floor(brokers: dict[str, tuple[str, list[int]]], case: tuple, trial: int, scratch: Path) -> float:
    """``client_floor`` of ``case`` on a fresh topic of our broker, every broker quiet and then paused."""
    everyone = [pid for _, pids in brokers.values() for pid in pids]
    size, n, acks = case
    settle(everyone)
    warm_pages(scratch, _WARM_FACTOR * size * n)
    return client_floor(brokers["ours"][0], f"bench-alone-{size}-{n}-{acks}-{trial}", n, size, acks, everyone)


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
    parser.add_argument("--trials", type=int, default=5, help="runs per row and broker; the median is shown")
    parser.add_argument("--sustained", action="store_true",
                        help="add rows of 1 M x 100 B and 300 k x 1 KiB records (acks=1), long enough that "
                             "work a broker defers past its acknowledgements is part of the run")  # fmt: skip
    parser.add_argument("--rows", type=_row_filter, default=None, metavar="SIZE:ACKS,...",
                        help="only these rows, by record size and acks, e.g. 100:1,1024:1 (default: all)")
    args = parser.parse_args()
    cases = [(100, args.small, "1"), (100, args.small, "all"), (1024, args.large, "1"), (1024, args.large, "all")]
    if args.sustained:
        cases += [(100, 1_000_000, "1"), (1024, 300_000, "1")]
    cases = select_rows(cases, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        ours = BrokerProcess(Path(tmp) / "ours", {"prometheus.port": "0"}).start()
        noida = None
        try:
            noida, peer_bootstrap = start_noida(args.noida, Path(tmp) / "noida", 30)
            brokers = {"ours": (ours.bootstrap, [ours.proc.pid]), "peer": (peer_bootstrap, group_pids(noida.pid))}
            samples = run_all(brokers, cases, args.trials, Path(tmp))
            rss = peak_rss_mb(ours.proc.pid)
        finally:
            ours.kill()
            if noida is not None:
                stop_group(noida)
    _report(samples, cases, args.trials)
    print(f"our broker's peak RSS: {rss:.0f} MiB")


def _row_filter(text: str) -> set[tuple[int, str]]:
    """``--rows``: ``SIZE:ACKS`` pairs, comma-separated (acks ``1`` or ``all``)."""
    rows = set()
    for item in filter(None, (part.strip() for part in text.split(","))):
        size, _, acks = item.partition(":")
        if not size.isdigit() or acks not in ("1", "all"):
            raise argparse.ArgumentTypeError(f"{item!r} is not SIZE:ACKS with acks 1 or all")
        rows.add((int(size), acks))
    if not rows:
        raise argparse.ArgumentTypeError("no rows named")
    return rows


def select_rows(cases: list, rows: set[tuple[int, str]] | None) -> list:
    """The cases ``rows`` names (every size and record count of a named size and acks); all when None."""
    chosen = cases if rows is None else [case for case in cases if (case[0], case[2]) in rows]
    if not chosen:
        raise SystemExit(f"--rows matches none of {sorted({(c[0], c[2]) for c in cases})}")
    return chosen


def _report(samples: dict, cases: list, trials: int) -> None:
    """The median row per case and op, with the lowest and highest ratio of the runs made side by side:
    a spread that straddles 1.0 says the row measures the client (or the machine), not the brokers."""
    med = {key: statistics.median(values) for key, values in samples.items()}
    print(f"median of {trials} alternating runs per row; spread = lowest-highest ratio of run i on both brokers; "
          "faster = runs in which ours was faster; "
          "produce = one produce() call per record, batch = produce_batch() per 10,000; cpu = broker CPU "
          "seconds for the three ops, deferred work included; raw = for batch, pwrite of the same bytes to a "
          "new file, no broker; for produce, the produce() loop with every broker paused (the client alone), "
          "compared with each broker's loop (the time before its final flush)")  # fmt: skip
    print(f"{'size':>6}{'records':>10} {'acks':>4} {'op':<8}{'ours rec/s':>12}{'ours MB/s':>10}{'peer rec/s':>12}"
          f"{'peer MB/s':>10}{'ratio':>7}{'spread':>11}{'faster':>7}{'ours cpu':>10}{'peer cpu':>10}{'raw MB/s':>10}"
          f"{'ours/raw':>9}{'peer/raw':>9}")  # fmt: skip
    for case in cases:
        for op in ("produce", "batch", "consume"):
            print(_row(samples, med, case, op))
    _report_cpu(samples, cases)


def _report_cpu(samples: dict, cases: list) -> None:
    """Where each produce row's time went: the CPU the client and the broker used inside the timed window
    (medians), and the cores they kept busy together (module docstring)."""
    print("CPU inside the timed produce window (median seconds; busy = (client + broker) / wall, median of runs)")
    print(f"{'size':>6}{'records':>10} {'acks':>4} {'op':<8}" + "".join(
        f"{f'{who} client':>13}{f'{who} broker':>13}{f'{who} busy':>11}" for who in ("ours", "peer")))  # fmt: skip
    for case in cases:
        for op in ("produce", "batch"):
            line = f"{case[0]:>6}{case[1]:>10,} {case[2]:>4} {op:<8}"
            for who in ("ours", "peer"):
                client, broker = samples[(who, case, f"{op} client cpu")], samples[(who, case, f"{op} broker cpu")]
                busy = [(c + b) / t for c, b, t in zip(client, broker, samples[(who, case, op)])]
                line += f"{statistics.median(client):>13.3f}{statistics.median(broker):>13.3f}"
                line += f"{statistics.median(busy):>11.2f}"
            print(line)


def _row(samples: dict, med: dict, case: tuple, op: str) -> str:
    size, n, acks = case
    a, b = med[("ours", case, op)], med[("peer", case, op)]
    ratios = [p / o for o, p in zip(samples[("ours", case, op)], samples[("peer", case, op)])]
    line = (f"{size:>6}{n:>10,} {acks:>4} {op:<8}{n / a:>12,.0f}{n * size / a / 1e6:>10.1f}{n / b:>12,.0f}"
            f"{n * size / b / 1e6:>10.1f}{b / a:>7.2f}{f'{min(ratios):.2f}-{max(ratios):.2f}':>11}"
            f"{f'{sum(r > 1 for r in ratios)}/{len(ratios)}':>7}")  # fmt: skip
    if op == "produce":
        line += f"{med[('ours', case, 'cpu')]:>10.2f}{med[('peer', case, 'cpu')]:>10.2f}"
        a, b = med[("ours", case, "produce loop")], med[("peer", case, "produce loop")]
    elif op == "batch":
        line += f"{'':>20}"
    if op != "consume":
        raw = med[("raw", case, op)]
        line += f"{n * size / raw / 1e6:>10.1f}{raw / a:>9.2f}{raw / b:>9.2f}"
    return line


if __name__ == "__main__":
    main()
