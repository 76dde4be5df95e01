"""Benchmark of the record layer (run by hand: ``python bench/bench_records.py``).

Measures, on one core:

* v2 header parse + CRC-32C check of 1 MiB batches, in MB/s (goal >= 1000 MB/s);
* iteration over an uncompressed batch of 100-byte records, in records/s
  (goal >= 1,000,000/s), for the tuple fast path and for ``Record`` objects;
* for context: compressed iteration, building, and kafka-python's reader as a peer.

Prints a table with each result's ratio to its goal (or to the peer).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import Codec, RecordBatchBuilder, RecordBatchView, iter_batches  # noqa: E402
from bench.timing import best_time  # noqa: E402

MIB = 1 << 20


def _batch(n_records: int, value_size: int, codec: Codec = Codec.NONE) -> bytes:
    b = RecordBatchBuilder(compression=codec)
    value = os.urandom(value_size // 2) * 2
    for i in range(n_records):
        b.append(b"key-%08d" % i, value, timestamp=1_700_000_000_000 + i)
    return b.build()


def _one_mib_batch() -> bytes:
    return _batch(MIB // 1100, 1080)


def bench_header_crc(small: bool = False) -> float:
    batches = [_batch(150, 80) for _ in range(1000)] if small else [_one_mib_batch() for _ in range(16)]
    buf = memoryview(b"".join(batches))

    def run():
        for v in iter_batches(buf):
            v.ensure_valid()

    return len(buf) / best_time(run) / 1e6


def bench_iteration(codec: Codec, *, tuples: bool) -> tuple[float, int]:
    # 100-byte records: 10-byte key + 70-byte value + ~20 bytes of framing.
    data = _batch(10_000, 70, codec)
    view = RecordBatchView(data)
    assert view.size_in_bytes / view.records_count <= 110 or codec != Codec.NONE

    def run():
        for _ in view.iter_tuples() if tuples else view.iter_records():
            pass

    return view.records_count / best_time(run), round(len(data) / view.records_count)


def bench_build() -> float:
    value = b"v" * 70
    n = 10_000

    def run():
        b = RecordBatchBuilder()
        for i in range(n):
            b.append(b"key-%06d" % i, value, timestamp=i)
        b.build()

    return n / best_time(run, 3)


def bench_kafka_python_peer() -> float | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka.record.default_records import DefaultRecordBatch
    except ImportError:
        return None
    data = _batch(10_000, 70)

    def run():
        for _ in DefaultRecordBatch(memoryview(data)):
            pass

    return 10_000 / best_time(run, 3)


def main() -> None:
    rows = []
    crc = bench_header_crc()
    rows.append(("v2 header + CRC-32C, 1 MiB batches", f"{crc:,.0f} MB/s", "goal 1,000 MB/s", crc / 1000))
    small = bench_header_crc(small=True)
    rows.append(("  same, 16 KiB batches", f"{small:,.0f} MB/s", "goal 1,000 MB/s", small / 1000))
    goal = 1_000_000
    peer = bench_kafka_python_peer()
    for label, codec, tuples in (
        ("iterate tuples, 100 B records, none", Codec.NONE, True),
        ("iterate Record objects, 100 B, none", Codec.NONE, False),
        ("iterate tuples, 100 B records, lz4", Codec.LZ4, True),
        ("iterate tuples, 100 B records, zstd", Codec.ZSTD, True),
    ):
        rate, size = bench_iteration(codec, tuples=tuples)
        rows.append((label, f"{rate:,.0f} rec/s", "goal 1,000,000/s", rate / goal))
        if peer and codec == Codec.NONE:
            rows.append(("  same vs kafka-python reader", f"{peer:,.0f} rec/s (peer)", "peer ratio", rate / peer))
    build = bench_build()
    rows.append(("build v2 batch, 100 B records", f"{build:,.0f} rec/s", "(no goal)", float("nan")))
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'result':>26}  {'goal/peer':>18}  ratio")
    for name, result, goal_text, ratio in rows:
        print(f"{name:<{width}}  {result:>26}  {goal_text:>18}  {ratio:5.2f}")


if __name__ == "__main__":
    main()
