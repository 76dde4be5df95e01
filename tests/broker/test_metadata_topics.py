"""Which topics a Metadata request gets, as Kafka decides it.

librdkafka's first request on a connection is a "brokers only" Metadata with
an empty topic list, and it relies on Kafka's rule: from v1 on, an empty list
asks for no topics and a null list for all of them (v0 has no null, so empty
means all there). Named topics are answered in the order asked, unknown ones
with UNKNOWN_TOPIC_OR_PARTITION, or created when the request (v4+; before
v4 it has no say) and ``auto.create.topics.enable`` both allow it.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)

Topic = sub(3, "MetadataRequestTopic")


async def _names(broker, version: int, topics, create: bool = False) -> list[tuple[str, int]]:  # noqa: F811
    fields = {"allow_auto_topic_creation": create} if version >= 4 else {}
    resp = await call(broker, 3, version, req(3, topics=topics, **fields))
    assert [b.node_id for b in resp.brokers] == [broker.config.node_id]
    return [(t.name, t.error_code) for t in resp.topics]


@pytest.mark.parametrize("version", [1, 4, 9, 12])
async def test_empty_list_asks_for_no_topics_and_null_for_all(broker, version):  # noqa: F811
    await create_ok(broker, "b-topic")
    await create_ok(broker, "a-topic")
    assert await _names(broker, version, []) == []
    assert sorted(await _names(broker, version, None)) == [("a-topic", 0), ("b-topic", 0)]


async def test_v0_empty_list_asks_for_all_topics(broker):  # noqa: F811
    await create_ok(broker, "a-topic")
    assert await _names(broker, 0, []) == [("a-topic", 0)]


@pytest.mark.parametrize("version", [4, 9, 12])
async def test_named_topics_in_the_order_asked_unknown_ones_flagged(broker, version):  # noqa: F811
    await create_ok(broker, "a-topic")
    await create_ok(broker, "b-topic")
    asked = [Topic(name=n) for n in ("b-topic", "missing", "a-topic")]
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await _names(broker, version, asked) == [("b-topic", 0), ("missing", unknown), ("a-topic", 0)]
    assert "missing" not in broker.topics.names()


async def test_auto_creation_needs_the_request_to_allow_it(broker):  # noqa: F811
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert await _names(broker, 9, [Topic(name="made")], create=False) == [("made", unknown)]
    assert "made" not in broker.topics.names()
    created = await _names(broker, 9, [Topic(name="made")], create=True)
    assert created[0][0] == "made" and "made" in broker.topics.names()
    assert await _names(broker, 9, [Topic(name="made")]) == [("made", 0)]


async def test_before_v4_an_unknown_named_topic_is_created(broker):  # noqa: F811
    """v0-v3 have no allow_auto_topic_creation: the broker's setting alone decides, as in Kafka."""
    await _names(broker, 1, [Topic(name="old-client")])
    assert "old-client" in broker.topics.names()
