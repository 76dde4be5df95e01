"""BROKER_LOGGER resources: describe and change the broker's log levels at runtime, as Kafka (KIP-412).

DescribeConfigs lists every logger with its effective level under Kafka's
names; IncrementalAlterConfigs SETs a level or DELETEs it (the logger then
inherits), with Kafka's checks and messages; the legacy AlterConfigs does not
take this resource type.
"""

from __future__ import annotations

import logging

import pytest

from protocol import ErrorCode

from ._admin_client import NODE, broker, call, req, sub  # noqa: F401  (broker is a fixture)

LOGGER = 8
Resource = sub(44, "AlterConfigsResource")
Op = Resource.AlterableConfig


pytestmark = pytest.mark.usefixtures("log_levels_restored")


async def _describe(broker, name, keys=None, version=4):  # noqa: F811
    Res = sub(32, "DescribeConfigsResource")
    body = req(32, resources=[Res(resource_type=LOGGER, resource_name=name, configuration_keys=keys)],
               include_synonyms=True, include_documentation=False)  # fmt: skip
    return (await call(broker, 32, version, body)).results[0]


async def _alter(broker, name, *ops, validate_only=False):  # noqa: F811
    configs = [Op(name=n, config_operation=o, value=v) for n, o, v in ops]
    body = req(44, resources=[Resource(resource_type=LOGGER, resource_name=name, configs=configs)],
               validate_only=validate_only)  # fmt: skip
    r = (await call(broker, 44, 1, body)).responses[0]
    return r.error_code, r.error_message


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_lists_each_logger_with_its_effective_level(broker, version):  # noqa: F811
    logging.root.setLevel(logging.WARNING)
    logging.getLogger("broker").setLevel(logging.CRITICAL)
    logging.getLogger("storage").setLevel(logging.NOTSET)
    result = await _describe(broker, str(NODE), version=version)
    levels = {c.name: (c.value, c.config_source, c.read_only, c.is_sensitive, c.synonyms) for c in result.configs}
    assert result.error_code == ErrorCode.NONE
    assert levels["root"] == ("WARN", 6, False, False, []) and levels["broker"][0] == "FATAL"
    assert levels["storage"][0] == "WARN" and "broker.handlers.produce" in levels  # inherited; every logger
    only = await _describe(broker, str(NODE), keys=["broker"], version=version)
    assert [(c.name, c.value) for c in only.configs] == [("broker", "FATAL")]


@pytest.mark.parametrize(("name", "message"), [
    ("", "Broker id must not be empty"),
    ("x", "Broker id must be an integer, but it is: x"),
    ("7", f"Unexpected broker id, expected {NODE} but received 7"),
])  # fmt: skip
async def test_describe_needs_this_node_id(broker, name, message):  # noqa: F811
    result = await _describe(broker, name)
    assert (result.error_code, result.error_message, result.configs) == (ErrorCode.INVALID_REQUEST, message, [])


async def test_set_and_delete_change_levels_at_runtime(broker):  # noqa: F811
    logging.root.setLevel(logging.INFO)
    for name in ("storage", "broker"):  # loggers (not mere parents of module loggers) whatever ran before on this worker
        logging.getLogger(name)
    assert await _alter(broker, str(NODE), ("storage", 0, "TRACE"), ("broker", 0, "DEBUG")) == (ErrorCode.NONE, None)
    assert logging.getLogger("storage").getEffectiveLevel() == 5 and logging.getLogger("broker").level == 10
    levels = {c.name: c.value for c in (await _describe(broker, str(NODE))).configs}
    assert (levels["storage"], levels["broker"], levels["storage.log"]) == ("TRACE", "DEBUG", "TRACE")
    assert await _alter(broker, str(NODE), ("broker", 1, None)) == (ErrorCode.NONE, None)
    assert logging.getLogger("broker").level == logging.NOTSET  # inherits root's INFO again
    assert await _alter(broker, str(NODE), ("broker", 0, "ERROR"), validate_only=True) == (ErrorCode.NONE, None)
    assert logging.getLogger("broker").level == logging.NOTSET


@pytest.mark.parametrize(("name", "ops", "expected"), [
    ("x", [("broker", 0, "DEBUG")], (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x")),
    ("9", [("broker", 0, "DEBUG")], (ErrorCode.INVALID_REQUEST,
                                     f"Unexpected node id. Expected {NODE}, but received 9")),
    (None, [("nope.logger", 0, "DEBUG")], (ErrorCode.INVALID_CONFIG, "Logger nope.logger does not exist!")),
    (None, [("broker", 0, "LOUD")], (ErrorCode.INVALID_CONFIG, "Cannot set the log level of broker to LOUD as it is "
                                     "not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, "
                                     "TRACE, WARN")),
    (None, [("root", 1, None)], (ErrorCode.INVALID_REQUEST,
                                 "Removing the log level of the root logger is not allowed")),
    (None, [("broker", 2, "DEBUG")], (ErrorCode.INVALID_REQUEST,
                                      "APPEND operation is not allowed for the BROKER_LOGGER resource")),
    (None, [("broker", 0, None)], (ErrorCode.INVALID_REQUEST, "Null value not supported for : broker")),
    (None, [("broker", 0, "DEBUG"), ("broker", 1, None)], (ErrorCode.INVALID_REQUEST,
                                                            "Error due to duplicate config keys")),
    (None, [("storage", 0, "DEBUG"), ("broker", 0, "LOUD")], (ErrorCode.INVALID_CONFIG, None)),
])  # fmt: skip
async def test_bad_changes_are_refused_and_change_nothing(broker, name, ops, expected):  # noqa: F811
    logging.getLogger("storage").setLevel(logging.NOTSET)
    code, message = await _alter(broker, str(NODE) if name is None else name, *ops)
    assert code == expected[0] and (expected[1] is None or message == expected[1])
    assert logging.getLogger("storage").level == logging.NOTSET and logging.getLogger("broker").level != 10


async def test_legacy_alter_configs_does_not_take_broker_loggers(broker):  # noqa: F811
    Res = sub(33, "AlterConfigsResource")
    body = req(33, resources=[Res(resource_type=LOGGER, resource_name=str(NODE), configs=[
        Res.AlterableConfig(name="broker", value="DEBUG")])], validate_only=False)  # fmt: skip
    r = (await call(broker, 33, 2, body)).responses[0]
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")
