"""Timing helpers shared by the benchmarks: the best wall time of several runs, and warm pages.

``warm_pages`` writes a scratch file and deletes it just before a timed run. On a VM whose kernel
hands freed memory back to the host (virtio-balloon free page reporting: ``page_reporting_order`` and
``min_free_ms`` under ``/sys/module/page_reporting/parameters``), a page the guest has not used for a
few seconds costs the host a fault on its next first touch: writing 512 MiB into new page cache ran at
about 450 MB/s that way, and at about 4 GB/s within 3 s of the same amount being written and deleted.
The pages freed by the deleted file are the ones the next allocations (a broker's segment writes, its
heap, the client's buffers) get, so a run starts on warm memory whichever broker it is for.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Callable

_PIECE = 1 << 20


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time in seconds of ``repeat`` runs of ``fn`` (the least disturbed run)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def warm_pages(directory: Path, nbytes: int) -> None:
    """Write ``nbytes`` (whole MiB, at least one) into a new file in ``directory``, then delete it."""
    piece = bytes(_PIECE)
    fd, name = tempfile.mkstemp(dir=directory)
    try:
        for pos in range(0, max(nbytes, 1), _PIECE):
            os.pwrite(fd, piece, pos)
    finally:
        os.close(fd)
        os.unlink(name)
