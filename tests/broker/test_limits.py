"""broker.limits: the soft open-files limit is raised to the hard one at startup, as the JVM does."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
SOFT, HARD = resource.getrlimit(resource.RLIMIT_NOFILE)
RAISED = int(Path("/proc/sys/fs/nr_open").read_text()) if HARD == resource.RLIM_INFINITY else HARD


def _low() -> int:
    """A soft limit below the hard one, with room for what this process has open now and a broker start."""
    return min(RAISED - 1, len(list(Path("/proc/self/fd").iterdir())) + 200)


def _lowered(soft: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    return preexec


def test_the_soft_limit_is_raised_to_the_hard_one():
    low = _low()
    program = """
import resource
from broker.limits import raise_open_files_limit
print(raise_open_files_limit(), resource.getrlimit(resource.RLIMIT_NOFILE))
"""
    out = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         preexec_fn=_lowered(low), check=True).stdout  # fmt: skip
    assert out.split()[:3] == [f"({low},", f"{RAISED})", f"({RAISED},"]


def test_the_broker_starts_with_it_raised(tmp_path):
    resource.setrlimit(resource.RLIMIT_NOFILE, (_low(), HARD))  # the broker process inherits it
    try:
        broker = BrokerProcess(tmp_path, {"prometheus.port": "0"}).start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT, HARD))
    try:
        limits = Path(f"/proc/{broker.proc.pid}/limits").read_text()
        line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        assert line.split()[3] == str(RAISED)
    finally:
        broker.kill()
