"""The peer broker for side-by-side benchmarks: noida-db, started and stopped cleanly.

``start_noida`` runs ``noida-db start --only kafka`` on a free port in its own
session (the ``noida-db`` console script is a Python wrapper that runs the
real binary as a child, so only killing the whole process group stops the
server) and waits until it accepts connections; ``stop_group`` kills it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.e2e.harness import free_port


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




def _wait_accepting(bootstrap: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _accepts(bootstrap):
            return True
        time.sleep(0.2)
    return False
