"""Benchmark of Fetch down-conversion (run by hand: ``python bench/bench_convert.py``).

Source: a log slice of v2 batches of 1 KiB records (16-byte key, 1 KiB value,
half random so lz4 has something to do), 100 records per batch, ~4 MiB in all.
For each codec (none, lz4) it times, on one core, best of several runs:

* native: walking the same batches with ``iter_batches`` + ``iter_tuples``
  (what serving a v2 client costs when it must look at records at all);
* ``down_convert`` to magic 1 (Fetch v2-v3) and to magic 0 (Fetch v0-v1).

Prints records/s and source MB/s, and the ratio converted / native; the
product goal is a ratio >= 0.5. The allocator is tuned as the broker tunes it
(``broker.memory.tune_allocator``): without that, fresh pages for each
converted batch cost more than the conversion and the rows swing with the order.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import Codec, RecordBatchBuilder, down_convert, iter_batches  # noqa: E402
from bench.timing import best_time  # noqa: E402
from broker.memory import tune_allocator  # noqa: E402

RECORDS_PER_BATCH = 100
BATCHES = 40
GOAL = 0.5


def _slice(codec: Codec) -> bytes:
    out = []
    for b in range(BATCHES):
        builder = RecordBatchBuilder(compression=codec, base_offset=b * RECORDS_PER_BATCH)
        for i in range(RECORDS_PER_BATCH):
            builder.append(b"key-%012d" % i, os.urandom(512) + bytes(512), timestamp=1_700_000_000_000 + i)
        out.append(builder.build())
    return b"".join(out)


def _native(data: bytes) -> None:
    for batch in iter_batches(data):
        for _ in batch.iter_tuples():
            pass


def main() -> None:
    tune_allocator()
    n = RECORDS_PER_BATCH * BATCHES
    rows = []
    for codec in (Codec.NONE, Codec.LZ4):
        data = _slice(codec)
        native = best_time(lambda: _native(data))
        rows.append((codec.name.lower(), "native iterate", native, len(data), None))
        for magic in (1, 0):
            result = down_convert(data, target_magic=magic, fetch_offset=0)
            assert result.converted_count == n
            t = best_time(lambda m=magic: down_convert(data, target_magic=m, fetch_offset=0))
            rows.append((codec.name.lower(), f"down_convert -> v{magic}", t, len(data), native / t))
    print(f"{n} records of 1 KiB per run, {RECORDS_PER_BATCH} per batch; goal: converted/native >= {GOAL}")
    print(f"{'codec':<6} {'path':<20} {'records/s':>12} {'src MB/s':>9} {'ratio':>7} {'goal?':>6}")
    for codec, path, t, size, ratio in rows:
        ok = "" if ratio is None else ("yes" if ratio >= GOAL else "NO")
        shown = "" if ratio is None else f"{ratio:.2f}x"
        print(f"{codec:<6} {path:<20} {n / t:>12,.0f} {size / t / 1e6:>9.1f} {shown:>7} {ok:>6}")


if __name__ == "__main__":
    main()
