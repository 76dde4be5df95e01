"""Group configs (GROUP resources) through real admin clients, on a real broker process.

kafka-python 3.0 checks each key against the group's described, non
read-only configs, then sends IncrementalAlterConfigs on the GROUP resource
(type 32); confluent-kafka (librdkafka) sends it as it is. The change must be
described back as DYNAMIC_GROUP_CONFIG, listed by ListConfigResources,
refused with Kafka's message where Kafka refuses it, survive a restart, and
DELETE must bring the broker's default back. (The Java Admin sweep describes
the configs of a live classic group.)
"""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigSource, ResourceType
from confluent_kafka.admin import ConfigResource as CKResource

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
GROUP = "e2e-configured"
SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"


def _described(admin: KafkaAdminClient) -> dict:
    described = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, GROUP)], config_filter="all")
    return {name: (entry["value"], entry["config_source"]) for name, entry in described["group"][GROUP].items()}


def _alter(admin: KafkaAdminClient, configs: dict) -> str:
    return admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, GROUP, configs=configs)])["group"][GROUP]


def test_kafka_python_sets_describes_and_deletes_group_configs_that_survive_a_restart(broker_factory):
    broker = broker_factory(group_consumer_session_timeout_ms="50000")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert _described(admin) == {
            SESSION: ("50000", "DEFAULT_CONFIG"), HEARTBEAT: ("5000", "DEFAULT_CONFIG"),
            "share.session.timeout.ms": ("45000", "DEFAULT_CONFIG"),
            "share.heartbeat.interval.ms": ("5000", "DEFAULT_CONFIG"),
            "share.record.lock.duration.ms": ("30000", "DEFAULT_CONFIG")}  # fmt: skip
        with pytest.raises(ValueError, match="consumer.rebalance.timeout.ms"):  # the client's own check
            _alter(admin, {"consumer.rebalance.timeout.ms": "1000"})
        assert _alter(admin, {SESSION: "55000", HEARTBEAT: "6000"}) == "OK"
        refused = _alter(admin, {SESSION: "70000"})
        assert "InvalidConfigurationError" in refused
        assert f"{SESSION} must be less than or equal to group.consumer.max.session.timeout.ms" in refused
        assert admin.list_config_resources(["GROUP"]) == {"group": [GROUP]}
    finally:
        admin.close()
    broker.stop()
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = _described(admin)
        assert (described[SESSION], described[HEARTBEAT]) == (("55000", "DYNAMIC_GROUP_CONFIG"),
                                                              ("6000", "DYNAMIC_GROUP_CONFIG"))  # fmt: skip
        assert _alter(admin, {SESSION: ("DELETE", None)}) == "OK"
        described = _described(admin)
        assert (described[SESSION], described[HEARTBEAT]) == (("50000", "DEFAULT_CONFIG"),
                                                              ("6000", "DYNAMIC_GROUP_CONFIG"))  # fmt: skip
    finally:
        admin.close()


def test_confluent_sets_a_group_config_and_gets_kafkas_refusal(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    change = CKResource(ResourceType.GROUP, GROUP, incremental_configs=[
        ConfigEntry(HEARTBEAT, "7000", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    admin.incremental_alter_configs([change])[change].result(30)
    group = CKResource(ResourceType.GROUP, GROUP)
    entry = admin.describe_configs([group])[group].result(30)[HEARTBEAT]
    assert (entry.value, entry.source) == ("7000", ConfigSource.GROUP_CONFIG.value)
    refused = CKResource(ResourceType.GROUP, GROUP, incremental_configs=[
        ConfigEntry(SESSION, "7000", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    with pytest.raises(KafkaException, match=f"{SESSION} must be greater than or equal to "
                                             "group.consumer.min.session.timeout.ms"):  # fmt: skip
        admin.incremental_alter_configs([refused])[refused].result(30)
