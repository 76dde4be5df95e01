"""DescribeTopicPartitions (KIP-966) from real clients: the Java Admin (kafka-clients 4.3.0) and kafka-python.

The Java Admin's ``describeTopics`` pages with cursors on its own;
kafka-python 3.0's ``describe_topic_partitions`` sends one request and hands
back the ``next_cursor``, which the test follows.

``tests/e2e/java/DescribeTopicsCheck.java`` creates topics and describes them
by name, as ``kafka-topics.sh --describe`` does. That the client really sent
DescribeTopicPartitions (and did not fall back to Metadata) and how many
pages it took is read from the broker's request metrics
(``kafka_network_requestmetrics_requests_total{request="DescribeTopicPartitions"}``).
The page counts below follow from Kafka's paging (each answer holds at most
the limit's partitions; a topic cut short is resumed from the cursor, a
limit used up exactly sends the next request without one) and the Java
client's handling of it; a broker that paged otherwise would be asked a
different number of times.
"""

from __future__ import annotations

import subprocess
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

from .acl_users import java_login, sasl_bootstrap
from .harness import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
NODE = 1  # config/server.properties
TOPIC_OPS = "[ALTER, ALTER_CONFIGS, CREATE, DELETE, DESCRIBE, DESCRIBE_CONFIGS, READ, WRITE]"
DTP = ("kafka_network_requestmetrics_requests_total", (("request", "DescribeTopicPartitions"), ("version", "0")))


def _classpath() -> str:
    from ..java_jars import compile_java

    return compile_java("DescribeTopicsCheck.java")


def _run(bootstrap: str, *args: str, login: str = "") -> dict[str, str]:
    cmd = ["java", f"-Dclient.props={login}", "-cp", _classpath(), "DescribeTopicsCheck", bootstrap, *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(line.split("\t", 1) for line in result.stdout.splitlines())


def _partitions(count: int) -> str:
    return " ".join(f"{i}:{NODE}/[{NODE}]/[{NODE}]/[]/[]" for i in range(count))


def _pages(broker) -> float:
    return broker.scrape().get(DTP, 0.0)


def _assert_pages(broker, expected: float) -> None:
    """The count reaches ``expected`` and stays there: a request is counted once its answer is out (as Kafka
    counts it), which the client may read a moment before."""
    wait_until(lambda: _pages(broker) >= expected, timeout=10)
    assert _pages(broker) == expected


def test_describe_topics_of_a_topic_with_three_partitions(broker):
    got = _run(broker.bootstrap, "create", "three:3", "describe", "0", "true", "three")
    assert got == {"three": f"internal=false id=set ops={TOPIC_OPS} {_partitions(3)}"}
    _assert_pages(broker, 1)


def test_the_client_pages_through_many_topics_with_cursors(broker):
    """Ten topics of 2 partitions, an unknown one and one of 3, at most 5 partitions an answer: 5 requests
    (5, 5, 5 and 5 partitions, then the unknown topic and the last 3)."""
    many = [f"many-{i:02d}" for i in range(10)]
    _run(broker.bootstrap, "create", *(f"{name}:2" for name in many), "three:3", "describe", "0", "false", "three")
    before = _pages(broker)
    got = _run(broker.bootstrap, "describe", "5", "false", *many, "missing", "three")
    assert got == {**{name: f"internal=false id=set ops=null {_partitions(2)}" for name in many},
                   "missing": "UnknownTopicOrPartitionException",
                   "three": f"internal=false id=set ops=null {_partitions(3)}"}  # fmt: skip
    _assert_pages(broker, before + 5)


def test_the_brokers_max_request_partition_size_limit_caps_each_answer(broker_factory):
    broker = broker_factory(max_request_partition_size_limit="2")
    got = _run(broker.bootstrap, "create", "three:3", "wide:5", "describe", "0", "false", "three", "wide")
    assert got == {"three": f"internal=false id=set ops=null {_partitions(3)}",
                   "wide": f"internal=false id=set ops=null {_partitions(5)}"}  # fmt: skip
    _assert_pages(broker, 4)  # three 0-1 | three 2, wide 0 | wide 1-2 | wide 3-4


def test_kafka_python_follows_the_cursor_page_by_page(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("a", 3, 1), NewTopic("b", 2, 1)])
        pages, cursor = [], None
        for _ in range(10):
            got = admin.describe_topic_partitions(["b", "a"], response_partition_limit=2, cursor=cursor)
            pages.append(([(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]])
                           for t in got["topics"]], got["next_cursor"]))  # fmt: skip
            cursor = got["next_cursor"]
            if cursor is None:
                break
        leaders = {(p["leader_id"], tuple(p["replica_nodes"]), tuple(p["isr_nodes"]))
                   for p in got["topics"][0]["partitions"]}  # fmt: skip
    finally:
        admin.close()
    assert pages == [
        ([("a", 0, [0, 1])], {"topic_name": "a", "partition_index": 2}),
        ([("a", 0, [2]), ("b", 0, [0])], {"topic_name": "b", "partition_index": 1}),
        ([("b", 0, [1])], None),
    ]
    assert leaders == {(NODE, (NODE,), (NODE,))}
    _assert_pages(broker, 3)


def test_describe_topics_under_acls(acl_broker):
    """Alice may describe one topic: the other, and a missing one, are TopicAuthorizationException. The
    authorizer's metrics are on the metrics endpoint: one ACL, decisions allowed and denied."""
    from ..java_jars import compile_java

    bootstrap = sasl_bootstrap(acl_broker)
    _run(bootstrap, "create", "open:2", "closed:1", "describe", "0", "false", "open", login=java_login("admin"))
    acl = subprocess.run(["java", f"-Dclient.props={java_login('admin')}", "-cp", compile_java("AclCheck.java"),
                          "AclCheck", bootstrap, "allow User:alice DESCRIBE TOPIC open"],
                         capture_output=True, text=True, timeout=240)  # fmt: skip
    assert acl.stdout.splitlines() == ["added"], acl.stderr[-3000:]
    got = _run(bootstrap, "describe", "0", "true", "open", "closed", "missing", login=java_login("alice"))
    assert got == {"open": f"internal=false id=set ops=[DESCRIBE] {_partitions(2)}",
                   "closed": "TopicAuthorizationException", "missing": "TopicAuthorizationException"}  # fmt: skip
    tags = (("class", "StandardAuthorizer"), ("config", "authorizer.class.name"), ("role", "broker"))
    samples = acl_broker.scrape()  # the authorizer's metrics, as Kafka 4.1+'s StandardAuthorizer has them
    assert samples[("kafka_server_plugins_acls_total_count", tags)] == 1
    assert all(samples[(f"kafka_server_plugins_authorization_{kind}_rate_per_minute", tags)] > 0
               for kind in ("request", "allowed", "denied"))  # fmt: skip
