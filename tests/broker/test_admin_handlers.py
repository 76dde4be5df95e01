"""The topic admin handlers, driven in-process through ``dispatch``.

CreateTopics, DeleteTopics and CreatePartitions against a real broker and
storage (see ``_admin_client``), checking the codes and messages Kafka gives a
single-node cluster, and that each change is (or, for validate_only and
errors, is not) visible in the storage layer afterwards. The config handlers
are in ``test_config_handlers.py``.
"""

from __future__ import annotations

import uuid

import pytest

from broker.config import BrokerConfig
from broker.core import Broker
from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    DEFAULT, INVALID_REPLICA_ASSIGNMENT, NODE, OVERRIDE, STATIC, broker, call, create, create_ok, creatable, now_ms,
    produce, req, sub,
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
    long = "x" * 250
    results = await create(broker, creatable("dup"), creatable("bad/name"), creatable(""), creatable(".."),
                           creatable(long))  # fmt: skip
    assert results["dup"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert results["dup"].error_message == "Topic 'dup' already exists."
    assert {name: (r.error_code, r.error_message) for name, r in results.items() if name != "dup"} == {
        "bad/name": (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' contains one or more "
                     "characters other than ASCII alphanumerics, '.', '_' and '-'"),
        "": (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed"),
        "..": (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: '..' is not allowed"),
        long: (ErrorCode.INVALID_TOPIC_EXCEPTION,
               f"Topic name is invalid: the length of '{long}' is longer than the max allowed length 249"),
    }  # Kafka's Topic.validate


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


async def test_create_topics_name_collision_on_dot_and_underscore(broker):
    await create_ok(broker, "metrics_in")
    result = (await create(broker, creatable("metrics.in")))["metrics.in"]
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION and "collides" in result.error_message
    assert broker.topics.get("metrics.in") is None


async def test_a_name_without_dot_or_underscore_is_not_compared_with_every_topic(broker, monkeypatch):
    """Kafka's ``validateNewTopicNames`` looks for collisions only for a name with '.' or '_': the others cost
    no pass over the topics (which made each creation slower as topics grew)."""
    await create_ok(broker, "metrics_in")

    def no_pass():
        raise AssertionError("a pass over every topic")

    monkeypatch.setattr(broker.topics, "names", no_pass)
    await create_ok(broker, "metricsin")
    monkeypatch.undo()
    assert (await create(broker, creatable("metrics.in")))["metrics.in"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


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
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 3  # "x" answered once
    assert all(r.error_message for r in resp.responses)
    assert broker.topics.get("keep") is not None


CLASH = "The provided topic name maps to an ID that was already supplied."
ZERO_ID = uuid.UUID(int=0)


async def test_delete_topics_v6_a_name_and_the_id_of_one_topic(broker):
    """Kafka's ControllerApis.deleteTopics: one answer, for the name, and nothing deleted."""
    topic_id = (await create_ok(broker, "t")).topic_id
    State = sub(20, "DeleteTopicState")

    async def delete(*entries) -> list:
        resp = await call(broker, 20, 6, req(20, topics=list(entries), timeout_ms=1))
        return [(r.name, r.topic_id, r.error_code, r.error_message) for r in resp.responses]

    clash = ("t", topic_id, ErrorCode.INVALID_REQUEST, CLASH)
    assert await delete(State(topic_id=topic_id), State(name="t")) == [clash]
    assert await delete(State(name="t"), State(topic_id=topic_id)) == [clash]
    assert await delete(State(topic_id=topic_id), State(name="t"), State(topic_id=topic_id)) == [
        (None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id."), clash]  # fmt: skip
    assert broker.topics.get("t") is not None
    assert [r[2:] for r in await delete(State(topic_id=topic_id), State(name="t"), State(name="t"))] == [
        (ErrorCode.NONE, None), (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")]  # a repeated name: no clash
    assert broker.topics.get("t") is None


async def test_delete_topics_repeats_are_answered_once_and_entries_naming_both_are_no_repeat(broker):
    ids = {name: (await create_ok(broker, name)).topic_id for name in ("a", "b")}
    State = sub(20, "DeleteTopicState")
    unknown = uuid.uuid4()
    body = req(20, topics=[State(name="a", topic_id=ids["a"]), State(name="a"), State(topic_id=unknown),
                           State(topic_id=unknown), State(name="b"), State(name="b"), State(name="b")])  # fmt: skip
    got = [(r.name, r.topic_id, r.error_code, r.error_message) for r in (await call(broker, 20, 6, body)).responses]
    assert got == [
        ("a", ids["a"], ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."),
        ("a", ids["a"], ErrorCode.NONE, None),
        (None, unknown, ErrorCode.INVALID_REQUEST, "Duplicate topic id."),
        ("b", ZERO_ID, ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]  # fmt: skip
    resp = await call(broker, 20, 5, req(20, topic_names=["b", "b"], timeout_ms=1))
    assert [(r.name, r.error_code) for r in resp.responses] == [("b", ErrorCode.INVALID_REQUEST)]
    assert broker.topics.names() == ["b"]


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
