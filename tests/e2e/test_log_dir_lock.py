"""Two broker processes on one data dir: the second is refused, as Kafka's ``LogManager.lockLogDirs`` refuses it.

Broker A serves a data dir and acknowledges a record (confluent-kafka, acks=all). Broker B, started on the
same ``log.dirs`` with its own ports, exits with status 1 and Kafka's words ("Failed to acquire lock on file
.lock in <dir>. A Kafka instance in another process or thread is using this directory.") before it loads a
log: A keeps serving, a second record gets offset 1 and both read back, and no clean-shutdown marker
appears while A runs. The old broker B started without a word, recovered A's logs and served them, so
the records of A and B got the same offsets and one was lost, and B's stop wrote the marker under A.

The lock is an OS lock that dies with its process: after A is SIGKILLed, a broker starts on the dir at
once (recovering the logs, the marker being absent) and every acknowledged record is there.

A JVM locking ``.lock`` as Kafka's ``FileLock`` does (``FileChannel.tryLock``, a POSIX record lock on Linux,
which ``flock`` does not see) and this broker exclude each other too, either way round: the broker held
only a ``flock`` before, so a Java Kafka broker and this one could both run on one dir.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer

from storage.log_opening import CLEAN_SHUTDOWN

from tests.java_jars import compile_java

from .clients import ck_consume
from .harness import BrokerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

IN_USE = ("Failed to acquire lock on file .lock in {dir}. A Kafka instance in another process or thread is "
          "using this directory.")  # fmt: skip


def _produce(bootstrap: str, value: bytes) -> int:
    """One record to partition 0 of ``t`` with acks=all; its offset."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    delivered: list = []
    producer.produce("t", value=value, partition=0, on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(30) == 0
    [(err, msg)] = delivered
    assert err is None, err
    return msg.offset()


def _values(bootstrap: str, count: int) -> list[tuple[int, bytes]]:
    return [(m.offset(), m.value()) for m in ck_consume(bootstrap, "t", count)]


def test_a_second_broker_on_a_served_dir_exits_and_the_first_keeps_serving(tmp_path):
    data = tmp_path / "data"
    first = BrokerProcess(data).start()
    second = BrokerProcess(data)
    try:
        assert _produce(first.bootstrap, b"from-a") == 0
        with pytest.raises(RuntimeError, match="broker did not start"):
            second.start()
        assert second.proc.returncode == 1
        text = second.log_text()
        assert IN_USE.format(dir=data) in text, text
        assert "Loaded" not in text and "serving on" not in text  # refused before a log was opened
        assert not (data / CLEAN_SHUTDOWN).exists()  # the old B's stop wrote it while A ran
        assert _produce(first.bootstrap, b"again-a") == 1
        assert _values(first.bootstrap, 2) == [(0, b"from-a"), (1, b"again-a")]
        assert first.stop() == 0
        assert (data / CLEAN_SHUTDOWN).exists()
    finally:
        first.kill()
        second.kill()


def test_a_killed_brokers_dir_starts_again_at_once(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        assert _produce(broker.bootstrap, b"before-kill") == 0
        broker.kill()  # SIGKILL: the lock goes with the process
        broker.restart()
        assert "recovering logs from their recovery points" in broker.log_text()
        assert _produce(broker.bootstrap, b"after-kill") == 1
        assert _values(broker.bootstrap, 2) == [(0, b"before-kill"), (1, b"after-kill")]
    finally:
        broker.kill()


def _java_lock(path: Path) -> subprocess.Popen:
    """A JVM that locks ``path`` as Kafka's FileLock does; its first line says "held" or "busy"."""
    return subprocess.Popen(["java", "-cp", compile_java("DirLockCheck.java"), "DirLockCheck", str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip


def test_a_broker_and_a_java_lock_on_one_dir_exclude_each_other(tmp_path):
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        with _java_lock(data / ".lock") as java:
            assert java.communicate(timeout=60)[0] == "busy\n"  # the old broker's flock left it free
        assert broker.stop() == 0
        with _java_lock(data / ".lock") as java:
            try:
                assert java.stdout.readline() == "held\n"
                with pytest.raises(RuntimeError, match="broker did not start"):
                    broker.restart()
                assert broker.proc.returncode == 1
                assert IN_USE.format(dir=data) in broker.log_text()
            finally:
                java.kill()
    finally:
        broker.kill()

