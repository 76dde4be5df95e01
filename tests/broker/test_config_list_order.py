"""IncrementalAlterConfigs on the LIST ``cleanup.policy`` and Kafka's wording for bad values, through ``dispatch``.

APPEND adds to the end and SUBTRACT keeps the rest in order, and
DescribeConfigs shows that text (``delete,compact`` after appending
``compact`` to the default). A value its type cannot parse is INVALID_CONFIG
with Kafka's ConfigException message.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import OVERRIDE, broker, configs_of, create_ok  # noqa: F401  (broker is a fixture)
from .test_config_handlers import APPEND, SET, SUBTRACT, incremental, overrides


async def _policy(broker, topic: str) -> tuple[str, int]:
    entry = (await configs_of(broker, topic))["cleanup.policy"]
    return entry.value, entry.config_source


async def test_append_then_describe_keeps_kafkas_order(broker):
    await create_ok(broker, "ordered")
    assert (await incremental(broker, "ordered", [("cleanup.policy", APPEND, "compact")])).error_code == 0
    assert overrides(broker, "ordered")["cleanup.policy"] == "delete,compact"
    assert await _policy(broker, "ordered") == ("delete,compact", OVERRIDE)
    assert broker.topics.partition("ordered", 0).validation_config.compacted
    assert (await incremental(broker, "ordered", [("cleanup.policy", SUBTRACT, "delete")])).error_code == 0
    assert await _policy(broker, "ordered") == ("compact", OVERRIDE)
    assert (await incremental(broker, "ordered", [("cleanup.policy", APPEND, "delete")])).error_code == 0
    assert await _policy(broker, "ordered") == ("compact,delete", OVERRIDE)


async def test_a_set_list_is_described_as_given(broker):
    await create_ok(broker, "given", configs={"cleanup.policy": "delete, compact"})
    assert await _policy(broker, "given") == ("delete,compact", OVERRIDE)


async def test_bad_values_carry_kafkas_message(broker):
    await create_ok(broker, "bad")
    soon = await incremental(broker, "bad", [("retention.ms", SET, "soon")])
    message = "Invalid value soon for configuration retention.ms: Not a number of type LONG"
    assert (soon.error_code, soon.error_message) == (ErrorCode.INVALID_CONFIG, message)
    low = await incremental(broker, "bad", [("retention.ms", SET, "-5")])
    message = "Invalid value -5 for configuration retention.ms: Value must be at least -1"
    assert (low.error_code, low.error_message) == (ErrorCode.INVALID_CONFIG, message)
    twice = await incremental(broker, "bad", [("cleanup.policy", SET, "delete,delete")])
    message = "Configuration 'cleanup.policy' values must not be duplicated."
    assert (twice.error_code, twice.error_message) == (ErrorCode.INVALID_CONFIG, message)
    assert overrides(broker, "bad") == {}
