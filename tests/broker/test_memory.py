"""broker.memory: glibc's malloc thresholds are raised at startup unless the operator set their own."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from broker.memory import tune_allocator

ROOT = Path(__file__).resolve().parents[2]
glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt thresholds are glibc's")


@glibc
def test_thresholds_are_taken_on_glibc():
    assert tune_allocator() is True


@pytest.mark.parametrize("name", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"])
def test_the_operators_environment_wins(monkeypatch, name):
    monkeypatch.setenv(name, "131072")
    assert tune_allocator() is False


@glibc
def test_freed_large_buffers_stay_mapped_after_tuning():
    """A 1 MiB buffer allocated and freed repeatedly page-faults once, not every time."""
    program = """
import resource, sys
from broker.memory import tune_allocator
if sys.argv[1] == "tuned":
    tune_allocator()
keep = [bytearray(1 << 20) for _ in range(4)]
del keep
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    a, b, c = bytearray(1 << 20), bytearray(1 << 20), bytearray(1 << 20)
    del a, b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
    faults = {}
    for mode in ("tuned", "default"):
        out = subprocess.run([sys.executable, "-c", program, mode], capture_output=True, text=True, timeout=60,
                             check=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})  # fmt: skip
        faults[mode] = int(out.stdout)
    assert faults["tuned"] < 100 < faults["default"], faults  # seen: about 0 against 150,000


def test_freeze_startup_heap_moves_what_is_alive_out_of_the_collectors_walk():
    import gc

    from broker.memory import freeze_startup_heap

    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > 1000  # modules, classes, functions: the startup heap
    finally:
        gc.unfreeze()
