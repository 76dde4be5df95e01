"""Durability across restarts and crashes, and the Prometheus endpoint.

* produce, SIGTERM (clean shutdown: marker written), restart, consume all;
* produce with acks=all, SIGKILL (no shutdown at all), restart: every
  acknowledged record is there, with the same offsets;
* SIGKILL right after a CreateTopics answer: the topic is there after the
  restart with its id, partitions and configs (the change was fsynced before
  the answer, as Kafka commits its metadata record first);
* the metrics endpoint is scraped over HTTP and parsed with prometheus-client's
  own parser; names follow the JMX exporter's form of Kafka's MBeans.
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from ..broker._admin_client import creatable, req, sub
from .clients import ck_consume
from .harness import raw_call, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def _produce(bootstrap: str, topic: str, n: int, start: int = 0) -> list[int]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "batch.size": 16384})
    offsets: list[int] = []
    errors: list = []

    def delivered(err, msg) -> None:
        (errors.append(err) if err is not None else offsets.append(msg.offset()))

    for i in range(start, start + n):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    return offsets


def _consume_all(bootstrap: str, topic: str, expected: int) -> list[tuple[int, bytes, bytes]]:
    return [(m.offset(), m.key(), m.value()) for m in ck_consume(bootstrap, topic, expected)]


def _expected(n: int) -> list[tuple[int, bytes, bytes]]:
    return [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(n)]


def test_clean_restart_keeps_everything(broker):
    _produce(broker.bootstrap, "restart", 500)
    assert broker.stop() == 0
    assert (broker.data_dir / ".kafka_cleanshutdown").exists()
    assert "shut down completed" in broker.log_text()
    broker.restart()
    _produce(broker.bootstrap, "restart", 100, start=500)
    assert _consume_all(broker.bootstrap, "restart", 600) == _expected(600)
    text = broker.log_text()  # LogManager.loadLogs' words, in ours: no recovery after a clean stop
    assert re.search(r"clean-shutdown marker found, skipping recovery of \d+ logs", text), text
    assert re.search(r"Loaded \d+ logs in \d+ ms", text) and "recovering logs" not in text


def test_sigkill_loses_no_acknowledged_record(broker_factory):
    broker = broker_factory(log_segment_bytes="40000")  # many segments, so recovery crosses several
    acknowledged = _produce(broker.bootstrap, "crash", 2000)
    assert sorted(acknowledged) == list(range(2000))
    broker.kill()
    assert not (broker.data_dir / ".kafka_cleanshutdown").exists()
    broker.restart()
    assert _consume_all(broker.bootstrap, "crash", 2000) == _expected(2000)
    assert _produce(broker.bootstrap, "crash", 1, start=2000) == [2000]


def _scrape(url: str) -> dict[str, list]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_metrics_endpoint_uses_kafka_jmx_exporter_names(broker):
    _produce(broker.bootstrap, "metered", 25)
    _consume_all(broker.bootstrap, "metered", 25)
    # a request is counted once its answer is out, as Kafka counts it: the client may read it a moment before
    wait_until(lambda: any(s.labels["request"] == "Fetch"
                           for s in _scrape(broker.metrics_url)["kafka_network_requestmetrics_requests"]))  # fmt: skip
    families = _scrape(broker.metrics_url)
    messages_in = {s.labels["topic"]: s.value for s in families["kafka_server_brokertopicmetrics_messagesin"]
                   if s.name.endswith("_total")}  # fmt: skip
    assert messages_in["metered"] == 25
    requests = {(s.labels["request"], s.labels["version"]) for s in families["kafka_network_requestmetrics_requests"]}
    assert any(name == "Produce" for name, _ in requests) and any(name == "Fetch" for name, _ in requests)
    sizes = {(s.labels["topic"], s.labels["partition"]): s.value for s in families["kafka_log_log_size"]}
    assert sizes[("metered", "0")] > 0
    assert "kafka_network_requestmetrics_totaltimems" in families
    bytes_out = {s.labels["topic"]: s.value for s in families["kafka_server_brokertopicmetrics_bytesout"]
                 if s.name.endswith("_total")}  # fmt: skip
    assert bytes_out["metered"] > 0

    def per_topic(name: str) -> dict[str, float]:
        return {s.labels["topic"]: s.value for s in families[name] if s.name.endswith("_total")}

    assert per_topic("kafka_server_brokertopicmetrics_totalproducerequests")["metered"] >= 1
    assert per_topic("kafka_server_brokertopicmetrics_totalfetchrequests")["metered"] >= 1
    log_gauges = [{(s.labels["topic"], s.labels["partition"]): s.value for s in families[f"kafka_log_log_{name}"]}
                  for name in ("logstartoffset", "logendoffset", "numlogsegments")]  # fmt: skip
    assert [gauge[("metered", "0")] for gauge in log_gauges] == [0, 25, 1]
    node_wide = ("kafka_server_replicamanager_", "kafka_controller_")
    single = {name: families[name][0].value for name in families if name.startswith(node_wide)}
    _check_quorum_gauges(single, families)
    partitions = float(len(sizes))
    assert single == {
        "kafka_server_replicamanager_partitioncount": partitions,
        "kafka_server_replicamanager_leadercount": partitions,
        "kafka_server_replicamanager_underreplicatedpartitions": 0,
        "kafka_server_replicamanager_offlinereplicacount": 0,
        "kafka_server_replicamanager_atminisrpartitioncount": partitions,
        "kafka_server_replicamanager_underminisrpartitioncount": 0,
        "kafka_server_replicamanager_reassigningpartitions": 0,
        "kafka_server_replicamanager_produceridcount": 0,  # no idempotent producer here
        "kafka_server_replicamanager_partitionswithlatetransactionscount": 0,
        "kafka_server_replicamanager_isrexpands": 0,
        "kafka_server_replicamanager_isrshrinks": 0,
        "kafka_server_replicamanager_failedisrupdates": 0,
        "kafka_controller_controllerstats_uncleanleaderelections": 0,
        "kafka_controller_kafkacontroller_activecontrollercount": 1,
        "kafka_controller_kafkacontroller_offlinepartitionscount": 0,
        "kafka_controller_kafkacontroller_globaltopiccount": float(len({t for t, _ in sizes})),
        "kafka_controller_kafkacontroller_globalpartitioncount": partitions,
    }  # fmt: skip
    partition = {name[len("kafka_cluster_partition_"):]: value for name, family in families.items()
                 if name.startswith("kafka_cluster_partition_")
                 for value in [next(s.value for s in family if s.labels["topic"] == "metered")]}  # fmt: skip
    assert partition == {"underreplicated": 0, "insyncreplicascount": 1, "replicascount": 1, "underminisr": 0,
                         "atminisr": 1, "laststableoffsetlag": 0}  # fmt: skip
    dirs = {s.labels["logDirectory"]: s.value for s in families["kafka_log_logmanager_logdirectoryoffline"]}
    assert dirs == {str(broker.data_dir.absolute()): 0}


def _check_quorum_gauges(single: dict, families: dict) -> None:
    """The KRaft gauges (broker/quorum_metrics.py), taken out of ``single``: the last record applied and
    committed is the one before the raft high watermark, and the one node is the leader of its quorum."""
    quorum = {name: single.pop(f"kafka_controller_kafkacontroller_{name}") for name in (
        "activebrokercount", "fencedbrokercount", "migratingzkbrokercount", "preferredreplicaimbalancecount",
        "metadataerrorcount", "timedoutbrokerheartbeatcount", "lastappliedrecordoffset", "lastcommittedrecordoffset",
        "lastappliedrecordtimestamp", "lastappliedrecordlagms")}  # fmt: skip
    hw = families["kafka_server_raftmetrics_high_watermark"][0].value
    assert hw >= 2  # the leader-change record and the metered topic's creation at least
    assert quorum["lastappliedrecordoffset"] == quorum["lastcommittedrecordoffset"] == hw - 1
    assert (quorum["activebrokercount"], quorum["fencedbrokercount"], quorum["metadataerrorcount"]) == (1, 0, 0)
    assert quorum["lastappliedrecordlagms"] >= 0 and quorum["lastappliedrecordtimestamp"] > 1.6e12
    (state,) = families["kafka_server_raftmetrics_current_state"]
    assert (state.labels, state.value) == ({"current_state": "leader"}, 1)
    meta_offset = families["kafka_server_brokermetadatametrics_last_applied_record_offset"][0].value
    assert meta_offset == hw - 1


def test_durable_mode_acks_after_fsync_and_survives_kill(broker_factory):
    broker = broker_factory(log_flush_durable_enable="true")
    assert sorted(_produce(broker.bootstrap, "durable", 300)) == list(range(300))
    broker.kill()
    broker.restart()
    assert _consume_all(broker.bootstrap, "durable", 300) == _expected(300)


def test_flush_messages_one_keeps_every_acked_record_through_a_kill(broker_factory):
    """``flush.messages=1``: each Produce is answered once its flush (on a worker thread) is done; a SIGKILL
    then loses no acknowledged record (the restart recovers the log from its checkpointed recovery point)."""
    broker = broker_factory()
    body = req(19, topics=[creatable("flushed", 1, configs={"flush.messages": "1"})], timeout_ms=5000)
    assert raw_call(broker.port, 19, 7, body).topics[0].error_code == 0
    assert sorted(_produce(broker.bootstrap, "flushed", 300)) == list(range(300))
    broker.kill()
    broker.restart()
    assert _consume_all(broker.bootstrap, "flushed", 300) == _expected(300)


@pytest.mark.parametrize("acks", ["0", "1"])
def test_durable_mode_makes_unwaited_appends_visible_after_their_fsync(broker_factory, acks):
    """acks 0/1 do not wait for the fsync, but a background round moves the high watermark soon after."""
    broker = broker_factory(log_flush_durable_enable="true")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "linger.ms": 2})
    for i in range(200):
        producer.produce("lazy", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    assert _consume_all(broker.bootstrap, "lazy", 200) == _expected(200)


def test_a_topic_answered_by_create_topics_survives_a_kill(broker_factory):
    broker = broker_factory()
    configs = {"cleanup.policy": "compact", "retention.ms": "12345"}
    body = req(19, topics=[creatable("kept", 3, configs=configs)], timeout_ms=5000)
    created = raw_call(broker.port, 19, 7, body).topics[0]
    assert created.error_code == 0
    broker.kill()
    broker.restart()
    Topic = sub(3, "MetadataRequestTopic")
    metadata = req(3, topics=[Topic(name="kept")], allow_auto_topic_creation=False)
    (topic,) = raw_call(broker.port, 3, 12, metadata).topics
    assert (topic.error_code, topic.topic_id, len(topic.partitions)) == (0, created.topic_id, 3)
    Resource = sub(32, "DescribeConfigsResource")
    (result,) = raw_call(broker.port, 32, 4, req(32, resources=[Resource(resource_type=2, resource_name="kept")],
                                                 include_synonyms=False, include_documentation=False)).results  # fmt: skip
    assert {c.name: c.value for c in result.configs if c.name in configs} == configs
