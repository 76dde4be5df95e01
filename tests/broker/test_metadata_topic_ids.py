"""Metadata by topic id and the topic authorized operations, as Kafka 4.x answers them.

Kafka's ``handleTopicMetadataRequest``: from v12 a request listing any non-zero
topic id is resolved by id alone. A known id gives its topic, named; an
unknown (or deleted) id gives UNKNOWN_TOPIC_ID with a null name and the id
echoed, listed first; topics named with a zero id are dropped from such a
request, and nothing is created for an id. Before v12 an id (or a null name)
makes the whole request INVALID_REQUEST. With
``include_topic_authorized_operations`` (v8+) each topic carries every TOPIC
operation (there is no authorizer); otherwise INT32_MIN.
"""

from __future__ import annotations

import uuid

import pytest

from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)

Topic = sub(3, "MetadataRequestTopic")
NO_ID = uuid.UUID(int=0)
NO_OPERATIONS = -(2**31)
# READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
ALL_TOPIC_OPERATIONS = 0b1101_1111_1000
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


async def _metadata(broker, version: int, topics, **fields):  # noqa: F811
    return await call(broker, 3, version, req(3, topics=topics, **fields))


def _entries(resp) -> list[tuple]:
    return [(t.error_code, t.name, t.topic_id, len(t.partitions)) for t in resp.topics]


@pytest.mark.parametrize("version", [12, 13])
@pytest.mark.parametrize("name", ["", None, "ignored-name"])
async def test_v12_a_known_id_gives_its_topic_named(broker, name, version):  # noqa: F811
    topic_id = (await create_ok(broker, "by-id", partitions=2)).topic_id
    await create_ok(broker, "other")
    resp = await _metadata(broker, version, [Topic(topic_id=topic_id, name=name)])
    assert _entries(resp) == [(ErrorCode.NONE, "by-id", topic_id, 2)]
    assert [b.node_id for b in resp.brokers] == [broker.config.node_id]


async def test_v12_unknown_id_is_unknown_topic_id_with_the_id_echoed(broker):  # noqa: F811
    known = (await create_ok(broker, "known")).topic_id
    unknown = uuid.uuid4()
    resp = await _metadata(broker, 12, [Topic(topic_id=known, name=None), Topic(topic_id=unknown, name=None)])
    assert _entries(resp) == [(ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, 0), (ErrorCode.NONE, "known", known, 1)]
    assert resp.topics[0].is_internal is False


async def test_v12_a_deleted_topics_id_is_unknown(broker):  # noqa: F811
    topic_id = (await create_ok(broker, "gone")).topic_id
    deleted = await call(broker, 20, 5, req(20, topic_names=["gone"], timeout_ms=1000))
    assert deleted.responses[0].error_code == ErrorCode.NONE
    resp = await _metadata(broker, 12, [Topic(topic_id=topic_id, name="")])
    assert _entries(resp) == [(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id, 0)]


async def test_v12_no_auto_creation_for_an_id(broker):  # noqa: F811
    assert broker.config.auto_create_topics_enable
    unknown = uuid.uuid4()
    resp = await _metadata(broker, 12, [Topic(topic_id=unknown, name="fresh")], allow_auto_topic_creation=True)
    assert _entries(resp) == [(ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, 0)]
    assert broker.topics.names() == []


async def test_v12_with_an_id_topics_named_without_one_are_dropped(broker):  # noqa: F811
    """Kafka resolves such a request by its ids alone; a name with a zero id is not looked at (nor created)."""
    topic_id = (await create_ok(broker, "by-id")).topic_id
    await create_ok(broker, "by-name")
    asked = [Topic(name="by-name"), Topic(topic_id=topic_id, name=""), Topic(name="new-one"), Topic(topic_id=topic_id)]
    resp = await _metadata(broker, 12, asked, allow_auto_topic_creation=True)
    assert _entries(resp) == [(ErrorCode.NONE, "by-id", topic_id, 1)]
    assert "new-one" not in broker.topics.names()


@pytest.mark.parametrize("version", [10, 11])
async def test_before_v12_an_id_makes_the_request_invalid(broker, version):  # noqa: F811
    topic_id = (await create_ok(broker, "by-id")).topic_id
    resp = await _metadata(broker, version, [Topic(name="by-id"), Topic(topic_id=topic_id, name="")])
    assert _entries(resp) == [(ErrorCode.INVALID_REQUEST, "by-id", NO_ID, 0),
                              (ErrorCode.INVALID_REQUEST, "", topic_id, 0)]  # fmt: skip
    assert resp.brokers == []


@pytest.mark.parametrize("version", [10, 11])
async def test_before_v12_a_null_name_makes_the_request_invalid(broker, version):  # noqa: F811
    resp = await _metadata(broker, version, [Topic(name=None)])
    assert _entries(resp) == [(ErrorCode.INVALID_REQUEST, "", NO_ID, 0)]


@pytest.mark.parametrize("version", [12, 13])
async def test_a_null_name_without_any_id_fails_as_kafka(broker, version):  # noqa: F811
    """Kafka looks the null name up and fails with a NullPointerException: UNKNOWN_SERVER_ERROR for all, and
    from v13 at the top level too (its ``getErrorResponse``)."""
    await create_ok(broker, "named")
    resp = await _metadata(broker, version, [Topic(name="named"), Topic(name=None)])
    assert _entries(resp) == [(ErrorCode.UNKNOWN_SERVER_ERROR, "named", NO_ID, 0),
                              (ErrorCode.UNKNOWN_SERVER_ERROR, "", NO_ID, 0)]  # fmt: skip
    assert resp.brokers == []
    assert resp.error_code == (ErrorCode.UNKNOWN_SERVER_ERROR if version >= 13 else ErrorCode.NONE)


async def test_v13_the_top_level_error_is_none_when_answered(broker):  # noqa: F811
    """KIP-1102's top-level error: Kafka never asks for a re-bootstrap, even for unknown topics and ids."""
    topic_id = (await create_ok(broker, "here")).topic_id
    by_name = await _metadata(broker, 13, [Topic(name="here"), Topic(name="absent")], allow_auto_topic_creation=False)
    assert _entries(by_name) == [(ErrorCode.NONE, "here", topic_id, 1),
                                 (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "absent", NO_ID, 0)]  # fmt: skip
    by_id = await _metadata(broker, 13, [Topic(topic_id=uuid.uuid4())])
    assert _entries(by_id)[0][0] == ErrorCode.UNKNOWN_TOPIC_ID
    assert (by_name.error_code, by_id.error_code) == (ErrorCode.NONE, ErrorCode.NONE)


@pytest.mark.parametrize("version", [10, 12, 13])
async def test_v10_plus_by_name_answers_the_topic_id(broker, version):  # noqa: F811
    topic_id = (await create_ok(broker, "named")).topic_id
    resp = await _metadata(broker, version, [Topic(name="named")])
    assert _entries(resp) == [(ErrorCode.NONE, "named", topic_id, 1)]


async def test_duplicate_names_and_ids_are_answered_once(broker):  # noqa: F811
    topic_id = (await create_ok(broker, "twice")).topic_id
    by_name = await _metadata(broker, 12, [Topic(name="twice"), Topic(name="twice")])
    assert _entries(by_name) == [(ErrorCode.NONE, "twice", topic_id, 1)]
    by_id = await _metadata(broker, 12, [Topic(topic_id=topic_id), Topic(topic_id=topic_id)])
    assert _entries(by_id) == [(ErrorCode.NONE, "twice", topic_id, 1)]


async def test_an_illegal_name_not_created_is_invalid_topic(broker):  # noqa: F811
    resp = await _metadata(broker, 9, [Topic(name="bad name")], allow_auto_topic_creation=False)
    assert _entries(resp) == [(ErrorCode.INVALID_TOPIC_EXCEPTION, "bad name", NO_ID, 0)]


@pytest.mark.parametrize("version", [8, 9, 10, 11, 12, 13])
async def test_topic_authorized_operations_when_asked(broker, version):  # noqa: F811
    await create_ok(broker, "ops")
    asked = [Topic(name="ops"), Topic(name="missing")]
    resp = await _metadata(broker, version, asked, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=True)  # fmt: skip
    assert [(t.name, t.topic_authorized_operations) for t in resp.topics] == [
        ("ops", ALL_TOPIC_OPERATIONS), ("missing", ALL_TOPIC_OPERATIONS)]  # fmt: skip
    plain = await _metadata(broker, version, [Topic(name="ops")])
    assert plain.topics[0].topic_authorized_operations == NO_OPERATIONS


async def test_topic_authorized_operations_by_id_skip_unknown_ids(broker):  # noqa: F811
    topic_id = (await create_ok(broker, "ops")).topic_id
    asked = [Topic(topic_id=topic_id), Topic(topic_id=uuid.uuid4())]
    resp = await _metadata(broker, 12, asked, include_topic_authorized_operations=True)
    assert [(t.name, t.topic_authorized_operations) for t in resp.topics] == [
        (None, NO_OPERATIONS), ("ops", ALL_TOPIC_OPERATIONS)]  # fmt: skip


@pytest.mark.parametrize("version", [8, 10])
async def test_cluster_authorized_operations_v8_to_v10(broker, version):  # noqa: F811
    asked = await _metadata(broker, version, [], include_cluster_authorized_operations=True)
    assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS
    plain = await _metadata(broker, version, [])
    assert plain.cluster_authorized_operations == NO_OPERATIONS
