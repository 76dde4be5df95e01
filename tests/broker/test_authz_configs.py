"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs under the ACL authorizer.

DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (TOPIC), the group (GROUP) or
the cluster (BROKER, BROKER_LOGGER), each resource answered on its own with
Kafka's error and default message; denied DescribeConfigs results come after
the allowed ones. A BROKER change is validated before it is authorized, a
topic or group is authorized before it is looked at.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import NODE, call, creatable, req, sub
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker is a fixture)

TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND = 0, 1, 2
TAF = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
CAF = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
GAF = (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
OK = (ErrorCode.NONE, None)
CLUSTER = "kafka-cluster"


@pytest.fixture
async def topics(authz_broker):  # noqa: F811
    body = req(19, topics=[creatable("t"), creatable("u")], timeout_ms=1000, validate_only=False)
    resp = await call(authz_broker, 19, 7, body, connection=user("admin"))
    assert [t.error_code for t in resp.topics] == [ErrorCode.NONE] * 2
    return authz_broker


async def _describe(broker, who, *resources, version=4):
    Resource = sub(32, "DescribeConfigsResource")
    wanted = [Resource(resource_type=t, resource_name=n, configuration_keys=None) for t, n in resources]
    body = req(32, resources=wanted, include_synonyms=False, include_documentation=False)
    return (await call(broker, 32, version, body, connection=user(who))).results


async def test_describe_configs_per_resource_with_denials_last(topics):
    grant(topics, "bob", Op.DESCRIBE_CONFIGS, Res.TOPIC, "u")
    results = await _describe(topics, "bob", (TOPIC, "t"), (TOPIC, "u"), (BROKER, str(NODE)), (GROUP, "g"),
                              (BROKER_LOGGER, str(NODE)))  # fmt: skip
    assert [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in results] == [
        (TOPIC, "u", *OK), (TOPIC, "t", *TAF), (BROKER, str(NODE), *CAF), (GROUP, "g", *GAF),
        (BROKER_LOGGER, str(NODE), *CAF),
    ]  # fmt: skip
    assert results[0].configs and not any(r.configs for r in results[1:])


async def test_describe_configs_allowed_by_the_cluster_group_and_alter_configs(topics):
    grant(topics, "bob", Op.DESCRIBE_CONFIGS, Res.CLUSTER, CLUSTER)
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.GROUP, "g")  # implies DESCRIBE_CONFIGS
    results = await _describe(topics, "bob", (BROKER, str(NODE)), (BROKER_LOGGER, str(NODE)), (GROUP, "g"),
                              (TOPIC, "t"), version=0)  # fmt: skip
    assert [(r.resource_name, r.error_code) for r in results] == [
        (str(NODE), ErrorCode.NONE), (str(NODE), ErrorCode.NONE), ("g", ErrorCode.NONE),
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED),  # DESCRIBE_CONFIGS on the cluster is not on the topics
    ]  # fmt: skip


async def test_describe_configs_authorizes_before_looking_the_topic_up(topics):
    grant(topics, "bob", Op.DESCRIBE_CONFIGS, Res.TOPIC, "absent")
    results = await _describe(topics, "bob", (TOPIC, "absent"), (TOPIC, "hidden"), (BROKER, "77"))
    assert [(r.resource_name, r.error_code) for r in results] == [
        ("absent", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("77", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # before the broker id is checked
    ]  # fmt: skip


async def _alter(broker, who, *resources, validate_only=False):
    Resource = sub(33, "AlterConfigsResource")
    body = req(33, resources=[
        Resource(resource_type=t, resource_name=n, configs=[Resource.AlterableConfig(name=k, value=v) for k, v in c])
        for t, n, c in resources], validate_only=validate_only)  # fmt: skip
    resp = await call(broker, 33, 2, body, connection=user(who))
    return [(r.resource_name, r.error_code, r.error_message) for r in resp.responses]


async def test_alter_configs_needs_alter_configs_on_each_resource(topics):
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.TOPIC, "u")
    retention = [("retention.ms", "1000")]
    got = await _alter(topics, "bob", (TOPIC, "t", retention), (TOPIC, "u", retention), (TOPIC, "absent", retention),
                       (BROKER, "", [("log.cleaner.threads", "2")]),
                       (GROUP, "g", [("consumer.session.timeout.ms", "50000")]))  # fmt: skip
    assert got == [("t", *TAF), ("u", *OK), ("absent", *TAF), ("", *CAF), ("g", *GAF)]
    assert dict(topics.topics.topics()["u"].overrides) == {"retention.ms": "1000"}
    assert not dict(topics.topics.topics()["t"].overrides)
    assert topics.dynamic_config.levels[""] == {} and topics.group_configs.current("g") == {}


async def test_alter_configs_checks_the_request_shape_and_broker_change_before_acls(topics):
    got = await _alter(topics, "bob", (BROKER, "77", [("log.cleaner.threads", "2")]),
                       (BROKER, str(NODE), [("no.such.key", "1")]), (GROUP, "g", [("a", "1"), ("a", "2")]),
                       (BROKER_LOGGER, str(NODE), []))  # fmt: skip
    assert [(name, code) for name, code, _ in got] == [
        ("77", ErrorCode.INVALID_REQUEST), (str(NODE), ErrorCode.INVALID_REQUEST), ("g", ErrorCode.INVALID_REQUEST),
        (str(NODE), ErrorCode.INVALID_REQUEST),  # the legacy API takes no BROKER_LOGGER, allowed or not
    ]  # fmt: skip
    assert "Unknown broker configs" in got[1][2]


async def test_alter_configs_refuses_a_topic_key_twice_or_a_null_value_before_acls(topics):
    got = await _alter(topics, "bob", (TOPIC, "t", [("retention.ms", "1"), ("retention.ms", "2")]),
                       (TOPIC, "u", [("retention.ms", None)]), (TOPIC, "absent", [("retention.ms", None)]))  # fmt: skip
    assert got == [
        ("t", ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        ("u", ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ("absent", ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
    ]  # fmt: skip


async def test_alter_configs_allowed_on_the_cluster_and_group(topics):
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.CLUSTER, CLUSTER)
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.GROUP, "g")
    got = await _alter(topics, "bob", (BROKER, "", [("log.cleaner.threads", "2")]),
                       (GROUP, "g", [("consumer.session.timeout.ms", "50000")]), (TOPIC, "t", []))  # fmt: skip
    assert got == [("", *OK), ("g", *OK), ("t", *TAF)]
    assert topics.dynamic_config.levels[""] == {"log.cleaner.threads": "2"}
    assert topics.group_configs.current("g") == {"consumer.session.timeout.ms": "50000"}


async def _incremental(broker, who, *resources, validate_only=False):
    Resource = sub(44, "AlterConfigsResource")
    body = req(44, resources=[
        Resource(resource_type=t, resource_name=n, configs=[
            Resource.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in c])
        for t, n, c in resources], validate_only=validate_only)  # fmt: skip
    resp = await call(broker, 44, 1, body, connection=user(who))
    return [(r.resource_name, r.error_code, r.error_message) for r in resp.responses]


async def test_incremental_alter_configs_needs_alter_configs_on_each_resource(topics, log_levels_restored):
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.TOPIC, "u")
    retention = [("retention.ms", SET, "1000")]
    got = await _incremental(topics, "bob", (TOPIC, "t", retention), (TOPIC, "u", retention),
                             (BROKER, str(NODE), [("log.cleaner.threads", SET, "2")]),
                             (BROKER_LOGGER, str(NODE), [("root", SET, "DEBUG")]),
                             (GROUP, "g", [("consumer.session.timeout.ms", SET, "50000")]))  # fmt: skip
    assert got == [("t", *TAF), ("u", *OK), (str(NODE), *CAF), (str(NODE), *CAF), ("g", *GAF)]
    assert dict(topics.topics.topics()["u"].overrides) == {"retention.ms": "1000"}
    assert topics.dynamic_config.levels[str(NODE)] == {}


async def test_incremental_alter_configs_order_of_checks(topics, log_levels_restored):
    got = await _incremental(topics, "bob",
                             (BROKER_LOGGER, str(NODE), [("broker", SET, None)]),  # nulls, then the ACL
                             (BROKER_LOGGER, "77", [("broker", SET, "DEBUG")]),  # the ACL, then the node id
                             (BROKER, str(NODE), [("log.segment.bytes", 2, "1")]),  # the broker's check first (40)
                             (TOPIC, "t", [("a", SET, "1"), ("a", SET, "2")]),  # duplicate keys first
                             (TOPIC, "", [("retention.ms", SET, "1")]),  # the ACL, then the name
                             (GROUP, "g", [("consumer.session.timeout.ms", SET, None)]))  # fmt: skip
    assert [(name, code) for name, code, _ in got] == [
        (str(NODE), ErrorCode.INVALID_REQUEST), ("77", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        (str(NODE), ErrorCode.INVALID_CONFIG), ("t", ErrorCode.INVALID_REQUEST),
        ("", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("g", ErrorCode.INVALID_REQUEST),
    ]  # fmt: skip


async def test_incremental_alter_configs_refuses_a_topic_null_value_before_acls(topics, log_levels_restored):
    got = await _incremental(topics, "bob", (TOPIC, "t", [("retention.ms", SET, None)]),
                             (TOPIC, "absent", [("cleanup.policy", APPEND, None)]),
                             (TOPIC, "u", [("retention.ms", DELETE, None)]))  # fmt: skip
    assert got == [
        ("t", ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
        ("absent", ErrorCode.INVALID_REQUEST, "Null value not supported for : cleanup.policy"),
        ("u", *TAF),  # a DELETE's null is no null value
    ]  # fmt: skip


async def test_incremental_alter_configs_of_loggers_with_alter_configs_on_the_cluster(topics, log_levels_restored):
    grant(topics, "bob", Op.ALTER_CONFIGS, Res.CLUSTER, CLUSTER)
    got = await _incremental(topics, "bob", (BROKER_LOGGER, str(NODE), [("root", SET, "DEBUG")]),
                             (BROKER, "", [("log.cleaner.threads", SET, "2")]), validate_only=True)  # fmt: skip
    assert got == [(str(NODE), *OK), ("", *OK)]
    assert topics.dynamic_config.levels[""] == {}
