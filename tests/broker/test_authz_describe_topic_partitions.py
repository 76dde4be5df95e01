"""DescribeTopicPartitions under the ACL authorizer, as Kafka's DescribeTopicPartitionsRequestHandler authorizes.

Every topic at or after the cursor needs DESCRIBE, and each denial is logged
(even for an all-topics request, unlike Metadata). All topics: the refused
ones are left out. Named: they come after the page as
TOPIC_AUTHORIZATION_FAILED with a zero id, existing or not, legal name or not,
and on every page, since the whole list is authorized at each call. The
cursor is checked before anything is authorized. Authorized operations are
the principal's.
"""

from __future__ import annotations

import logging
import uuid

from broker.acl_model import SUPPORTED_OPERATIONS, PatternType, ResourceType
from broker.handlers._admin import NO_OPERATIONS
from protocol import ErrorCode

from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import ADMIN, make_topics
from ._dtp_client import dtp, page, walk

TAF, UNKNOWN, ZERO = ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, uuid.UUID(int=0)
DESCRIBE_BIT = 1 << Op.DESCRIBE


def _denials(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kafka.authorizer.logger"]


async def test_all_topics_leaves_out_the_undescribable_and_logs_each_denial(authz_broker, caplog):
    await make_topics(authz_broker, "a", "b", "logs-x")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "logs-", PatternType.PREFIXED)  # WRITE implies DESCRIBE
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        resp = await dtp(authz_broker, who=user("bob"))
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in resp.topics] == [
        ("a", 0, DESCRIBE_BIT), ("logs-x", 0, DESCRIBE_BIT | 1 << Op.WRITE)]  # fmt: skip
    assert _denials(caplog) == [
        "Principal = User:bob is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = Topic:LITERAL:b "
        "for request = DescribeTopicPartitions based on rule DefaultDeny"]  # fmt: skip
    assert (await dtp(authz_broker, who=user("eve"))).topics == []


async def test_named_refused_topics_come_last_whether_they_exist_or_their_name_is_legal(authz_broker, caplog):
    ids = await make_topics(authz_broker, "a", "b", partitions=2)
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "ghost")
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        resp = await dtp(authz_broker, ["nope", "b", "ghost", "bad name!", "a"], who=user("bob"))
    assert page(resp) == ([("a", 0, [0, 1]), ("ghost", UNKNOWN, []), ("b", TAF, []), ("bad name!", TAF, []),
                           ("nope", TAF, [])], None)  # fmt: skip
    assert [(t.topic_id, t.topic_authorized_operations) for t in resp.topics] == [
        (ids["a"], DESCRIBE_BIT), (ZERO, DESCRIBE_BIT), (ZERO, NO_OPERATIONS), (ZERO, NO_OPERATIONS),
        (ZERO, NO_OPERATIONS)]  # fmt: skip
    assert len(_denials(caplog)) == 3


async def test_a_refused_internal_topic_is_not_flagged_internal(authz_broker):
    async with authz_broker.topics.changes:
        await authz_broker.topics.create("__consumer_offsets", 1, {})
    resp = await dtp(authz_broker, ["__consumer_offsets"], who=user("bob"))
    assert [(t.name, t.error_code, t.is_internal) for t in resp.topics] == [("__consumer_offsets", TAF, False)]
    resp = await dtp(authz_broker, ["__consumer_offsets"], who=ADMIN)
    assert [(t.name, t.error_code, t.is_internal) for t in resp.topics] == [("__consumer_offsets", 0, True)]


async def test_refused_topics_at_or_after_the_cursor_come_on_every_page(authz_broker):
    await make_topics(authz_broker, "a", partitions=2)
    await make_topics(authz_broker, "b", "c")
    for name in ("a", "c"):
        grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, name)
    assert await walk(authz_broker, ["c", "b", "a"], limit=1, who=user("bob")) == [
        ([("a", 0, [0]), ("b", TAF, [])], ("a", 1)),
        ([("a", 0, [1]), ("b", TAF, [])], ("c", 0)),
        ([("c", 0, [0])], None),
    ]


async def test_the_cursor_is_checked_before_anything_is_authorized(authz_broker, caplog):
    await make_topics(authz_broker, "a")
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        resp = await dtp(authz_broker, ["a"], cursor=("b", 0), who=user("eve"))
    assert page(resp) == ([("a", ErrorCode.INVALID_REQUEST, [])], None)
    assert _denials(caplog) == []


async def test_a_refused_empty_name_is_refused_not_a_server_error(authz_broker):
    await make_topics(authz_broker, "a")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    assert page(await dtp(authz_broker, ["", "a"], who=user("bob"))) == ([("a", 0, [0]), ("", TAF, [])], None)
    assert page(await dtp(authz_broker, ["", "a"], who=ADMIN)) == (
        [("", ErrorCode.UNKNOWN_SERVER_ERROR, []), ("a", ErrorCode.UNKNOWN_SERVER_ERROR, [])], None)


async def test_a_super_user_sees_everything_with_every_operation(authz_broker):
    await make_topics(authz_broker, "a", "b")
    resp = await dtp(authz_broker, who=ADMIN)
    every = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in resp.topics] == [("a", 0, every),
                                                                                           ("b", 0, every)]
