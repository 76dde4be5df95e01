"""What an operator or a CI script sees of the broker process, as they would of Kafka's.

* ``process_*`` series in the scrape, no ``*_created`` series.
* ``--version``.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from .harness import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
MARKER = ".kafka_cleanshutdown"


def test_the_scrape_has_process_series_and_no_created_series(broker):
    samples = {name: value for (name, _labels), value in broker.scrape().items()}
    assert samples["process_open_fds"] > 0 and samples["process_max_fds"] > 0
    assert samples["process_resident_memory_bytes"] > 0 and samples["process_cpu_seconds_total"] > 0
    assert "process_start_time_seconds" in samples
    assert [name for name in samples if name.endswith("_created")] == []


@pytest.mark.parametrize("args", [["--version"], ["serve", "--version"], ["serve", "x.properties", "--version"]])
def test_version_prints_the_package_version(args):
    result = subprocess.run([sys.executable, "-m", "broker", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=30)  # fmt: skip
    assert (result.returncode, result.stdout) == (0, importlib.metadata.version("minibroker") + "\n")
