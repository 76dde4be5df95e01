"""A log dir that fails while the broker process loads its logs, seen by a real client (kafka-python).

The broker of two log dirs is killed (no clean stop), and in dir b the offset
index of a partition's segment is made a directory, so the recovery of that
log at the next start fails with an I/O error (EISDIR), as a bad disk would.
That start goes on as Kafka's LogManager.loadLogs does: dir b goes offline
(its LogDirectoryOffline gauge 1), while kafka-python produces to and reads
from the partition in dir a. A graceful stop leaves the clean-shutdown
marker in a only; with the index put back, the next start recovers b's log
and its record. The old start failed with the error. With one log dir the
same fault leaves none: the process says so and exits with status 1, as Kafka
halts (the old one ended on the error's traceback).
"""

from __future__ import annotations

import shutil
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

from .harness import BrokerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _produce(bootstrap: str, records: dict[int, bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=0)
    try:
        for partition, value in records.items():
            producer.send("t", value=value, partition=partition).get(timeout=15)
    finally:
        producer.close()


def _read(bootstrap: str, partition: int, count: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=15000)
    try:
        consumer.assign([TopicPartition("t", partition)])
        consumer.seek_to_beginning()
        got = []
        for message in consumer:
            got.append(message.value)
            if len(got) >= count:
                break
        return got
    finally:
        consumer.close()


def test_a_dir_failing_as_the_logs_load_leaves_the_other_serving_a_real_client(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    broker = BrokerProcess(a, {"log.dirs": f"{a},{b}"}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("t", num_partitions=2, replication_factor=1)])
        admin.close()
        _produce(broker.bootstrap, {0: b"first-0", 1: b"first-1"})
    finally:
        broker.kill()  # no clean-shutdown marker: the next start recovers every log
    assert (a / "t-0").is_dir() and (b / "t-1").is_dir()  # the partitions spread over the two dirs
    index = b / "t-1" / "00000000000000000000.index"
    saved = tmp_path / "saved.index"
    shutil.move(index, saved)
    index.mkdir()  # opening it fails with EISDIR as the log is recovered
    broker.restart()
    try:
        _produce(broker.bootstrap, {0: b"second-0"})
        assert _read(broker.bootstrap, 0, 2) == [b"first-0", b"second-0"]
        offline = {labels: v for (name, labels), v in broker.scrape().items()
                   if name == "kafka_log_logmanager_logdirectoryoffline"}  # fmt: skip
        assert offline == {(("logDirectory", str(a)),): 0.0, (("logDirectory", str(b)),): 1.0}
        assert broker.stop() == 0
    finally:
        broker.kill()
    assert "Error in log dir " + str(b) in broker.log_text()
    assert (a / ".kafka_cleanshutdown").exists() and not (b / ".kafka_cleanshutdown").exists()
    index.rmdir()
    shutil.move(saved, index)
    broker.restart()
    try:
        _produce(broker.bootstrap, {1: b"second-1"})
        assert _read(broker.bootstrap, 1, 2) == [b"first-1", b"second-1"]
        assert _read(broker.bootstrap, 0, 2) == [b"first-0", b"second-0"]
    finally:
        broker.kill()


def test_the_only_dir_failing_as_the_logs_load_stops_the_broker_with_status_1(tmp_path):
    """One log dir, the same fault: no dir is left, so the start stops with status 1 and says why, as Kafka
    halts once all its log dirs have failed (the old start ended on the error's traceback)."""
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("t", num_partitions=1, replication_factor=1)])
        admin.close()
        _produce(broker.bootstrap, {0: b"first-0"})
    finally:
        broker.kill()
    index = data / "t-0" / "00000000000000000000.index"
    index.unlink()
    index.mkdir()
    with pytest.raises(RuntimeError, match="broker did not start"):
        broker.restart()
    assert broker.proc is not None and broker.proc.wait(10) == 1
    assert f"Stopping the broker because all log dirs in {data} have failed" in broker.log_text()
    assert "Traceback" not in broker.log_text()
