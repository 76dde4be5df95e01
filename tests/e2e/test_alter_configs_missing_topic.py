"""confluent-kafka's incremental_alter_configs on a missing topic: a bad value wins over the missing topic.

Kafka's controller validates the new configs before it checks that the topic
exists (``ConfigurationControlManager.validateAlterConfig``), so a client
sees INVALID_CONFIG for a bad value and UNKNOWN_TOPIC_OR_PARTITION only for
a good one.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _error(admin: AdminClient, value: str) -> KafkaError:
    resource = ConfigResource("topic", "ghost", incremental_configs=[
        ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    with pytest.raises(KafkaException) as caught:
        admin.incremental_alter_configs([resource])[resource].result(30)
    return caught.value.args[0]


def test_bad_value_on_a_missing_topic_is_invalid_config(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    bad = _error(admin, "-5")
    assert (bad.code(), bad.str()) == (
        KafkaError.INVALID_CONFIG, "Invalid value -5 for configuration retention.ms: Value must be at least -1")
    missing = _error(admin, "1000")
    assert (missing.code(), missing.str()) == (KafkaError.UNKNOWN_TOPIC_OR_PART, "The topic 'ghost' does not exist.")
