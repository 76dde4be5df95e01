"""``log.dirs`` checked as ``minibroker serve`` starts, before anything is read or written in them.

As Kafka: an empty ``log.dirs`` is a configuration error ("At least one log directory must be defined via
log.dirs or log.dir.", KafkaConfig), and so is a dir given twice, however spelt ("Duplicate log directory
found", LogManager.createAndValidateLogDirs, on canonical paths); a dir that is a file is reported as one
that cannot be created or validated ("Failed to create or validate data directory"), and with no other dir
the broker stops with status 1; a dir another broker holds stops it with status 1 and Kafka's words
(LogManager.lockLogDirs), its ``--add-scram`` users not written. The old start failed on an IndexError
traceback for the first, served for the second (the dir counted twice: duplicate LogDirectoryOffline
samples), blamed the SCRAM credentials file for the third, and for the last wrote the credentials into
the other broker's dir and served it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.scram_store import CREDENTIALS_FILE
from broker.server import serve_broker
from storage import LogManager

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def _serve(*arguments: str) -> subprocess.CompletedProcess:
    """``minibroker serve`` with ``arguments``; it must end by itself (a broker that serves is killed)."""
    return subprocess.run([sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
                           "--override", "prometheus.port=0", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                           *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip


def test_an_empty_log_dirs_is_a_configuration_error():
    result = _serve("--override", "log.dirs=")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert ("minibroker: configuration error: At least one log directory must be defined via log.dirs or "
            "log.dir.") in result.stderr  # fmt: skip
    with pytest.raises(ConfigError, match="At least one log directory"):
        BrokerConfig.load(None, {"log.dirs": " , "})


def test_a_dir_given_twice_is_refused(tmp_path):
    a = tmp_path / "a"
    result = _serve("--override", f"log.dirs={a},{a}/")
    assert result.returncode == 1, result.stderr
    assert "minibroker: configuration error: Duplicate log directory found: " in result.stderr


async def test_a_dir_given_twice_opens_no_endpoint_and_no_log(tmp_path):
    a, link = tmp_path / "a", tmp_path / "link"
    a.mkdir()
    link.symlink_to(a)
    config = BrokerConfig.from_props({"log.dirs": f"{a},{link}", "prometheus.port": "0",
                                      "listeners": "PLAINTEXT://127.0.0.1:0"})  # fmt: skip
    with pytest.raises(ConfigError, match="Duplicate log directory found"):
        await serve_broker(config)
    assert list(a.iterdir()) == []


def test_a_dir_that_is_a_file_is_reported_as_such_not_as_a_credentials_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("not a dir")
    result = _serve("--override", f"log.dirs={path}")
    assert result.returncode == 1, result.stderr
    assert f"Failed to create or validate data directory {path}" in result.stderr
    assert "none of the log dirs" in result.stderr and "SCRAM" not in result.stderr
    assert path.read_text() == "not a dir"


def test_a_dir_another_broker_holds_stops_the_start_before_add_scram_writes(tmp_path):
    data = tmp_path / "data"
    holder = LogManager.open([data], {}, lambda: 1_700_000_000_000)  # the other broker, running
    try:
        result = _serve("--override", f"log.dirs={data}", "--add-scram", "SCRAM-SHA-256=[name=a,password=b]")
        assert result.returncode == 1, result.stderr
        assert (f"minibroker: Failed to acquire lock on file .lock in {data}. A Kafka instance in another process "
                "or thread is using this directory.") in result.stderr  # fmt: skip
        assert "Traceback" not in result.stderr and not (data / CREDENTIALS_FILE).exists()
    finally:
        holder.close()
