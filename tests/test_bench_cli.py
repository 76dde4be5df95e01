"""The hand-run benchmarks answer ``--help`` with their usage instead of starting a run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_conversion_help_prints_usage_and_exits() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_conversion.py"), "--help"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: bench_conversion.py")
    for option in ("--batches", "--repeats", "--parse-views"):
        assert option in done.stdout
    assert "records/s" not in done.stdout  # no run was started


def test_bench_conversion_rejects_an_unknown_option() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_conversion.py"), "--no-such-option"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr
