"""ListPartitionReassignments: a single node never has a reassignment in progress, as Kafka then answers."""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)


async def test_no_reassignments_for_all_or_named_topics(broker):  # noqa: F811
    await create_ok(broker, "t", 2)
    Topic = sub(46, "ListPartitionReassignmentsTopics")
    for topics in (None, [Topic(name="t", partition_indexes=[0, 1]), Topic(name="nope", partition_indexes=[0])]):
        resp = await call(broker, 46, 0, req(46, timeout_ms=1000, topics=topics))
        assert (resp.error_code, resp.error_message, resp.topics) == (ErrorCode.NONE, None, [])
