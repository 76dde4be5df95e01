"""ListOffsets, OffsetForLeaderEpoch, DeleteRecords and DescribeProducers under the ACL authorizer.

As Kafka's handlers authorize them: DESCRIBE (ListOffsets; OffsetForLeaderEpoch
unless the principal has CLUSTER_ACTION), DELETE (DeleteRecords) and READ
(DescribeProducers) per topic, checked before the topic's existence, so
every partition of a refused topic is TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import pytest

from broker.acl_model import PatternType
from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import ADMIN, make_topics, produce, records

TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED


async def list_offsets(broker, who, version: int, topics: list[tuple[str, list[int]]]) -> list[tuple]:
    T = sub(2, "ListOffsetsTopic")
    body = req(2, replica_id=-1, topics=[T(name=t, partitions=[T.ListOffsetsPartition(
        partition_index=p, timestamp=-1, max_num_offsets=1) for p in parts]) for t, parts in topics])  # fmt: skip
    resp = await call(broker, 2, version, body, connection=who)
    return [(t.name, p.partition_index, p.error_code, p.old_style_offsets if version == 0 else p.offset)
            for t in resp.topics for p in t.partitions]  # fmt: skip


@pytest.mark.parametrize("version", [0, 1, 7, 11])
async def test_list_offsets_needs_describe_and_lists_the_refused_topics_last(authz_broker, version):
    await make_topics(authz_broker, "t", "u")
    await produce(authz_broker, ADMIN, {"t": {0: records(b"a", b"b")}})
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "t")
    asked = [("u", [0, 0]), ("t", [0]), ("missing", [0])]  # u's duplicate is refused, not INVALID_REQUEST
    refused = [] if version == 0 else -1
    assert await list_offsets(authz_broker, user("bob"), version, asked) == [
        ("t", 0, 0, [2] if version == 0 else 2),
        ("u", 0, TAF, refused), ("u", 0, TAF, refused), ("missing", 0, TAF, refused)]  # fmt: skip
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "miss", PatternType.PREFIXED)  # READ implies DESCRIBE
    got = await list_offsets(authz_broker, user("bob"), version, [("missing", [0])])
    assert got == [("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, refused)]


async def end_offsets(broker, who, topics: list[tuple[str, int]], replica_id: int = -1) -> list[tuple]:
    T = sub(23, "OffsetForLeaderTopic")
    body = req(23, replica_id=replica_id, topics=[T(topic=t, partitions=[T.OffsetForLeaderPartition(
        partition=p, current_leader_epoch=-1, leader_epoch=0)]) for t, p in topics])  # fmt: skip
    resp = await call(broker, 23, 4, body, connection=who)
    return [(t.topic, p.error_code, p.leader_epoch, p.end_offset) for t in resp.topics for p in t.partitions]


async def test_offset_for_leader_epoch_needs_cluster_action_or_describe(authz_broker):
    await make_topics(authz_broker, "t", "u")
    await produce(authz_broker, ADMIN, {"t": {0: records(b"a")}})
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "t")
    asked = [("u", 0), ("missing", 0), ("t", 0)]
    for replica_id in (-1, 2):  # Kafka goes by the principal, not by replica_id
        assert await end_offsets(authz_broker, user("bob"), asked, replica_id) == [
            ("t", 0, 0, 1), ("u", TAF, -1, -1), ("missing", TAF, -1, -1)]  # fmt: skip
    grant(authz_broker, "broker2", Op.CLUSTER_ACTION, Res.CLUSTER, "kafka-cluster")
    assert await end_offsets(authz_broker, user("broker2"), asked, 2) == [
        ("u", 0, 0, 0), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1), ("t", 0, 0, 1)]  # fmt: skip


async def delete_records(broker, who, topics: dict) -> dict:
    T = sub(21, "DeleteRecordsTopic")
    body = req(21, timeout_ms=1000, topics=[T(name=t, partitions=[T.DeleteRecordsPartition(
        partition_index=p, offset=o) for p, o in parts.items()]) for t, parts in topics.items()])  # fmt: skip
    resp = await call(broker, 21, 2, body, connection=who)
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark) for t in resp.topics for p in t.partitions}


async def test_delete_records_needs_delete_before_anything_else(authz_broker):
    await make_topics(authz_broker, "t", "u")
    await produce(authz_broker, ADMIN, {"t": {0: records(b"a", b"b")}, "u": {0: records(b"c")}})
    bob = user("bob")
    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER):
        grant(authz_broker, "bob", op, Res.TOPIC, "*")
    asked = {"t": {0: 1}, "u": {0: 1}, "missing": {0: 0}, "__consumer_offsets": {0: 0}}
    assert await delete_records(authz_broker, bob, asked) == dict.fromkeys(
        [("t", 0), ("u", 0), ("missing", 0), ("__consumer_offsets", 0)], (TAF, -1))  # fmt: skip
    assert authz_broker.topics.partition("t", 0).log.log_start_offset == 0
    grant(authz_broker, "bob", Op.DELETE, Res.TOPIC, "t")
    got = await delete_records(authz_broker, bob, asked)
    assert (got[("t", 0)], got[("u", 0)]) == ((ErrorCode.NONE, 1), (TAF, -1))
    grant(authz_broker, "User:*", Op.ALL, Res.TOPIC, "*")  # ALL covers DELETE
    got = await delete_records(authz_broker, bob, asked)
    assert got[("__consumer_offsets", 0)] == (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
    assert got[("missing", 0)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)


async def describe_producers(broker, who, names: list[str]) -> list[tuple]:
    T = sub(61, "TopicRequest")
    resp = await call(broker, 61, 0, req(61, topics=[T(name=n, partition_indexes=[0]) for n in names]),
                      connection=who)  # fmt: skip
    return [(t.name, p.error_code, p.error_message) for t in resp.topics for p in t.partitions]


async def test_describe_producers_needs_read_after_the_name_check(authz_broker):
    await make_topics(authz_broker, "t")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "*")  # not READ
    names = ["bad name", "t", "missing"]
    got = await describe_producers(authz_broker, user("bob"), names)
    assert [(n, e) for n, e, _m in got] == [("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION), ("t", TAF),
                                            ("missing", TAF)]  # fmt: skip
    assert got[1][2] == got[2][2] == "Topic authorization failed."
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "t")
    got = await describe_producers(authz_broker, user("bob"), names)
    assert [(n, e) for n, e, _m in got[1:]] == [("t", ErrorCode.NONE), ("missing", TAF)]
