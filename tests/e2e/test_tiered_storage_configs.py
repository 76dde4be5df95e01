"""Kafka's tiered-storage topic configs from confluent-kafka's AdminClient.

The five keys Kafka's ``LogConfig`` defines for tiered storage are accepted
at creation and described with their values; ``remote.storage.enable=true``
is refused with INVALID_CONFIG and Kafka's message, as a Kafka broker with
the tiered storage system disabled refuses it.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]
CONFIGS = {"remote.storage.enable": "false", "local.retention.ms": "60000", "local.retention.bytes": "-2",
           "remote.log.copy.disable": "true", "remote.log.delete.on.disable": "false"}  # fmt: skip


def test_tiered_storage_keys_accepted_and_true_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("tiered", 1, 1, config=CONFIGS)])["tiered"].result(timeout=30)
    resource = ConfigResource(ResourceType.TOPIC, "tiered")
    described = admin.describe_configs([resource])[resource].result(timeout=30)
    assert {k: described[k].value for k in CONFIGS} == CONFIGS
    refused = admin.create_topics([NewTopic("remote", 1, 1, config={"remote.storage.enable": "true"})])["remote"]
    with pytest.raises(KafkaException) as caught:
        refused.result(timeout=30)
    error = caught.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    assert error.str() == ("Tiered Storage functionality is disabled in the broker. "
                           "Topic cannot be configured with remote log storage.")  # fmt: skip
