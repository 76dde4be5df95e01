"""Start time of a broker's logs by ``num.recovery.threads.per.data.dir``: 1 vs 2 vs 4 threads.

Run: ``python bench/bench_recovery_threads.py [--partitions 400] [--segments 4] [--dirs 1] [--dir /path]``.

One template is written once: ``--partitions`` logs spread over ``--dirs`` log
dirs, each of ``--segments`` segments of 32 KiB (1 KiB batches of 8 records, no producer id).
Each row times ``LogManager.open`` of it (the best of ``--repeat`` runs; an
unclean run closes the files and writes nothing, so the next one finds the
same crash):

* clean: the marker is there, nothing is scanned (a few ``stat`` per log);
* unclean, last segment: the recovery points are kept, so only each log's
  active segment is rescanned (the usual crash);
* unclean, from 0: no clean-shutdown marker, no recovery points, so every
  segment is rescanned (CRCs, indexes rebuilt) and producer state replayed.

In the first three rows the files are in the page cache: they measure the
CPU side of a load. The ``cold`` rows first drop the template's own pages
from the cache (``posix_fadvise(DONTNEED)`` per file, nothing else's), so the
load waits on the disk's reads, which threads can overlap.

On the 2-CPU build VM (other jobs keeping its load near 3) 1, 2 and 4 threads
came out within the run-to-run noise of each other in every row, the clean
one included (about 0.21 s each; 2.4 / 1.9 / 2.4 s from 0; 1.5 / 1.6 / 1.7 s
for the last segment): a load here is Python work holding the GIL (batch
headers, the producer state replay), and its virtio disk serves even the cold
reads quickly. Threads pay off where a load waits on a slow disk, with more
CPUs, or once the per-batch work runs in C without the GIL.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import RecordBatchBuilder  # noqa: E402
from storage import LogManager  # noqa: E402

CLOCK = 1_700_000_000_000
SEGMENT_BYTES = 32 * 1024
THREADS = (1, 2, 4)


def _batch(records: int = 8, value_size: int = 100) -> bytes:
    b = RecordBatchBuilder(magic=2, base_offset=0)
    for i in range(records):
        b.append(b"key-%d" % i, os.urandom(value_size), timestamp=CLOCK + i)
    return b.build()


def _rebase(data: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big", signed=True) + data[8:]  # the CRC does not cover the offset


def write_template(root: Path, dirs: int, partitions: int, segments: int) -> list[Path]:
    paths = [root / f"d{i}" for i in range(dirs)]
    lm = LogManager.open(paths, {"log.segment.bytes": str(SEGMENT_BYTES)}, lambda: CLOCK)
    lm.create_topic("bench", partitions, {})
    batch = _batch()
    records = 8
    per_log = segments * (SEGMENT_BYTES // len(batch)) - 1
    for p in range(partitions):
        log = lm.get_log("bench", p)
        for i in range(per_log):
            log.append(_rebase(batch, i * records), i * records, i * records + records - 1, CLOCK + records - 1)
    lm.close()
    return paths


def _crash(dirs: list[Path], how: str) -> None:
    """Leave ``dirs`` as ``how`` says a stop left them."""
    for d in dirs:
        if how != "clean":
            (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
        if how == "unclean, from 0":
            (d / "recovery-point-offset-checkpoint").unlink(missing_ok=True)


def _evict(dirs: list[Path]) -> None:
    """Drop these files' pages from the page cache (``POSIX_FADV_DONTNEED``, theirs only: nothing else's)."""
    for d in dirs:
        for path in d.rglob("*"):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def time_open(dirs: list[Path], how: str, threads: int, repeat: int) -> float:
    """Best time of ``LogManager.open``; after an unclean start the files are closed with nothing written,
    so the next run recovers the same again (a clean start is closed cleanly: the marker is back)."""
    best = float("inf")
    props = {"log.segment.bytes": str(SEGMENT_BYTES), "num.recovery.threads.per.data.dir": str(threads)}
    for _ in range(repeat):
        _crash(dirs, how.removesuffix(", cold"))
        if how.endswith(", cold"):
            _evict(dirs)
        start = time.perf_counter()
        lm = LogManager.open(dirs, props, lambda: CLOCK)
        best = min(best, time.perf_counter() - start)
        if how == "clean":
            lm.close()
        else:  # as a crash leaves them: files closed, nothing written, the dirs' locks gone with the process
            for log in lm.logs():
                log.close_files()
            lm.dir_locks.release()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=400)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--dirs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the "no clean-shutdown marker" warning of every unclean row
    root = Path(tempfile.mkdtemp(prefix="bench-recovery-", dir=args.dir))
    try:
        dirs = write_template(root, args.dirs, args.partitions, args.segments)
        print(f"{args.partitions} partitions x {args.segments} segments of {SEGMENT_BYTES // 1024} KiB, "
              f"{args.dirs} log dir(s), {os.cpu_count()} CPUs; seconds, best of {args.repeat}")  # fmt: skip
        print(f"{'start after':28}" + "".join(f"{f'{n} thr':>10}" for n in THREADS) + f"{'4 vs 1':>10}")
        rows = ("clean", "unclean, last segment", "unclean, from 0", "clean, cold", "unclean, last segment, cold")
        for how in rows:
            times = [time_open(dirs, how, n, args.repeat) for n in THREADS]
            print(f"{how:28}" + "".join(f"{t:10.3f}" for t in times) + f"{times[0] / times[-1]:9.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
