"""ListPartitionReassignments and AlterPartitionReassignments on a single node, as Kafka answers them."""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, req, sub  # noqa: F401  (broker is a fixture)


async def test_no_reassignments_for_all_or_named_topics(broker):  # noqa: F811
    await create_ok(broker, "t", 2)
    Topic = sub(46, "ListPartitionReassignmentsTopics")
    for topics in (None, [Topic(name="t", partition_indexes=[0, 1]), Topic(name="nope", partition_indexes=[0])]):
        resp = await call(broker, 46, 0, req(46, timeout_ms=1000, topics=topics))
        assert (resp.error_code, resp.error_message, resp.topics) == (ErrorCode.NONE, None, [])


async def test_alter_reassignments_keeps_this_node_and_refuses_moves_as_kafka(broker):  # noqa: F811
    """AlterPartitionReassignments: [node] is a no-op; other brokers, duplicates, cancels are Kafka's refusals."""
    await create_ok(broker, "t", 2)
    node = broker.config.node_id
    Topic, Part = sub(45, "ReassignableTopic"), sub(45, "ReassignableTopic", "ReassignablePartition")
    plan = [Topic(name="t", partitions=[Part(partition_index=0, replicas=[node]), Part(partition_index=1, replicas=None),
                                        Part(partition_index=2, replicas=[node])]),
            Topic(name="u", partitions=[Part(partition_index=0, replicas=[node])]),
            Topic(name="t", partitions=[Part(partition_index=0, replicas=[node, node + 1]),
                                        Part(partition_index=1, replicas=[node, node]),
                                        Part(partition_index=0, replicas=[])])]  # fmt: skip
    for version in (0, 1):
        resp = await call(broker, 45, version, req(45, timeout_ms=1000, topics=plan,
                                                    allow_replication_factor_change=False))  # fmt: skip
        assert (resp.error_code, resp.error_message) == (ErrorCode.NONE, None)
        assert resp.allow_replication_factor_change is (version == 0)  # v0 has no field: the default, true
        got = [(t.name, p.partition_index, p.error_code, p.error_message) for t in resp.responses for p in t.partitions]
        assert got == [
            ("t", 0, ErrorCode.NONE, None),
            ("t", 1, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."),
            ("t", 2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:2."),
            ("u", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named u."),
            ("t", 0, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
             f"The manual partition assignment includes broker {node + 1}, but no such broker is registered."),
            ("t", 1, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
             f"The manual partition assignment includes the broker {node} more than once."),
            ("t", 0, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
             "The manual partition assignment includes an empty replica list."),
        ]  # fmt: skip
    listed = await call(broker, 46, 0, req(46, timeout_ms=1000, topics=None))
    assert listed.topics == []  # nothing was started
