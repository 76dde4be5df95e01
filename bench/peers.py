"""The peer broker for side-by-side benchmarks: noida-db, started and stopped cleanly.

``start_noida`` runs ``noida-db start --only kafka`` on a free port in its own
session (the ``noida-db`` console script is a Python wrapper that runs the
real binary as a child, so only killing the whole process group stops the
server) and waits until it accepts connections; ``stop_group`` kills it.

``cpu_seconds`` reads the CPU time a set of processes used so far, and
``settle`` waits until they stop using CPU. noida-db answers a produce before
it does much of the work (its CPU keeps running for seconds after the last
acknowledgement), so a benchmark that runs brokers one after the other must
let each go quiet first, or one broker's deferred work lands on the other's
measurement.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.e2e.harness import free_port

_LIBC = ctypes.CDLL(None)


def start_noida(binary: str, data: Path, timeout: float) -> tuple[subprocess.Popen, str]:
    """Start noida-db in its own session: the ``noida-db`` console script is a Python wrapper that
    runs the real binary as a child, so only killing the whole process group stops the server."""
    port = free_port()
    proc = subprocess.Popen([binary, "start", "--only", "kafka", "--kafka-port", str(port), "--host", "127.0.0.1",
                             "--data-dir", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    bootstrap = f"127.0.0.1:{port}"
    if not _wait_accepting(bootstrap, timeout):
        stop_group(proc)
        raise RuntimeError("noida-db did not start")
    return proc, bootstrap


def _accepts(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), 1).close()
        return True
    except OSError:
        return False


def stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or [] if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group (noida-db's wrapper and server)."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _stat(int(e))[2:3] == [str(pgid)]]


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time used so far by ``pids`` (all their threads)."""
    ticks = sum(int(f[11]) + int(f[12]) for f in map(_stat, pids) if f)
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_seconds_exact(pids: list[int]) -> float:
    """CPU time of ``pids`` (every thread, those that have ended too) to the nanosecond, from each process's
    CPU-time clock (``clock_getcpuclockid``), for windows too short for ``cpu_seconds``' clock ticks."""
    total = 0.0
    for pid in pids:
        clock = ctypes.c_int()
        if _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:  # else the process is gone
            try:
                total += time.clock_gettime(clock.value)
            except OSError:
                continue
    return total


@contextlib.contextmanager
def paused(pids: list[int]) -> Iterator[None]:
    """``pids`` stopped (SIGSTOP) for the block and continued (SIGCONT) after it, so work a broker has put
    off (timers, deferred writes) does not run on another broker's clock."""
    _signal(pids, signal.SIGSTOP)
    try:
        yield
    finally:
        _signal(pids, signal.SIGCONT)


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def settle(pids: list[int], window: float = 0.5, quiet: float = 0.03, timeout: float = 60.0) -> None:
    """Wait until ``pids`` use less than ``quiet`` CPU seconds in a ``window`` (at most ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pids)
        time.sleep(window)
        if cpu_seconds(pids) - before < quiet:
            return


def _wait_accepting(bootstrap: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _accepts(bootstrap):
            return True
        time.sleep(0.2)
    return False
