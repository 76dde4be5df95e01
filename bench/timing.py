"""Timing helper shared by the benchmarks: the best wall time of several runs."""

from __future__ import annotations

import time
from typing import Callable


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time in seconds of ``repeat`` runs of ``fn`` (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
