"""AlterConfigs / IncrementalAlterConfigs on a topic that does not exist: the configs are checked first.

Kafka's controller (``ConfigurationControlManager``) refuses an APPEND or
SUBTRACT on a non-LIST key while it applies the operations, then validates
the resulting configs (``validateAlterConfig``: unknown names and bad values
are INVALID_CONFIG) and only then checks that the topic exists
(UNKNOWN_TOPIC_OR_PARTITION), for both APIs and with validate_only too.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import broker  # noqa: F401  (broker is a fixture)
from .test_config_handlers import APPEND, SET, alter, incremental

MISSING = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist.")


@pytest.mark.parametrize("ops, expected", [
    ([("retention.ms", SET, "-5")],
     (ErrorCode.INVALID_CONFIG, "Invalid value -5 for configuration retention.ms: Value must be at least -1")),
    ([("no.such.key", SET, "1")], (ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.key")),
    ([("retention.ms", APPEND, "5")],
     (ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")),
    ([("retention.ms", SET, "1000")], MISSING),
    ([("cleanup.policy", APPEND, "compact")], MISSING),
])  # fmt: skip
@pytest.mark.parametrize("validate_only", [False, True])
async def test_incremental_checks_the_configs_before_the_topic(broker, ops, expected, validate_only):  # noqa: F811
    result = await incremental(broker, "ghost", ops, validate_only=validate_only)
    assert (result.error_code, result.error_message) == expected
    assert broker.topics.get("ghost") is None


@pytest.mark.parametrize("configs, expected", [
    ({"segment.bytes": "10"},
     (ErrorCode.INVALID_CONFIG, "Invalid value 10 for configuration segment.bytes: Value must be at least 14")),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     (ErrorCode.INVALID_CONFIG, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")),
    ({"segment.bytes": "1048576"}, MISSING),
])  # fmt: skip
async def test_legacy_alter_configs_checks_the_configs_before_the_topic(broker, configs, expected):  # noqa: F811
    result = await alter(broker, "ghost", configs)
    assert (result.error_code, result.error_message) == expected
    assert broker.topics.get("ghost") is None
