"""ElectLeaders on one node: every partition already has its preferred leader, as Kafka answers then."""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)

TP = sub(43, "TopicPartitions")
NOT_NEEDED = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")


def _results(resp) -> dict:
    return {(r.topic, p.partition_id): (p.error_code, p.error_message)
            for r in resp.replica_election_results for p in r.partition_result}  # fmt: skip


@pytest.mark.parametrize(("version", "election_type"), [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)])
async def test_named_partitions_need_no_election(broker, version, election_type):  # noqa: F811
    await create_ok(broker, "t", 2)
    topics = [TP(topic="t", partitions=[0, 1, 5]), TP(topic="nope", partitions=[0])]
    resp = await call(broker, 43, version, req(43, election_type=election_type, topic_partitions=topics,
                                               timeout_ms=1000))  # fmt: skip
    assert resp.error_code == ErrorCode.NONE
    assert _results(resp) == {
        ("t", 0): NOT_NEEDED, ("t", 1): NOT_NEEDED,
        ("t", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-5"),
        ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope"),
    }  # fmt: skip


async def test_all_partitions_lists_each_topic_with_none_needing_an_election(broker):  # noqa: F811
    await create_ok(broker, "b", 2)
    await create_ok(broker, "a", 1)
    resp = await call(broker, 43, 2, req(43, election_type=0, topic_partitions=None, timeout_ms=1000))
    assert [(r.topic, r.partition_result) for r in resp.replica_election_results] == [("a", []), ("b", [])]


async def test_an_unknown_election_type_fails_the_request(broker):  # noqa: F811
    await create_ok(broker, "t", 1)
    body = req(43, election_type=7, topic_partitions=[TP(topic="t", partitions=[0])], timeout_ms=1000)
    resp = await call(broker, 43, 1, body)
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    assert _results(resp) == {("t", 0): (ErrorCode.INVALID_REQUEST, "Unknown election type 7")}
    assert (await call(broker, 43, 2, req(43, election_type=2, topic_partitions=None))).replica_election_results == []
