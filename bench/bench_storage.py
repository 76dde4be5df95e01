"""Storage benchmark: append throughput, group commit, read-by-offset lookups, clean open time.

Run: ``python bench/bench_storage.py [--mib 256] [--dir /path]``. Every row
prints our number, the peer (a plain ``write()`` loop, or ``write()`` +
``fsync`` per batch) and the ratio against the goal:

* append 1 MiB batches through ``Log.append`` vs ``os.write`` of the same
  bytes into one file (goal >= 0.8x);
* the same in durable mode, 8 threads appending and waiting on group commit
  (``LogManager.sync_to``), vs one ``write`` + ``fsync`` per batch, with 1 MiB
  batches and with small (4 KiB) ones, where sharing the fsync matters most;
* random read-by-offset lookups per second (``Log.read`` of one batch);
* ``LogManager.open`` of 1,000 partitions x 10 segments after a clean stop
  (goal <= 2 s), plus the first read of every partition afterwards.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import RecordBatchBuilder  # noqa: E402
from storage import LogManager  # noqa: E402

MIB = 1 << 20


def _batch(base_offset: int, records: int, value_size: int) -> bytes:
    b = RecordBatchBuilder(magic=2, base_offset=base_offset)
    value = os.urandom(value_size)
    for i in range(records):
        b.append(b"key-%d" % i, value, timestamp=1_700_000_000_000 + i)
    return b.build()


def _rebase(data: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big", signed=True) + data[8:]


def _manager(root: Path, **props: str) -> LogManager:
    return LogManager.open([root], props, lambda: int(time.time() * 1000))


def _plain_writes(path: Path, batch: bytes, n: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(n):
        os.write(fd, batch)
    elapsed = time.perf_counter() - start
    os.close(fd)
    path.unlink()
    return elapsed


def _log_appends(root: Path, batch: bytes, n: int) -> float:
    lm = _manager(root)
    lm.create_topic("bench", 1, {})
    log = lm.get_log("bench", 0)
    start = time.perf_counter()
    for i in range(n):
        first = i * 16
        log.append(batch, first, first + 15, 1_700_000_000_015)  # offsets in the bytes don't matter here
    elapsed = time.perf_counter() - start
    lm.close()
    shutil.rmtree(root)
    return elapsed


def bench_append(root: Path, total_mib: int, rounds: int = 3) -> tuple[float, float]:
    """Best of ``rounds`` alternating runs, so neither side gets the warmer page cache."""
    batch = _batch(0, 16, MIB // 16 - 64)
    ours_s = plain_s = float("inf")
    for _ in range(rounds):
        plain_s = min(plain_s, _plain_writes(root / "plain.bin", batch, total_mib))
        ours_s = min(ours_s, _log_appends(root / "logs", batch, total_mib))
    return total_mib * len(batch) / MIB / ours_s, total_mib * len(batch) / MIB / plain_s


def bench_group_commit(root: Path, batches: int, records: int, value_size: int,
                       threads: int = 8) -> tuple[float, float, int, int]:  # fmt: skip
    """Durable appends by ``threads`` producers sharing group commit vs ``write`` + ``fsync`` per batch.

    Returns (our batches/s, plain batches/s, fsyncs, batch size in bytes).
    """
    batch = _batch(0, records, value_size)
    fd = os.open(root / "plain.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(batches):
        os.write(fd, batch)
        os.fsync(fd)
    plain_s = time.perf_counter() - start
    os.close(fd)
    os.unlink(root / "plain.bin")
    lm = _manager(root / "durable", **{"log.flush.durable.enable": "true"})
    lm.create_topic("bench", 1, {})
    log = lm.get_log("bench", 0)
    lock = threading.Lock()

    def producer(count: int) -> None:
        for _ in range(count):
            with lock:
                first = log.log_end_offset
                log.append(_rebase(batch, first), first, first + records - 1, 1_700_000_000_000 + records - 1)
                target = lm.flush_generation()
            lm.sync_to(target)

    workers = [threading.Thread(target=producer, args=(batches // threads,)) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ours_s = time.perf_counter() - start
    fsyncs = lm.fsync_count
    lm.close()
    shutil.rmtree(root / "durable")
    return batches / ours_s, batches / plain_s, fsyncs, len(batch)


def bench_lookups(root: Path, seconds: float = 2.0) -> float:
    lm = _manager(root / "reads", **{"log.segment.bytes": str(16 * MIB)})
    lm.create_topic("bench", 1, {})
    log = lm.get_log("bench", 0)
    batch = _batch(0, 10, 100)
    for i in range(60_000):
        log.append(_rebase(batch, i * 10), i * 10, i * 10 + 9, 1_700_000_000_009)
    rng = random.Random(1)
    end = log.log_end_offset
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            log.read(rng.randrange(end), 1000, min_one_message=True)
        done += 1000
    rate = done / (time.perf_counter() - start)
    lm.close()
    return rate


def bench_open(root: Path, partitions: int = 1000, segments: int = 10) -> tuple[float, float]:
    lm = _manager(root / "open", **{"log.segment.bytes": "4000", "log.index.interval.bytes": "500"})
    lm.create_topic("bench", partitions, {})
    batch = _batch(0, 4, 90)
    per_segment = 4000 // len(batch) + 1
    for p in range(partitions):
        log = lm.get_log("bench", p)
        for i in range(per_segment * (segments - 1) + 1):
            log.append(_rebase(batch, i * 4), i * 4, i * 4 + 3, 1_700_000_000_003)
    lm.close()
    start = time.perf_counter()
    lm = _manager(root / "open", **{"log.segment.bytes": "4000", "log.index.interval.bytes": "500"})
    open_s = time.perf_counter() - start
    count = sum(len(lm.get_log("bench", p).segments) for p in range(partitions))
    assert count >= partitions * segments, count
    start = time.perf_counter()
    for p in range(partitions):
        log = lm.get_log("bench", p)
        log.read(log.log_end_offset // 2, 1000, min_one_message=True)
    first_reads_s = time.perf_counter() - start
    lm.close()
    return open_s, first_reads_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB appended in the throughput rows")
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        rows = []
        ours, plain = bench_append(root, args.mib)
        rows.append(("append 1 MiB batches (MiB/s)", ours, plain, ours / plain, ">= 0.8x"))
        ours, plain, fsyncs, size = bench_group_commit(root, 128, 16, MIB // 16 - 64)
        ours, plain = ours * size / MIB, plain * size / MIB
        rows.append((f"durable 1 MiB batches (MiB/s), 8 thr, {fsyncs} fsyncs", ours, plain, ours / plain, ">= 1x"))
        ours, plain, fsyncs, _ = bench_group_commit(root, 2000, 4, 1000)
        rows.append((f"durable 4 KiB appends/s, 8 thr, {fsyncs} fsyncs", ours, plain, ours / plain, ">= 1x"))
        rate = bench_lookups(root)
        rows.append(("read-by-offset lookups/s", rate, float("nan"), float("nan"), "-"))
        open_s, reads_s = bench_open(root)
        rows.append(("clean open 1,000 x 10 segments (s)", open_s, 2.0, 2.0 / open_s, "<= 2 s"))
        rows.append(("  then first read of every partition (s)", reads_s, float("nan"), float("nan"), "-"))
        print(f"{'benchmark':48} {'ours':>12} {'peer/goal':>12} {'ratio':>8}  goal")
        for name, a, b, ratio, goal in rows:
            print(f"{name:48} {a:12.2f} {b:12.2f} {ratio:8.2f}  {goal}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
