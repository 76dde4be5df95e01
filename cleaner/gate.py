"""Giving way to requests: the cleaner pauses while the broker's thread is answering clients.

CPython runs one thread's Python at a time. A CPU-bound cleaner thread takes
the GIL every time the broker's thread blocks in a system call (a socket
read, a log append, a send) and keeps it for a whole switch interval, so a
produce request that makes a dozen system calls waits a dozen intervals while
a log is being cleaned, and its latency grows several times.

``RequestGate`` lets the two threads take turns instead. The broker's event
loop calls ``mark_busy()`` when it wakes up with work and ``mark_idle()`` when
it goes back to waiting for sockets (``broker.cleaning`` does it from a trio
instrument). The cleaner calls ``pause()`` between small steps (a batch, a
slice of a batch's records): when the broker is busy it blocks, without the
GIL, until the loop is idle again. So a request competes with the cleaner
for at most one step.

A broker that is never idle must not stop compaction (KIP-354's deadline
depends on rounds finishing): a pause lasts ``max_wait_s`` at most, and a
pause that ran out lets the cleaner work ``quantum_s`` without pausing again,
which leaves it about half of the time under a saturating load. The clock is
injected for tests; ``paused_s`` totals the time given away.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

MAX_WAIT_S = 0.010
QUANTUM_S = 0.010


class RequestGate:
    def __init__(self, *, max_wait_s: float = MAX_WAIT_S, quantum_s: float = QUANTUM_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.max_wait_s = max_wait_s
        self.quantum_s = quantum_s
        self._clock = clock
        self._busy = False
        self._idle = threading.Event()
        self._free_until = 0.0
        self.paused_s = 0.0

    # -- the broker's thread -------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._busy

    def mark_busy(self) -> None:
        self._busy = True

    def mark_idle(self) -> None:
        self._busy = False
        if not self._idle.is_set():  # a cleaner cleared it and may be waiting
            self._idle.set()

    # -- cleaner threads ---------------------------------------------------------------

    def pause(self) -> None:
        """Block while the broker is busy (see the module docstring); return at once otherwise."""
        if not self._busy:
            return
        started = self._clock()
        if started < self._free_until:
            return
        self._idle.clear()
        if self._busy and not self._idle.wait(self.max_wait_s):
            self._free_until = self._clock() + self.quantum_s
        self.paused_s += self._clock() - started
