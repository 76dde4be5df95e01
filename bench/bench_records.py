"""Benchmark of the record layer (run by hand: ``python bench/bench_records.py``).

Measures, on one core:

* v2 header parse + CRC-32C check of 1 MiB batches, in MB/s (goal >= 1000 MB/s);
* iteration over an uncompressed batch of 100-byte records, in records/s
  (goal >= 1,000,000/s), for the tuple fast path and for ``Record`` objects;
* for context: compressed iteration, building, and kafka-python's reader as a peer;
* CRC-32 of legacy messages (the C accelerator's, as down-conversion writes them) on 1 KiB and
  64 KiB buffers for each folding path the CPU has, in GB/s, with the ratio to the 128-bit path
  (``python bench/bench_records.py crc32`` runs only these). Each 1 KiB call from Python also
  pays the call itself (the ``0 B`` row shows what it costs), so that row undersells every path alike.

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


CRC_PATHS = {1: "PCLMULQDQ, 128-bit", 2: "VPCLMULQDQ on AVX2, 256-bit", 3: "VPCLMULQDQ on AVX-512"}


def _crc_seconds(crc32, data: bytes, calls: int) -> float:
    def run():
        for _ in range(calls):
            crc32(data)

    return best_time(run) / calls


def bench_crc32_paths() -> list[tuple[str, str, str, float]]:
    """GB/s of the C CRC-32 per folding path the CPU has, on 1 KiB and 64 KiB buffers (rows of the table)."""
    try:
        from protocol.records import _cdownconvert as cdc
    except ImportError:
        return []
    call = _crc_seconds(cdc.crc32, b"", 100_000)
    rows = [("CRC-32 call from Python, 0 B", f"{call * 1e9:,.0f} ns/call", "(overhead)", float("nan"))]
    was = cdc.set_fold(0)
    try:
        for size in (1 << 10, 64 << 10):
            data, base = os.urandom(size), None
            for level, name in CRC_PATHS.items():
                cdc.set_fold(level)
                if cdc.set_fold(level) != level:
                    continue  # the CPU lacks it
                rate = size / _crc_seconds(cdc.crc32, data, (32 * MIB) // size) / 1e9
                base = base or rate
                rows.append((f"CRC-32 {size >> 10} KiB, {name}", f"{rate:,.2f} GB/s", "vs 128-bit", rate / base))
    finally:
        cdc.set_fold(was)
    return rows


def print_rows(rows: list[tuple[str, str, str, float]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'result':>26}  {'goal/peer':>18}  ratio")
    for name, result, goal_text, ratio in rows:
        print(f"{name:<{width}}  {result:>26}  {goal_text:>18}  {ratio:5.2f}")


def main() -> None:
    if sys.argv[1:] == ["crc32"]:
        print_rows(bench_crc32_paths())
        return
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
    print_rows(rows + bench_crc32_paths())


if __name__ == "__main__":
    main()
