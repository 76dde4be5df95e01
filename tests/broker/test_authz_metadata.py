"""Metadata under the ACL authorizer, as Kafka's ``handleTopicMetadataRequest`` authorizes it.

Listings of all topics leave out the topics the principal may not DESCRIBE
(and log no denial); named ones answer them TOPIC_AUTHORIZATION_FAILED,
existing or not; topics asked by id answer them with a null name and the id.
Auto-creation needs CREATE on the cluster or on the topic. The authorized
operations bit fields are the principal's.
"""

from __future__ import annotations

import logging
import uuid

import pytest

from broker.acl_model import SUPPORTED_OPERATIONS, PatternType, ResourceType
from broker.handlers._admin import NO_OPERATIONS
from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import ADMIN, make_topics

TAF, ZERO = ErrorCode.TOPIC_AUTHORIZATION_FAILED, uuid.UUID(int=0)
Topic = sub(3, "MetadataRequestTopic")


async def metadata(broker, who, version: int, topics, create: bool = False, ops: bool = False):
    fields = {"allow_auto_topic_creation": create} if version >= 4 else {}
    if version >= 8:
        fields.update(include_topic_authorized_operations=ops)
    if 8 <= version <= 10:
        fields.update(include_cluster_authorized_operations=ops)
    return await call(broker, 3, version, req(3, topics=topics, **fields), connection=who)


def entries(resp) -> list[tuple]:
    return [(t.name, t.error_code, len(t.partitions)) for t in resp.topics]


@pytest.mark.parametrize("version", [0, 1, 9, 12])
async def test_a_listing_of_all_topics_leaves_out_the_undescribable_and_logs_nothing(authz_broker, version, caplog):
    await make_topics(authz_broker, "a", "b", "logs-x")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "logs-", PatternType.PREFIXED)  # WRITE implies DESCRIBE
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        resp = await metadata(authz_broker, user("bob"), version, [] if version == 0 else None)
    assert sorted(entries(resp)) == [("a", 0, 1), ("logs-x", 0, 1)]
    assert not [r for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert entries(await metadata(authz_broker, user("eve"), version, [] if version == 0 else None)) == []


@pytest.mark.parametrize("version", [1, 4, 12])
async def test_a_named_topic_it_may_not_describe_is_refused_existing_or_not(authz_broker, version, caplog):
    ids = await make_topics(authz_broker, "a", "b")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    asked = [Topic(name=n) for n in ("b", "nope", "a")]
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        resp = await metadata(authz_broker, user("bob"), version, asked)
    assert entries(resp) == [("a", 0, 1), ("b", TAF, 0), ("nope", TAF, 0)]  # the refused ones last
    if version >= 10:
        assert [t.topic_id for t in resp.topics] == [ids["a"], ZERO, ZERO]
    assert "nope" not in authz_broker.topics.names()  # never auto-created
    assert sum("Denied operation = DESCRIBE" in r.getMessage() for r in caplog.records) == 2


async def test_by_id_a_refused_topic_keeps_its_id_and_loses_its_name(authz_broker):
    ids = await make_topics(authz_broker, "a", "b")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "a")
    nobody = uuid.uuid4()
    resp = await metadata(authz_broker, user("bob"), 12, [Topic(topic_id=i) for i in (ids["b"], nobody, ids["a"])])
    assert [(t.name, t.topic_id, t.error_code) for t in resp.topics] == [
        (None, nobody, ErrorCode.UNKNOWN_TOPIC_ID), ("a", ids["a"], 0), (None, ids["b"], TAF)]  # fmt: skip


async def test_auto_creation_needs_create_on_the_cluster_or_the_topic(authz_broker):
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "*")
    bob = user("bob")
    asked = [Topic(name=n) for n in ("new-1", "new-2")]
    assert entries(await metadata(authz_broker, bob, 9, asked, create=True)) == [("new-1", TAF, 0), ("new-2", TAF, 0)]
    assert entries(await metadata(authz_broker, bob, 9, asked)) == [
        ("new-1", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0), ("new-2", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
    assert not {"new-1", "new-2"} & set(authz_broker.topics.names())
    grant(authz_broker, "bob", Op.CREATE, Res.TOPIC, "new-2")
    assert entries(await metadata(authz_broker, bob, 9, asked, create=True)) == [("new-2", 0, 3), ("new-1", TAF, 0)]
    grant(authz_broker, "bob", Op.CREATE, Res.CLUSTER, "kafka-cluster")
    assert entries(await metadata(authz_broker, bob, 1, asked)) == [("new-1", 0, 3), ("new-2", 0, 3)]  # v1: always
    assert entries(await metadata(authz_broker, user("eve"), 9, [Topic(name="new-3")], create=True)) == [
        ("new-3", TAF, 0)]  # no DESCRIBE: refused before creation is considered  # fmt: skip


async def test_an_internal_topic_it_may_not_create_is_flagged_internal(authz_broker):
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "*")
    assert authz_broker.topics.get("__transaction_state") is None
    resp = await metadata(authz_broker, user("bob"), 9, [Topic(name="__transaction_state")], create=True)
    assert [(t.name, t.error_code, t.is_internal) for t in resp.topics] == [("__transaction_state", TAF, True)]


async def test_authorized_operations_are_the_principals(authz_broker):
    await make_topics(authz_broker, "a", "b")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "a")
    asked = [Topic(name="a"), Topic(name="b")]
    resp = await metadata(authz_broker, user("bob"), 10, asked, ops=True)
    assert [(t.name, t.topic_authorized_operations) for t in resp.topics] == [
        ("a", 1 << Op.READ | 1 << Op.DESCRIBE), ("b", NO_OPERATIONS)]  # fmt: skip
    assert resp.cluster_authorized_operations == 0  # no DESCRIBE on the cluster
    grant(authz_broker, "bob", Op.DESCRIBE, Res.CLUSTER, "kafka-cluster")
    grant(authz_broker, "bob", Op.IDEMPOTENT_WRITE, Res.CLUSTER, "kafka-cluster")
    resp = await metadata(authz_broker, user("bob"), 10, asked, ops=True)
    assert resp.cluster_authorized_operations == 1 << Op.DESCRIBE | 1 << Op.IDEMPOTENT_WRITE
    admin = await metadata(authz_broker, ADMIN, 10, asked, ops=True)
    assert [t.topic_authorized_operations for t in admin.topics] == [sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])] * 2
    assert admin.cluster_authorized_operations == sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.CLUSTER])
    plain = await metadata(authz_broker, ADMIN, 10, asked)
    assert plain.cluster_authorized_operations == NO_OPERATIONS
    assert (await metadata(authz_broker, user("bob"), 11, asked, ops=True)).cluster_authorized_operations == \
        NO_OPERATIONS  # v11+: DescribeCluster's job  # fmt: skip
