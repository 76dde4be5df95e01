"""Dynamic broker configs through real admin clients, on a real broker process.

kafka-python 3.0 checks a key against the broker's read-only flags before it
alters it (``config_filter='dynamic'``), then sends IncrementalAlterConfigs;
confluent-kafka sends IncrementalAlterConfigs for this node. (Neither client
will name the cluster-wide default, resource ``""``: the Java Admin sweep
does.) Each change must take effect on topics without an
override (segments roll at the new size; a topic becomes compacted), be
reported with Kafka's sources, be refused with Kafka's message where Kafka
refuses it, and survive a restart.
"""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewTopic)  # fmt: skip

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KPResource
    from kafka.admin import ConfigResourceType

from .clients import kp_consume
from .test_kafka_python import produce

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
NODE = "1"  # config/server.properties


def _kp_broker_configs(admin: KafkaAdminClient, name: str) -> dict:
    described = admin.describe_configs([KPResource(ConfigResourceType.BROKER, name)], config_filter="all")
    return described["broker"][name]


def test_kafka_python_sets_a_segment_size_that_rolls_segments_and_survives_a_restart(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        with pytest.raises(ValueError, match="node.id"):  # the client's own check, from our read-only flags
            admin.alter_configs([KPResource(ConfigResourceType.BROKER, NODE, configs={"node.id": "7"})])
        result = admin.alter_configs([KPResource(ConfigResourceType.BROKER, NODE,
                                                 configs={"log.segment.bytes": "2048"})])  # fmt: skip
        assert result == {"broker": {NODE: "OK"}}
        threads = admin.alter_configs([KPResource(ConfigResourceType.BROKER, NODE,
                                                  configs={"log.cleaner.threads": "2"})])  # fmt: skip
        assert threads == {"broker": {NODE: "OK"}}  # a key never set: listed with its default, so known dynamic
        entry = _kp_broker_configs(admin, NODE)["log.segment.bytes"]
        assert (entry["value"], entry["config_source"], entry["read_only"]) == ("2048", "DYNAMIC_BROKER_CONFIG", False)
    finally:
        admin.close()
    records = [(b"k%d" % i, b"v" * 100, [], 1_750_000_000_000 + i) for i in range(200)]
    produce(broker.bootstrap, "dyn-rolled", records, batch_size=1024)
    segments = sorted((broker.data_dir / "dyn-rolled-0").glob("*.log"))
    assert len(segments) > 5 and all(s.stat().st_size <= 2048 + 1200 for s in segments[:-1])
    broker.stop()
    broker.start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        entry = _kp_broker_configs(admin, NODE)["log.segment.bytes"]
        assert (entry["value"], entry["config_source"]) == ("2048", "DYNAMIC_BROKER_CONFIG")
    finally:
        admin.close()
    got = kp_consume(broker.bootstrap, "dyn-rolled", len(records))
    assert [(m.offset, m.key, m.value) for m in got] == [(i, k, v) for i, (k, v, _, _) in enumerate(records)]


def test_confluent_appends_compact_to_the_policy_of_every_plain_topic(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("dyn-plain", 1, 1)])["dyn-plain"].result(30)
    node = ConfigResource("broker", NODE, incremental_configs=[
        ConfigEntry("log.cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("log.retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    admin.incremental_alter_configs([node])[node].result(30)
    entries = list(admin.describe_configs([ConfigResource("topic", "dyn-plain")]).values())[0].result(30)
    assert (entries["cleanup.policy"].value, entries["cleanup.policy"].source) == (
        "delete,compact", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == (
        "3600000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    refused = ConfigResource("broker", NODE, incremental_configs=[
        ConfigEntry("log.retention.hours", "1", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    with pytest.raises(KafkaException, match=r"Cannot update these configs dynamically: Set\(log.retention.hours\)"):
        admin.incremental_alter_configs([refused])[refused].result(30)


def test_confluent_append_to_a_non_list_broker_key_is_invalid_config(broker):
    """Kafka's ``prepareIncrementalConfigs`` refuses it with InvalidConfigurationException (40), not 42."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    node = ConfigResource("broker", NODE, incremental_configs=[
        ConfigEntry("log.segment.bytes", "1", incremental_operation=AlterConfigOpType.APPEND)])  # fmt: skip
    with pytest.raises(KafkaException) as caught:
        admin.incremental_alter_configs([node])[node].result(30)
    error = caught.value.args[0]
    assert (error.code(), error.str()) == (
        KafkaError.INVALID_CONFIG, "Config value append is not allowed for config key: log.segment.bytes")
