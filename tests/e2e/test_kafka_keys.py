"""A Kafka 3.x ``server.properties`` or compose environment starts the broker: keys Kafka defines that mean
nothing on one node are accepted with a warning, ``broker.rack`` is reported, and a typo still stops the start
(under ``--kafka-env`` a variable Kafka does not know is warned about and ignored, as Kafka ignores it).

Each test runs the real broker process; kafka-python produces and consumes through it, confluent-kafka
fetches with a ``client.rack`` (Fetch v11+ ``rack_id``: the leader stays the replica read from).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaProducer

from ..broker._admin_client import req
from .clients import ck_consume, kp_consume
from .harness import ROOT, BrokerProcess, free_port, raw_call
from .test_kafka_env import _environment, _lines_until_serving, _serve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

# What a server.properties of the Kafka 3.x days holds beyond the keys this broker uses.
KAFKA_3_PROPERTIES = """\
broker.id=1
broker.rack=rack-a
num.network.threads=3
num.io.threads=8
num.replica.fetchers=2
background.threads=10
queued.max.requests=500
auto.leader.rebalance.enable=true
leader.imbalance.check.interval.seconds=300
replica.lag.time.max.ms=30000
replica.fetch.max.bytes=1048576
replica.socket.timeout.ms=30000
request.timeout.ms=30000
metric.reporters=
kafka.metrics.reporters=
metadata.log.dir=/tmp/kraft-metadata
controller.quorum.election.timeout.ms=1000
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password="s3cret";
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
num.partitions=1
log.retention.hours=168
"""
IGNORED = ("num.replica.fetchers", "background.threads", "queued.max.requests", "auto.leader.rebalance.enable",
           "leader.imbalance.check.interval.seconds", "replica.lag.time.max.ms", "replica.fetch.max.bytes",
           "replica.socket.timeout.ms", "request.timeout.ms", "metric.reporters", "kafka.metrics.reporters",
           "metadata.log.dir", "controller.quorum.election.timeout.ms", "sasl.jaas.config", "zookeeper.connect",
           "zookeeper.connection.timeout.ms")  # fmt: skip


def _warned(output: str, name: str) -> int:
    return sum(1 for line in output.splitlines() if " WARNING " in line and f": {name} is a Kafka broker config "
               "with no effect in minibroker" in line)  # fmt: skip


def test_a_kafka_3_server_properties_serves_kafka_python_with_a_warning_per_ignored_key(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(KAFKA_3_PROPERTIES)
    broker = BrokerProcess(tmp_path / "data", config=path).start()
    try:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        sent = [producer.send("old-config", value=f"v{i}".encode(), partition=0).get(30).offset for i in range(5)]
        producer.close(5)
        assert sent == [0, 1, 2, 3, 4]
        assert [m.value for m in kp_consume(broker.bootstrap, "old-config", 5)] == [f"v{i}".encode() for i in range(5)]
        racked = ck_consume(broker.bootstrap, "old-config", 5, **{"client.rack": "rack-b"})
        assert [m.value() for m in racked] == [f"v{i}".encode() for i in range(5)]
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        assert [(b["broker_id"], b["rack"]) for b in admin.describe_cluster()["brokers"]] == [(1, "rack-a")]
        admin.close()
        metadata = raw_call(broker.port, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
        assert [(b.node_id, b.rack) for b in metadata.brokers] == [(1, "rack-a")]
    finally:
        broker.stop()
    output = broker.log_text()
    assert {name: _warned(output, name) for name in IGNORED} == {name: 1 for name in IGNORED}
    assert _warned(output, "broker.rack") == 0 and "s3cret" not in output


@pytest.mark.parametrize(("line", "named"), [
    ("num.replica.fetcher=2", "num.replica.fetcher: unknown configuration key"),
    ("zookeeper.connect.timeout.ms=18000", "zookeeper.connect.timeout.ms: unknown configuration key"),
    ("num.replica.fetchers=two", "Invalid value two for configuration num.replica.fetchers: Not a number of type INT"),
])  # fmt: skip
def test_a_typo_still_stops_the_start_naming_the_key(tmp_path, line, named):
    path = tmp_path / "server.properties"
    path.write_text(KAFKA_3_PROPERTIES + line + "\n")
    result = subprocess.run([sys.executable, "-m", "broker", "serve", str(path), "--override", f"log.dirs={tmp_path}",
                             "--override", "prometheus.port=0"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 1 and named in result.stderr


def test_kafka_env_with_broker_rack_and_num_replica_fetchers_starts(tmp_path):
    host_port, internal_port = free_port(), free_port()
    env = {**_environment(tmp_path, host_port, internal_port), "KAFKA_BROKER_RACK": "rack-z",
           "KAFKA_NUM_REPLICA_FETCHERS": "4", "KAFKA_ZOOKEEPER_CONNECT": "zk:2181"}  # fmt: skip
    proc = _serve(env)
    lines = []
    try:
        lines = _lines_until_serving(proc)
        metadata = raw_call(host_port, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
        assert [(b.node_id, b.rack) for b in metadata.brokers] == [(1, "rack-z")]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    output = "".join(lines)
    assert _warned(output, "num.replica.fetchers") == 1 and _warned(output, "zookeeper.connect") == 1


def test_kafka_env_typo_is_warned_about_and_ignored_as_kafka_ignores_it(tmp_path):
    """The apache/kafka image writes every KAFKA_* variable into the file and Kafka ignores a key it does not
    know; in the file itself a typo stops the start (above)."""
    env = {**_environment(tmp_path, free_port(), free_port()), "KAFKA_NUM_REPLICA_FETCHER": "4"}
    proc = _serve(env)
    try:
        output = "".join(_lines_until_serving(proc))
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert ("KAFKA_NUM_REPLICA_FETCHER sets num.replica.fetcher, which is not a Kafka broker config: ignored"
            in output)  # fmt: skip
