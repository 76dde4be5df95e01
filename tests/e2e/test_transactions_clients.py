"""Transactions (KIP-98) with kcat, kafka-python 3.0.12 and the Java client (kafka-clients 4.3.0).

* kcat (librdkafka 2.0.2) reads what confluent-kafka committed and aborted, with
  ``-X isolation.level=read_committed`` and ``read_uncommitted``;
* kafka-python's ``KafkaProducer(transactional_id=...)``: commit, abort, commit
  with ``send_offsets_to_transaction`` of a "simple" group; its consumer reads
  with both isolation levels (Fetch's aborted-transaction list, control batches
  skipped, the position moved past the last marker);
* ``tests/e2e/java/TxnCheck.java``: commit, abort, sendOffsetsToTransaction,
  fencing by a second producer, listOffsets of both isolation levels with a
  transaction open, then read_committed and read_uncommitted consumers;
  with kafka-clients 4.3.0 and with 3.9.1 (Flink 2.0's). Both send (the
  broker's request metrics by version) InitProducerId v5, AddPartitionsToTxn
  v3 (v4 and up are the brokers' batched form), AddOffsetsToTxn v4,
  TxnOffsetCommit v4, EndTxn v4, Produce v11, DescribeTransactions v0 and
  DescribeProducers v0; 3.9.1 ListTransactions v1, Fetch v17, ListOffsets v9
  and Metadata v12 where 4.3.0 sends v2, v18, v11 and v13.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings

import pytest

from ..java_jars import CLIENT_VERSIONS, compile_java
from .test_transactions import BASE_TS, create, placed, rows, send, txn_producer, wait_stable

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/setup --with-e2e-tools")
def test_kcat_reads_by_isolation_level(broker):
    """Committed 0-1, C 2; aborted 3-4, A 5; committed 6, C 7."""
    bootstrap, topic = broker.bootstrap, "txn-kcat"
    create(bootstrap, topic)
    producer = txn_producer(bootstrap, "kcat-txn")
    for tag, n, commit in (("a", 2, True), ("b", 2, False), ("c", 1, True)):
        producer.begin_transaction()
        send(producer, topic, rows(tag, n))
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    wait_stable(bootstrap, topic, {0: 8})

    def kcat(isolation: str) -> list[list[str]]:
        cmd = ["kcat", "-b", bootstrap, "-t", topic, "-C", "-e", "-o", "beginning", "-X",
               f"isolation.level={isolation}", "-f", "%o|%k|%s|%h|%T\\n"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line.split("|") for line in done.stdout.splitlines()]

    def expected(tag: str, offsets: list[int]) -> list[list[str]]:
        return [[str(o), f"k-{tag}-{i}", f"v-{tag}-{i}", f"tag={tag},i={i}", str(BASE_TS + i)]
                for i, o in enumerate(offsets)]  # fmt: skip

    assert kcat("read_committed") == expected("a", [0, 1]) + expected("c", [6])
    assert kcat("read_uncommitted") == expected("a", [0, 1]) + expected("b", [3, 4]) + expected("c", [6])


def _kp_read(bootstrap: str, topic: str, isolation: str) -> tuple[list[tuple], int, int]:
    """kafka-python ``assign`` from the beginning until the position reaches ``end_offsets`` (the LSO
    for read_committed): the records ``(partition, offset, key, value, headers, ts)``, position, end."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             fetch_max_wait_ms=100)  # fmt: skip
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning()
        end = consumer.end_offsets([tp])[tp]
        got: list[tuple] = []
        for _ in range(100):
            if consumer.position(tp) >= end:
                break
            for records in consumer.poll(timeout_ms=200).values():
                got += [(r.partition, r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in records]
        return got, consumer.position(tp), end
    finally:
        consumer.close()


def test_kafka_python_transactional_producer(broker):
    """kafka-python 3.0.12 supports transactions (``transactional_id``). Committed 0-2, C 3; aborted
    4-5, A 6; committed 7 with the group offset, C 8."""
    bootstrap, topic = broker.bootstrap, "txn-kp"
    create(bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-txn", linger_ms=5)
    producer.init_transactions()

    def send_kp(records: list[tuple]) -> list[int]:
        futures = [producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0)
                   for k, v, h, ts in records]  # fmt: skip
        producer.flush(30)
        return [f.get(timeout=30).offset for f in futures]

    producer.begin_transaction()
    assert send_kp(rows("a", 3)) == [0, 1, 2]
    producer.commit_transaction()
    producer.begin_transaction()
    assert send_kp(rows("b", 2)) == [4, 5]
    producer.abort_transaction()
    producer.begin_transaction()
    assert send_kp(rows("c", 1)) == [7]
    producer.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(8, "kp-meta", -1)}, "kp-group")
    producer.commit_transaction()
    producer.close(5)
    wait_stable(bootstrap, topic, {0: 9})

    rc, rc_position, rc_end = _kp_read(bootstrap, topic, "read_committed")
    assert rc == placed(0, [0, 1, 2, 7], rows("a", 3) + rows("c", 1))
    assert (rc_position, rc_end) == (9, 9)
    ru, ru_position, ru_end = _kp_read(bootstrap, topic, "read_uncommitted")
    assert ru == placed(0, [0, 1, 2, 4, 5, 7], rows("a", 3) + rows("b", 2) + rows("c", 1))
    assert (ru_position, ru_end) == (9, 9)
    group = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kp-group", enable_auto_commit=False)
    assert group.committed(TopicPartition(topic, 0), metadata=True)[:2] == (8, "kp-meta")
    group.close()


@pytest.fixture(scope="session", params=CLIENT_VERSIONS)
def txn_check_classpath(request) -> str:
    return compile_java("TxnCheck.java", client=request.param)


@pytest.mark.timeout(240)
def test_java_transactions(broker, txn_check_classpath):
    """TxnCheck's log: committed 0-2, C 3; aborted 4-5, A 6; committed 7-8 with the group's offset, C 9;
    the fenced producer's 10, A 11 (by the second's initTransactions); the second's 12, C 13; open 14
    (LSO 14, high watermark 15; meanwhile the Admin client's listTransactions, describeTransactions and
    describeProducers, what kafka-transactions.sh prints, see it Ongoing from offset 14), A 15."""
    topic = "txn-java"
    result = subprocess.run(["java", "-cp", txn_check_classpath, "TxnCheck", broker.bootstrap, topic],
                            capture_output=True, text=True, timeout=200)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split("\t") for line in result.stdout.splitlines()]

    def record(prefix: str, offset: int, tag: str, i: int) -> list[str]:
        ts = str(1_790_000_000_000 + i)
        return [prefix, str(offset), f"key-{tag}-{i}", f"value-{tag}-{i}", f"tag={tag};i={i}", ts]

    assert [x for x in lines if x[0].startswith("#")] == [
        ["#fenced", "ProducerFencedException"],
        ["#open", "14", "15"],
        ["#list", "Ongoing"],
        ["#describe", "Ongoing", "1", "30000", f"[{topic}-0]"],
        ["#producer", "OptionalLong[14]"],
        ["#group", f"{topic}-0", "42", "txn-meta"],
        ["#latest", "16", "16"],
        ["#position", "rc", "16", "16"],
        ["#position", "ru", "16", "16"],
    ]
    committed = [(0, "committed", 0), (1, "committed", 1), (2, "committed", 2), (7, "committed", 3),
                 (8, "committed", 4), (12, "second", 0)]  # fmt: skip
    aborted = [(4, "aborted", 0), (5, "aborted", 1), (10, "fenced", 0), (14, "open", 0)]
    assert [x for x in lines if x[0] == "rc"] == [record("rc", *r) for r in committed]
    assert [x for x in lines if x[0] == "ru"] == [record("ru", *r) for r in sorted(committed + aborted)]
