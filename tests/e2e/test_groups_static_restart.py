"""KIP-345 with a real client: a static confluent-kafka member restarts, then the broker restarts.

librdkafka sends no LeaveGroup when a static member closes; its new
JoinGroup (same ``group.instance.id``, no member id) takes the old place
without a rebalance, and, as in Kafka, the group is stored with the new
member id, so the member carries on across a broker restart (before, the
restarted broker knew only the old id and fenced the live consumer).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition

from ..broker._admin_client import req
from .groups import GROUP_CONFIG, create_topic, produce_keys
from .harness import raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _static_member(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": "static-1", "client.id": "ck-static",
        "partition.assignment.strategy": "range", "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000, "heartbeat.interval.ms": 300, "fetch.wait.max.ms": 100,
    })  # fmt: skip
    consumer.subscribe([topic])
    return consumer


def _consume(consumer: Consumer, topic: str, want: int, timeout: float) -> list[str]:
    """Poll until ``want`` records came (each batch committed synchronously) and both partitions are held."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msgs = consumer.consume(num_messages=50, timeout=0.1)
        assert [m.error() for m in msgs if m.error() is not None] == []
        if msgs:
            last = {m.partition(): m.offset() for m in msgs}
            consumer.commit(offsets=[CKTopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)
            got.extend(m.key().decode() for m in msgs)
        if len(got) >= want and {tp.partition for tp in consumer.assignment()} == {0, 1}:
            return got
    raise AssertionError(f"got {got}, assignment {consumer.assignment()}")


def _members(broker, group: str) -> tuple[str, list[tuple[str, str]]]:
    (g,) = raw_call(broker.port, 15, 5, req(15, groups=[group])).groups
    return g.group_state, [(m.member_id, m.group_instance_id) for m in g.members]


def test_confluent_static_member_restart_then_broker_restart(broker_factory):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "static-restart", "static-restart-group"
    create_topic(broker.bootstrap, topic, 2)
    produce_keys(broker.bootstrap, topic, [(i % 2, f"a{i}") for i in range(4)])
    first = _static_member(broker.bootstrap, group, topic)
    assert sorted(_consume(first, topic, 4, 30)) == ["a0", "a1", "a2", "a3"]
    old_id = first.memberid()
    first.close()  # a static member leaves no LeaveGroup behind
    logged = len(broker.output)
    second = _static_member(broker.bootstrap, group, topic)
    produce_keys(broker.bootstrap, topic, [(i % 2, f"b{i}") for i in range(2)])
    assert sorted(_consume(second, topic, 2, 30)) == ["b0", "b1"]
    new_id = second.memberid()
    assert new_id != old_id and _members(broker, group) == ("Stable", [(new_id, "static-1")])
    assert f"preparing to rebalance group {group}" not in "".join(broker.output[logged:])
    assert broker.stop() == 0
    broker.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{broker.port}"  # the client knows this address
    broker.restart()
    assert _members(broker, group) == ("Stable", [(new_id, "static-1")])
    produce_keys(broker.bootstrap, topic, [(i % 2, f"c{i}") for i in range(2)])
    assert sorted(_consume(second, topic, 2, 40)) == ["c0", "c1"]  # commits and heartbeats are not fenced
    assert second.memberid() == new_id
    second.close()
