"""The topic and config admin handlers, driven in-process through ``dispatch``.

CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs
and IncrementalAlterConfigs against a real broker and storage (see
``_admin_client``), checking the codes and messages Kafka gives a single-node
cluster, and that each change is (or, for validate_only and errors, is not)
visible in the storage layer afterwards.
"""

from __future__ import annotations

import uuid

import pytest

from broker.config import BrokerConfig
from broker.core import Broker
from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    BROKER, DEFAULT, INVALID_REPLICA_ASSIGNMENT, NODE, OVERRIDE, STATIC, TOPIC, broker, call, configs_of, create,
    create_ok, creatable, describe, now_ms, produce, req, sub,
)  # fmt: skip


# -- CreateTopics ----------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 8))
async def test_create_topics_every_version(broker, version):
    result = (await create(broker, creatable("orders", 2), version=version))["orders"]
    assert result.error_code == ErrorCode.NONE
    topic = broker.topics.get("orders")
    assert topic is not None and topic.num_partitions == 2
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (2, 1)
        assert "cleanup.policy" in {c.name for c in result.configs}
    if version >= 7:
        assert result.topic_id == topic.topic_id and result.topic_id != uuid.UUID(int=0)


async def test_create_topics_v5_configs_show_overrides_and_sources(broker):
    result = await create_ok(broker, "compacted", configs={"cleanup.policy": "compact"})
    configs = {c.name: c for c in result.configs}
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].config_source == OVERRIDE
    assert configs["segment.bytes"].value == "1048576"  # log.segment.bytes from the broker
    assert configs["segment.bytes"].config_source == STATIC
    assert configs["retention.bytes"].config_source == DEFAULT
    assert [c.name for c in result.configs] == sorted(configs)


async def test_create_topics_defaults_from_broker(broker):
    result = (await create(broker, creatable("dflt", -1, -1)))["dflt"]
    assert result.error_code == ErrorCode.NONE and result.num_partitions == 3  # num.partitions=3
    assert broker.topics.get("dflt").num_partitions == 3


@pytest.mark.parametrize(
    ("partitions", "factor", "code"),
    [
        (0, 1, ErrorCode.INVALID_PARTITIONS),
        (-2, 1, ErrorCode.INVALID_PARTITIONS),
        (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
        (1, 2, ErrorCode.INVALID_REPLICATION_FACTOR),
        (1, -3, ErrorCode.INVALID_REPLICATION_FACTOR),
    ],
)
async def test_create_topics_bad_counts(broker, partitions, factor, code):
    result = (await create(broker, creatable("bad", partitions, factor)))["bad"]
    assert result.error_code == code and result.error_message
    assert broker.topics.get("bad") is None


async def test_create_topics_replication_factor_one_is_fine(broker):
    result = (await create(broker, creatable("rf1", 1, 1)))["rf1"]
    assert result.error_code == ErrorCode.NONE


async def test_create_topics_existing_and_illegal_names(broker):
    await create_ok(broker, "dup")
    results = await create(broker, creatable("dup"), creatable("bad/name"), creatable(""), creatable(".."))
    assert results["dup"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert results["dup"].error_message == "Topic 'dup' already exists."
    for name in ("bad/name", "", ".."):
        assert results[name].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_create_topics_same_name_twice_in_one_request(broker):
    resp = await call(broker, 19, 4, req(19, topics=[creatable("twice"), creatable("twice")]))
    assert [(t.name, t.error_code) for t in resp.topics] == [("twice", ErrorCode.INVALID_REQUEST)]
    assert broker.topics.get("twice") is None


async def test_create_topics_invalid_config(broker):
    results = await create(
        broker,
        creatable("badcfg", configs={"cleanup.policy": "shred"}),
        creatable("unknowncfg", configs={"no.such.config": "1"}),
        creatable("nullcfg", configs={"retention.ms": None}),
    )
    assert results["badcfg"].error_code == ErrorCode.INVALID_CONFIG
    assert "cleanup.policy" in results["badcfg"].error_message
    assert results["unknowncfg"].error_code == ErrorCode.INVALID_CONFIG
    assert "no.such.config" in results["unknowncfg"].error_message
    assert results["nullcfg"].error_code == ErrorCode.INVALID_CONFIG
    assert "retention.ms" in results["nullcfg"].error_message
    assert broker.topics.names() == []


async def test_create_topics_validate_only_creates_nothing(broker):
    results = await create(broker, creatable("dry", 4, configs={"retention.ms": "1000"}), validate_only=True)
    assert results["dry"].error_code == ErrorCode.NONE and results["dry"].num_partitions == 4
    assert {c.name: c.value for c in results["dry"].configs}["retention.ms"] == "1000"
    assert broker.topics.get("dry") is None
    bad = await create(broker, creatable("dry", 0), validate_only=True)
    assert bad["dry"].error_code == ErrorCode.INVALID_PARTITIONS


async def test_create_topics_manual_assignment(broker):
    ok = await create(broker, creatable("manual", -1, -1, assignments=[(0, [NODE]), (1, [NODE])]))
    assert ok["manual"].error_code == ErrorCode.NONE and broker.topics.get("manual").num_partitions == 2
    cases = {
        "other-node": ([(0, [NODE + 1])], -1, -1, INVALID_REPLICA_ASSIGNMENT),
        "twice-on-node": ([(0, [NODE, NODE])], -1, -1, INVALID_REPLICA_ASSIGNMENT),
        "empty-list": ([(0, [])], -1, -1, INVALID_REPLICA_ASSIGNMENT),
        "gap": ([(0, [NODE]), (2, [NODE])], -1, -1, INVALID_REPLICA_ASSIGNMENT),
        "with-count": ([(0, [NODE])], 1, -1, ErrorCode.INVALID_REQUEST),
        "with-factor": ([(0, [NODE])], -1, 1, ErrorCode.INVALID_REQUEST),
    }
    topics = [creatable(n, p, f, assignments=a) for n, (a, p, f, _) in cases.items()]
    results = await create(broker, *topics)
    for name, (*_, code) in cases.items():
        assert results[name].error_code == code, name
        assert results[name].error_message
        assert broker.topics.get(name) is None


# -- DeleteTopics ----------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 6))
async def test_delete_topics_by_name(broker, version):
    await create_ok(broker, "gone")
    resp = await call(broker, 20, version, req(20, topic_names=["gone", "never"], timeout_ms=1000))
    codes = {r.name: r.error_code for r in resp.responses}
    assert codes == {"gone": ErrorCode.NONE, "never": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.topics.get("gone") is None


async def test_delete_topics_v6_by_id_and_name(broker):
    by_id = (await create_ok(broker, "by-id")).topic_id
    by_name = (await create_ok(broker, "by-name")).topic_id
    State = sub(20, "DeleteTopicState")
    unknown = uuid.uuid4()
    body = req(20, topics=[State(topic_id=by_id), State(name="by-name"), State(topic_id=unknown)], timeout_ms=1)
    resp = await call(broker, 20, 6, body)
    got = [(r.name, r.topic_id, r.error_code) for r in resp.responses]
    assert got == [
        ("by-id", by_id, ErrorCode.NONE),
        ("by-name", by_name, ErrorCode.NONE),
        (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert broker.topics.names() == []


async def test_delete_topics_v6_bad_entries(broker):
    topic_id = (await create_ok(broker, "keep")).topic_id
    State = sub(20, "DeleteTopicState")
    body = req(20, topics=[State(name="keep", topic_id=topic_id), State(), State(name="x"), State(name="x")])
    resp = await call(broker, 20, 6, body)
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 4
    assert all(r.error_message for r in resp.responses)
    assert broker.topics.get("keep") is not None


@pytest.mark.parametrize(("version", "code"), [(2, ErrorCode.INVALID_REQUEST), (5, ErrorCode.TOPIC_DELETION_DISABLED)])
async def test_delete_topics_disabled(tmp_path, version, code):
    props = {"log.dirs": str(tmp_path), "delete.topic.enable": "false", "prometheus.port": "0"}
    broker = Broker.open(BrokerConfig.from_props(props))
    try:
        await create_ok(broker, "stays")
        resp = await call(broker, 20, version, req(20, topic_names=["stays"], timeout_ms=1))
        assert [(r.name, r.error_code) for r in resp.responses] == [("stays", code)]
        assert broker.topics.get("stays") is not None
    finally:
        broker.close()


# -- CreatePartitions ------------------------------------------------------------------


async def grow(broker, name: str, count: int, version: int = 3, validate_only=False, assignments=None):
    Topic = sub(37, "CreatePartitionsTopic")
    if assignments is not None:
        assignments = [Topic.CreatePartitionsAssignment(broker_ids=ids) for ids in assignments]
    topic = Topic(name=name, count=count, assignments=assignments)
    body = req(37, topics=[topic], timeout_ms=1000, validate_only=validate_only)
    return (await call(broker, 37, version, body)).results[0]


@pytest.mark.parametrize("version", range(0, 4))
async def test_create_partitions_grows_the_topic(broker, version):
    await create_ok(broker, "grow", 1)
    result = await grow(broker, "grow", 3, version)
    assert (result.name, result.error_code, result.error_message) == ("grow", ErrorCode.NONE, None)
    assert broker.topics.get("grow").num_partitions == 3
    assert broker.topics.partition("grow", 2) is not None
    await produce(broker, "grow", [now_ms()], partition=2)


async def test_create_partitions_refusals(broker):
    await create_ok(broker, "two", 2)
    same, fewer = await grow(broker, "two", 2), await grow(broker, "two", 1)
    assert same.error_code == fewer.error_code == ErrorCode.INVALID_PARTITIONS
    assert same.error_message == "Topic already has 2 partition(s)."
    assert "would not be an increase" in fewer.error_message
    assert (await grow(broker, "nope", 4)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad = await grow(broker, "two", 3, assignments=[[NODE + 1]])
    assert bad.error_code == INVALID_REPLICA_ASSIGNMENT
    short = await grow(broker, "two", 4, assignments=[[NODE]])
    assert short.error_code == INVALID_REPLICA_ASSIGNMENT
    assert broker.topics.get("two").num_partitions == 2
    assert (await grow(broker, "two", 4, assignments=[[NODE], [NODE]])).error_code == ErrorCode.NONE
    assert broker.topics.get("two").num_partitions == 4


async def test_create_partitions_validate_only_and_duplicates(broker):
    await create_ok(broker, "dry", 1)
    assert (await grow(broker, "dry", 5, validate_only=True)).error_code == ErrorCode.NONE
    assert broker.topics.get("dry").num_partitions == 1
    Topic = sub(37, "CreatePartitionsTopic")
    body = req(37, topics=[Topic(name="dry", count=2), Topic(name="dry", count=3)], timeout_ms=1)
    resp = await call(broker, 37, 2, body)
    assert [(r.name, r.error_code) for r in resp.results] == [("dry", ErrorCode.INVALID_REQUEST)]
    assert broker.topics.get("dry").num_partitions == 1


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
    other = await describe(broker, "x", rtype=16)
    assert other.error_code == ErrorCode.INVALID_REQUEST and other.resource_type == 16


async def test_describe_configs_broker(broker):
    result = await describe(broker, str(NODE), rtype=BROKER, docs=True)
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: c for c in result.configs}
    assert configs["node.id"].value == str(NODE) and configs["node.id"].config_source == STATIC
    assert configs["num.partitions"].value == "3" and configs["num.partitions"].config_type == 3
    assert configs["delete.topic.enable"].value == "true" and configs["delete.topic.enable"].config_source == DEFAULT
    assert configs["delete.topic.enable"].config_type == 1
    assert all(c.read_only for c in result.configs)
    assert [(s.name, s.source) for s in configs["num.partitions"].synonyms] == [
        ("num.partitions", STATIC), ("num.partitions", DEFAULT),
    ]  # fmt: skip
    segment_bytes, retention_bytes = configs["log.segment.bytes"], configs["log.retention.bytes"]
    assert (segment_bytes.value, segment_bytes.config_source) == ("1048576", STATIC)
    assert retention_bytes.config_source == DEFAULT and retention_bytes.config_type == 5  # LONG
    cluster_defaults = await describe(broker, "", rtype=BROKER)
    assert (cluster_defaults.error_code, cluster_defaults.configs) == (ErrorCode.NONE, [])


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
    assert null.error_code == ErrorCode.INVALID_CONFIG
    assert overrides(broker, "alt") == {"retention.ms": "1000"}
    assert (await alter(broker, "ghost", {})).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await alter(broker, "", {})).error_code == ErrorCode.INVALID_REQUEST
    node = await alter(broker, str(NODE), {"num.partitions": "7"}, rtype=BROKER)
    assert node.error_code == ErrorCode.INVALID_REQUEST and "num.partitions" in node.error_message
    assert (await alter(broker, "99", {}, rtype=BROKER)).error_code == ErrorCode.INVALID_REQUEST


async def test_alter_configs_duplicate_resource(broker):
    await create_ok(broker, "alt")
    Res = sub(33, "AlterConfigsResource")
    res = Res(resource_type=TOPIC, resource_name="alt", configs=[Res.AlterableConfig(name="retention.ms", value="9")])
    resp = await call(broker, 33, 1, req(33, resources=[res, res]))
    assert [(r.resource_name, r.error_code) for r in resp.responses] == [("alt", ErrorCode.INVALID_REQUEST)]
    assert overrides(broker, "alt") == {}


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


async def incremental(broker, name: str, ops: list, version: int = 1, validate_only=False):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    res = Res(resource_type=TOPIC, resource_name=name, configs=entries)
    return (await call(broker, 44, version, req(44, resources=[res], validate_only=validate_only))).responses[0]


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


async def test_create_topics_name_collision_on_dot_and_underscore(broker):
    await create_ok(broker, "metrics_in")
    result = (await create(broker, creatable("metrics.in")))["metrics.in"]
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION and "collides" in result.error_message
    assert broker.topics.get("metrics.in") is None


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
