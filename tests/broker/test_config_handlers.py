"""The config admin handlers, driven in-process through ``dispatch``.

DescribeConfigs, AlterConfigs and IncrementalAlterConfigs against a real
broker and storage (see ``_admin_client``): the sources, synonyms and
documentation Kafka reports, the codes and messages it gives a single-node
cluster, and that each change is (or, for validate_only and errors, is not)
visible in the topic's overrides afterwards.
"""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.core import Broker
from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    BROKER, DEFAULT, NODE, OVERRIDE, STATIC, TOPIC, broker, call, configs_of, create, create_ok, creatable, describe,
    open_broker, req, sub,
)  # fmt: skip


# -- DescribeConfigs -------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 5))
async def test_describe_configs_topic_sources(broker, version):
    await create_ok(broker, "described", configs={"retention.ms": "60000"})
    result = await describe(broker, "described", version)
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: c for c in result.configs}
    override, static, default = configs["retention.ms"], configs["segment.bytes"], configs["retention.bytes"]
    assert (override.value, static.value) == ("60000", "1048576")
    if version == 0:  # is_default: true exactly for DEFAULT_CONFIG
        assert (override.is_default, static.is_default, default.is_default) == (False, False, True)
        return
    assert (override.config_source, static.config_source, default.config_source) == (OVERRIDE, STATIC, DEFAULT)
    assert override.synonyms[0].name == "retention.ms" and override.synonyms[0].source == OVERRIDE
    assert ("log.segment.bytes", "1048576", STATIC) in [(s.name, s.value, s.source) for s in static.synonyms]
    assert all(not c.read_only and not c.is_sensitive for c in result.configs)
    if version >= 3:
        assert configs["cleanup.policy"].config_type == 7  # LIST
        assert configs["retention.ms"].config_type == 5  # LONG
        assert override.documentation is None  # not asked for


async def test_describe_configs_filters_synonyms_and_docs(broker):
    await create_ok(broker, "filtered", configs={"retention.ms": "60000"})
    result = await describe(broker, "filtered", 3, keys=["retention.ms", "no.such.key"], synonyms=False, docs=True)
    assert [c.name for c in result.configs] == ["retention.ms"]
    assert result.configs[0].synonyms == [] and result.configs[0].documentation
    everything = await describe(broker, "filtered", 3, keys=[])
    assert len(everything.configs) > 10


async def test_describe_configs_errors(broker):
    unknown = await describe(broker, "missing")
    assert (unknown.error_code, unknown.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    illegal = await describe(broker, "bad name")
    assert illegal.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    for name in (str(NODE + 1), "one"):
        wrong = await describe(broker, name, rtype=BROKER)
        assert wrong.error_code == ErrorCode.INVALID_REQUEST and wrong.error_message
    other = await describe(broker, "x", rtype=64)
    assert other.error_code == ErrorCode.INVALID_REQUEST and other.resource_type == 64


async def test_describe_configs_client_metrics_has_no_subscriptions(broker):
    """Kafka's ConfigHelper answers a CLIENT_METRICS subscription with the configs stored for it, none for
    one that does not exist (every one here: no client metrics are served), and refuses an empty name."""
    none = await describe(broker, "every-minute", rtype=16)
    assert (none.error_code, none.error_message, none.configs, none.resource_type) == (ErrorCode.NONE, None, [], 16)
    empty = await describe(broker, "", rtype=16)
    assert (empty.error_code, empty.error_message) == (
        ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")  # fmt: skip


async def test_describe_configs_broker(broker):
    result = await describe(broker, str(NODE), rtype=BROKER, docs=True)
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: c for c in result.configs}
    assert configs["node.id"].value == str(NODE) and configs["node.id"].config_source == STATIC
    assert configs["num.partitions"].value == "3" and configs["num.partitions"].config_type == 3
    assert configs["delete.topic.enable"].value == "true" and configs["delete.topic.enable"].config_source == DEFAULT
    assert configs["delete.topic.enable"].config_type == 1
    # read-only exactly where Kafka reads the key only at startup (DynamicBrokerConfig.AllDynamicConfigs)
    assert configs["node.id"].read_only and configs["num.partitions"].read_only
    assert not configs["log.segment.bytes"].read_only and not configs["max.connections"].read_only
    assert configs["log.message.format.version"].read_only
    cleaner_threads = configs["log.cleaner.threads"]  # not set anywhere: Kafka's default, listed as Kafka lists it
    assert (cleaner_threads.value, cleaner_threads.config_source, cleaner_threads.config_type) == ("1", DEFAULT, 3)
    assert not cleaner_threads.read_only and configs["log.cleaner.enable"].read_only
    assert (configs["log.retention.minutes"].value, configs["log.retention.minutes"].config_source) == (None, DEFAULT)
    assert [(s.name, s.source) for s in configs["num.partitions"].synonyms] == [
        ("num.partitions", STATIC), ("num.partitions", DEFAULT),
    ]  # fmt: skip
    segment_bytes, retention_bytes = configs["log.segment.bytes"], configs["log.retention.bytes"]
    assert (segment_bytes.value, segment_bytes.config_source) == ("1048576", STATIC)
    assert retention_bytes.config_source == DEFAULT and retention_bytes.config_type == 5  # LONG
    cluster_defaults = await describe(broker, "", rtype=BROKER)
    assert (cluster_defaults.error_code, cluster_defaults.configs) == (ErrorCode.NONE, [])


async def test_describe_configs_broker_types_are_kafkas(broker):
    """Each broker key's ConfigDef type as Kafka's KafkaConfig defines it (a key whose parser is neither
    int nor str was reported as BOOLEAN), and its read_only flag as Kafka sets it."""
    entries = (await describe(broker, str(NODE), rtype=BROKER)).configs
    configs, read_only = {c.name: c.config_type for c in entries}, {c.name: c.read_only for c in entries}
    STRING, SHORT, LONG, LIST, CLASS = 2, 4, 5, 7, 8
    assert {k: configs[k] for k in (
        "security.inter.broker.protocol", "group.consumer.migration.policy", "process.roles",
        "sasl.enabled.mechanisms", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
        "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.engine.factory.class", "connections.max.idle.ms",
        "connections.max.reauth.ms", "offsets.retention.check.interval.ms", "transaction.state.log.replication.factor",
    )} == {
        "security.inter.broker.protocol": STRING, "group.consumer.migration.policy": STRING, "process.roles": LIST,
        "sasl.enabled.mechanisms": LIST, "controller.quorum.voters": LIST, "controller.quorum.bootstrap.servers": LIST,
        "ssl.enabled.protocols": LIST, "ssl.cipher.suites": LIST, "ssl.engine.factory.class": CLASS,
        "connections.max.idle.ms": LONG, "connections.max.reauth.ms": LONG, "offsets.retention.check.interval.ms": LONG,
        "transaction.state.log.replication.factor": SHORT,
    }  # fmt: skip
    assert {k: read_only[k] for k in ("listeners", "ssl.keystore.location", "sasl.enabled.mechanisms", "node.id")} == {
        "listeners": False, "ssl.keystore.location": False, "sasl.enabled.mechanisms": False, "node.id": True,
    }  # fmt: skip  (Kafka's read_only: false for the keys of DynamicBrokerConfig.AllDynamicConfigs)


async def test_describe_configs_broker_hides_the_authorizers_own_keys(tmp_path):
    """super.users and allow.everyone.if.no.acl.found are the authorizer's, not KafkaConfig's: Kafka lists
    them only when set, of unknown type and so sensitive (ConfigHelper: KafkaConfig.maybeSensitive), value
    null, read-only."""
    plain = {c.name for c in (await describe_broker_of(tmp_path / "a")).configs}
    assert not plain & {"super.users", "allow.everyone.if.no.acl.found"}
    configs = {c.name: c for c in (await describe_broker_of(tmp_path / "b", super_users="User:admin")).configs}
    entry = configs["super.users"]
    assert (entry.value, entry.is_sensitive, entry.config_type, entry.read_only, entry.config_source) == (
        None, True, 0, True, STATIC)  # fmt: skip
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [("super.users", None, STATIC)]
    assert "allow.everyone.if.no.acl.found" not in configs


async def test_describe_configs_broker_keys_without_a_kafka_default_are_null(tmp_path):
    """Keys whose KafkaConfig default is null (advertised.listeners, ssl.keystore.location ...) are
    described with a null value and no DEFAULT_CONFIG synonym when unset (Kafka's staticDefaultConfigs
    drops null values), not as an empty string."""
    configs = {c.name: c for c in (await describe_broker_of(tmp_path / "a", ssl_truststore_location="/t.p12")).configs}
    for name in ("advertised.listeners", "inter.broker.listener.name", "ssl.keystore.location",
                 "sasl.oauthbearer.expected.audience", "sasl.server.callback.handler.class", "ssl.keystore.password"):
        entry = configs[name]
        assert (entry.value, entry.config_source, entry.synonyms) == (None, DEFAULT, []), name
    truststore = configs["ssl.truststore.location"]
    assert (truststore.value, [(s.name, s.value, s.source) for s in truststore.synonyms]) == (
        "/t.p12", [("ssl.truststore.location", "/t.p12", STATIC)])  # fmt: skip
    assert [(s.value, s.source) for s in configs["ssl.keystore.type"].synonyms] == [("JKS", DEFAULT)]


async def describe_broker_of(tmp_path, **extra: str):
    b = open_broker(tmp_path, **extra)
    try:
        return await describe(b, str(NODE), rtype=BROKER)
    finally:
        b.close()


# -- AlterConfigs / IncrementalAlterConfigs --------------------------------------------


async def alter(broker, name: str, configs: dict, version: int = 2, validate_only=False, rtype=TOPIC):
    Res = sub(33, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, value=v) for k, v in configs.items()]
    body = req(33, resources=[Res(resource_type=rtype, resource_name=name, configs=entries)], validate_only=validate_only)
    return (await call(broker, 33, version, body)).responses[0]


def overrides(broker, name: str) -> dict:
    return dict(broker.topics.topics()[name].overrides)


@pytest.mark.parametrize("version", range(0, 3))
async def test_alter_configs_replaces_every_override(broker, version):
    await create_ok(broker, "alt", configs={"retention.ms": "1000", "cleanup.policy": "compact"})
    result = await alter(broker, "alt", {"segment.ms": "600000"}, version)
    assert (result.error_code, result.resource_name) == (ErrorCode.NONE, "alt")
    assert overrides(broker, "alt") == {"segment.ms": "600000"}
    configs = await configs_of(broker, "alt")
    assert configs["retention.ms"].config_source == DEFAULT and configs["segment.ms"].value == "600000"
    assert not broker.topics.partition("alt", 0).validation_config.compacted  # cache refreshed


async def test_alter_configs_validate_only_and_errors(broker):
    await create_ok(broker, "alt", configs={"retention.ms": "1000"})
    dry = await alter(broker, "alt", {"retention.ms": "5"}, validate_only=True)
    assert dry.error_code == ErrorCode.NONE and overrides(broker, "alt") == {"retention.ms": "1000"}
    bad = await alter(broker, "alt", {"retention.ms": "soon"})
    assert bad.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in bad.error_message
    bad_dry = await alter(broker, "alt", {"min.cleanable.dirty.ratio": "2.5"}, validate_only=True)
    assert bad_dry.error_code == ErrorCode.INVALID_CONFIG and "min.cleanable.dirty.ratio" in bad_dry.error_message
    null = await alter(broker, "alt", {"retention.ms": None})
    assert null.error_code == ErrorCode.INVALID_REQUEST  # Kafka's broker refuses it before its controller
    assert overrides(broker, "alt") == {"retention.ms": "1000"}
    assert (await alter(broker, "ghost", {})).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await alter(broker, "", {})).error_code == ErrorCode.INVALID_REQUEST
    node = await alter(broker, str(NODE), {"num.partitions": "7"}, rtype=BROKER)
    assert node.error_code == ErrorCode.INVALID_REQUEST and "num.partitions" in node.error_message
    assert (await alter(broker, "99", {}, rtype=BROKER)).error_code == ErrorCode.INVALID_REQUEST


async def test_alter_configs_refuses_a_key_twice_then_null_values_of_a_topic(broker):
    """Kafka's ConfigAdminManager.preprocess, before the request reaches the controller."""
    await create_ok(broker, "alt", configs={"retention.ms": "1000"})
    Res = sub(33, "AlterConfigsResource")

    async def alter_entries(entries: list, name="alt") -> tuple:
        res = Res(resource_type=TOPIC, resource_name=name, configs=[Res.AlterableConfig(name=k, value=v)
                                                                    for k, v in entries])  # fmt: skip
        result = (await call(broker, 33, 2, req(33, resources=[res], validate_only=False))).responses[0]
        return result.error_code, result.error_message

    twice = await alter_entries([("segment.ms", "600000"), ("segment.ms", "700000")])
    assert twice == (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    twice_and_null = await alter_entries([("segment.ms", None), ("segment.ms", None)])
    assert twice_and_null == (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = await alter_entries([("retention.ms", None), ("segment.ms", "1"), ("cleanup.policy", None)])
    assert nulls == (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms, cleanup.policy")
    assert (await alter_entries([("retention.ms", None)], name="ghost"))[0] == ErrorCode.INVALID_REQUEST
    assert overrides(broker, "alt") == {"retention.ms": "1000"}


async def test_alter_configs_duplicate_resource(broker):
    await create_ok(broker, "alt")
    Res = sub(33, "AlterConfigsResource")
    res = Res(resource_type=TOPIC, resource_name="alt", configs=[Res.AlterableConfig(name="retention.ms", value="9")])
    other = Res(resource_type=TOPIC, resource_name="alt2", configs=[])
    resp = await call(broker, 33, 1, req(33, resources=[res, other, res]))
    copy = ("alt", ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
    assert [(r.resource_name, r.error_code, r.error_message) for r in resp.responses] == [
        copy, ("alt2", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, resp.responses[1].error_message), copy]  # each copy
    assert overrides(broker, "alt") == {}


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


async def incremental(broker, name: str, ops: list, version: int = 1, validate_only=False):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    res = Res(resource_type=TOPIC, resource_name=name, configs=entries)
    return (await call(broker, 44, version, req(44, resources=[res], validate_only=validate_only))).responses[0]


async def test_incremental_alter_configs_refuses_null_values_of_a_topic_but_in_delete(broker):
    await create_ok(broker, "inc", configs={"retention.ms": "1000", "segment.ms": "700000"})
    ops = [("retention.ms", SET, None), ("segment.ms", DELETE, None), ("cleanup.policy", APPEND, None)]
    null = await incremental(broker, "inc", ops)
    assert (null.error_code, null.error_message) == (
        ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms, cleanup.policy")  # fmt: skip
    assert (await incremental(broker, "ghost", [("retention.ms", SET, None)])).error_code == ErrorCode.INVALID_REQUEST
    assert overrides(broker, "inc") == {"retention.ms": "1000", "segment.ms": "700000"}
    assert (await incremental(broker, "inc", [("segment.ms", DELETE, None)])).error_code == ErrorCode.NONE
    assert overrides(broker, "inc") == {"retention.ms": "1000"}


@pytest.mark.parametrize("version", range(0, 2))
async def test_incremental_alter_configs_operations(broker, version):
    await create_ok(broker, "inc", configs={"retention.ms": "1000", "segment.ms": "700000"})
    ops = [("retention.ms", DELETE, None), ("max.message.bytes", SET, "2048"), ("cleanup.policy", APPEND, "compact")]
    result = await incremental(broker, "inc", ops, version)
    assert result.error_code == ErrorCode.NONE, result.error_message
    assert overrides(broker, "inc") == {
        "segment.ms": "700000", "max.message.bytes": "2048", "cleanup.policy": "delete,compact",
    }  # fmt: skip
    assert (await incremental(broker, "inc", [("cleanup.policy", SUBTRACT, "delete")], version)).error_code == 0
    assert overrides(broker, "inc")["cleanup.policy"] == "compact"
    assert broker.topics.partition("inc", 0).validation_config.compacted


async def test_incremental_alter_configs_refusals(broker):
    await create_ok(broker, "inc", configs={"retention.ms": "1000"})
    not_list = await incremental(broker, "inc", [("retention.ms", APPEND, "5")])
    assert not_list.error_code == ErrorCode.INVALID_CONFIG and "LIST" in not_list.error_message
    twice = await incremental(broker, "inc", [("retention.ms", SET, "5"), ("retention.ms", DELETE, None)])
    assert twice.error_code == ErrorCode.INVALID_REQUEST
    unknown_op = await incremental(broker, "inc", [("retention.ms", 9, "5")])
    assert unknown_op.error_code == ErrorCode.INVALID_REQUEST
    bad_value = await incremental(broker, "inc", [("cleanup.policy", APPEND, "shred")])
    assert bad_value.error_code == ErrorCode.INVALID_CONFIG
    dry = await incremental(broker, "inc", [("retention.ms", SET, "5")], validate_only=True)
    assert dry.error_code == ErrorCode.NONE
    assert overrides(broker, "inc") == {"retention.ms": "1000"}
    assert (await incremental(broker, "nope", [])).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_incremental_append_of_an_empty_item_is_refused(broker):
    """Kafka's controller splits an APPEND value as Java's String.split (an empty item between commas is
    kept, trailing ones dropped) and appends each item, so an empty item makes the list invalid."""
    await create_ok(broker, "inc")
    for value in ("compact,,delete", ",compact"):
        empty = await incremental(broker, "inc", [("cleanup.policy", APPEND, value)])
        assert empty.error_code == ErrorCode.INVALID_CONFIG, value
    assert overrides(broker, "inc") == {}
    assert (await incremental(broker, "inc", [("cleanup.policy", APPEND, "compact,")])).error_code == ErrorCode.NONE
    assert overrides(broker, "inc") == {"cleanup.policy": "delete,compact"}


async def test_a_broker_key_set_to_its_default_is_still_static_as_in_kafka(tmp_path):
    """Kafka reports STATIC_BROKER_CONFIG for every key in server.properties, whatever its value."""
    props = {
        "broker.id": "1", "log.dirs": str(tmp_path), "prometheus.port": "0", "delete.topic.enable": "true",
        "log.segment.bytes": "1073741824",
    }  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        configs = {c.name: c for c in (await describe(b, "1", rtype=BROKER)).configs}
    finally:
        b.close()
    for name, value in (("delete.topic.enable", "true"), ("node.id", "1"), ("log.segment.bytes", "1073741824")):
        entry = configs[name]
        assert (entry.value, entry.config_source) == (value, STATIC), name
        assert [(s.source, s.value) for s in entry.synonyms] == [(STATIC, value), (DEFAULT, value)], name
    assert configs["auto.create.topics.enable"].config_source == DEFAULT  # not set: the default


async def test_password_keys_are_sensitive_and_never_shown(tmp_path):
    """Kafka's PASSWORD keys (``ssl.keystore.password`` ...) come back null and sensitive, set or not."""
    props = {"log.dirs": str(tmp_path), "prometheus.port": "0", "ssl.keystore.password": "s3cret",
             "ssl.keystore.location": "/etc/kafka/ks.p12"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        configs = {c.name: c for c in (await describe(b, "1", rtype=BROKER)).configs}
    finally:
        b.close()
    password, unset, location = configs["ssl.keystore.password"], configs["ssl.key.password"], configs[
        "ssl.keystore.location"]  # fmt: skip
    assert (password.value, password.is_sensitive, password.config_source, password.config_type) == (
        None, True, STATIC, 9)  # fmt: skip
    assert [(s.source, s.value) for s in password.synonyms] == [(STATIC, None)]  # a null default: no synonym
    assert (unset.value, unset.is_sensitive, unset.config_source) == (None, True, DEFAULT)
    assert (location.value, location.is_sensitive) == ("/etc/kafka/ks.p12", False)
    assert "s3cret" not in repr(list(configs.values()))


async def test_the_replication_throttle_lists_are_topic_configs_checked_as_kafka_checks_them(broker):  # noqa: F811
    key = "leader.replication.throttled.replicas"
    await create_ok(broker, "thr", 2, configs={key: "0:1, 1:1", "follower.replication.throttled.replicas": "*"})
    entries = {c.name: c for c in (await describe(broker, "thr")).configs}
    assert (entries[key].value, entries[key].config_source) == ("0:1,1:1", 1)  # DYNAMIC_TOPIC_CONFIG
    assert entries["follower.replication.throttled.replicas"].value == "*"
    await create_ok(broker, "plain")
    plain = {c.name: c for c in (await describe(broker, "plain")).configs}[key]
    assert (plain.value, plain.config_source, plain.synonyms) == ("", 5, [])  # DEFAULT_CONFIG, no broker synonym
    bad = (await create(broker, creatable("bad-thr", 1, configs={key: "0:1,leader"})))["bad-thr"]
    assert (bad.error_code, bad.error_message) == (ErrorCode.INVALID_CONFIG, (
        f"Invalid value [0:1, leader] for configuration {key}: {key} must be the literal '*' or a list of replicas "
        "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."))  # fmt: skip
