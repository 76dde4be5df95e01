"""KIP-848's consumer protocol (``group.protocol=consumer``) with real clients against a real broker process.

* confluent-kafka 2.16.1: two members of one group split a 4-partition
  topic two and two, each reads exactly the records of its partitions and
  commits them; one leaves and the other takes all four and reads what
  follows; a new member of the group resumes from the committed offsets;
  ConsumerGroupDescribe (the admin client's ``describe_consumer_groups``)
  shows the group.
* confluent-kafka across a broker restart (same port): the group and its
  members are stored in ``__consumer_offsets`` and replayed, so the members
  carry on heartbeating with their member ids and epochs (no fencing, no
  rebalance: the broker's log shows neither), keep their partitions and
  read each record produced after the restart once; ConsumerGroupDescribe
  shows the same members with the same partitions before and after.
* the Java client 4.3, and 3.9.1 (Flink 2.0's, where the protocol was a
  preview; it sends ConsumerGroupHeartbeat v0, OffsetCommit v9, OffsetFetch
  v9 by the broker's request metrics)
  (``tests/e2e/java/ConsumerProtocolCheck.java``): two consumers subscribe,
  poll and ``commitSync``; the partitions each got, the records each read and
  the committed offsets are checked.

The broker runs with ``group.consumer.heartbeat.interval.ms`` 500 ms (and
its minimum lowered to allow it) so rebalances take a few heartbeats of
half a second, not of Kafka's default 5 s.
"""

from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupState
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient

from ..broker._admin_client import req
from .groups import create_topic, produce_keys
from .harness import raw_call
from ..java_jars import CLIENT_VERSIONS, compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]
FAST_HEARTBEATS = {"group_consumer_min_heartbeat_interval_ms": "500", "group_consumer_heartbeat_interval_ms": "500"}


def _member(bootstrap: str, group: str, name: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                     "group.protocol": "consumer", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "fetch.wait.max.ms": 100})  # fmt: skip


def _poll_until(members: list[Consumer], got: list[list], done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {[m.assignment() for m in members]}"
        for member, seen in zip(members, got):
            for msg in member.consume(num_messages=100, timeout=0.05):
                assert msg.error() is None, msg.error()
                seen.append((msg.partition(), msg.offset(), msg.key().decode()))


def _parts(member: Consumer) -> set[int]:
    return {tp.partition for tp in member.assignment()}


def _commit(member: Consumer, topic: str, seen: list) -> None:
    last = {}
    for partition, offset, _key in seen:
        last[partition] = max(last.get(partition, -1), offset)
    if last:
        member.commit(offsets=[CKTopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)


def _split_pair(broker_factory, topic: str, group: str, prefix: str) -> tuple:
    """A broker, and two members of ``group`` that have split the four partitions of a new ``topic`` 2 and 2;
    with the records each has polled so far (none)."""
    broker = broker_factory(**FAST_HEARTBEATS)
    create_topic(broker.bootstrap, topic, 4)
    members = [_member(broker.bootstrap, group, f"{prefix}{i}") for i in range(2)]
    got: list[list] = [[], []]
    for m in members:
        m.subscribe([topic])
    _poll_until(members, got, lambda: [len(_parts(m)) for m in members] == [2, 2], 30, "two partitions each")
    return broker, members, got


def test_confluent_members_split_leave_and_resume_from_commits(broker_factory):
    topic, group = "kip848-ck", "kip848-ck-group"
    broker, members, got = _split_pair(broker_factory, topic, group, "ck-")
    placed = produce_keys(broker.bootstrap, topic, [(p, f"k{p}-{i}") for p in range(4) for i in range(5)])
    _poll_until(members, got, lambda: sum(map(len, got)) == 20, 30, "every record")
    assert _parts(members[0]) | _parts(members[1]) == {0, 1, 2, 3}
    for m, seen in zip(members, got):
        assert sorted(seen) == sorted((*placed[k], k) for k in placed if placed[k][0] in _parts(m))
        _commit(m, topic, seen)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(15)
    assert described.state == ConsumerGroupState.STABLE and len(described.members) == 2
    assert sorted(len(m.assignment.topic_partitions) for m in described.members) == [2, 2]
    members[0].close()  # leaves the group (epoch -1)
    more = produce_keys(broker.bootstrap, topic, [(p, f"late{p}") for p in range(4)])
    rest: list[list] = [[]]
    _poll_until(members[1:], rest, lambda: _parts(members[1]) == {0, 1, 2, 3} and len(rest[0]) >= 4, 30,
                "all four partitions after the other member left")  # fmt: skip
    # the partitions it took over resume from the other member's commits: only the new records are read
    assert sorted(rest[0]) == sorted((*more[k], k) for k in more)
    _commit(members[1], topic, got[1] + rest[0])
    committed = members[1].committed([CKTopicPartition(topic, p) for p in range(4)], timeout=15)
    assert sorted((tp.partition, tp.offset) for tp in committed) == [(p, 6) for p in range(4)]
    members[1].close()
    final = produce_keys(broker.bootstrap, topic, [(p, f"final{p}") for p in range(4)])
    again = _member(broker.bootstrap, group, "ck-again")
    again.subscribe([topic])
    resumed: list[list] = [[]]
    _poll_until([again], resumed, lambda: len(resumed[0]) >= 4, 30, "the records after the committed offsets")
    time.sleep(0.3)
    _poll_until([again], resumed, lambda: True, 5, "nothing more")
    assert sorted(resumed[0]) == sorted((*final[k], k) for k in final)
    again.close()


def _described(broker, group: str) -> tuple:
    """ConsumerGroupDescribe's answer: state, group and assignment epochs, {member id: (member epoch, client
    id, partitions)}."""
    (g,) = raw_call(broker.port, 69, 0, req(69, group_ids=[group])).groups
    members = {m.member_id: (m.member_epoch, m.client_id,
                             sorted(p for t in m.assignment.topic_partitions for p in t.partitions))
               for m in g.members}  # fmt: skip
    return g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, members


def test_confluent_members_carry_on_across_a_broker_restart(broker_factory):
    topic, group = "kip848-restart", "kip848-restart-group"
    broker, members, got = _split_pair(broker_factory, topic, group, "ck-r")
    produce_keys(broker.bootstrap, topic, [(p, f"before{p}-{i}") for p in range(4) for i in range(3)])
    _poll_until(members, got, lambda: sum(map(len, got)) == 12, 30, "every record before the restart")
    for m, seen in zip(members, got):
        _commit(m, topic, seen)
    ids, held = [m.memberid() for m in members], [_parts(m) for m in members]
    before = _described(broker, group)
    assert before[:2] == (0, "Stable") and set(before[4]) == set(ids)
    assert broker.stop() == 0
    logged = len(broker.output)
    broker.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{broker.port}"  # the clients know this address
    broker.restart()
    after = produce_keys(broker.bootstrap, topic, [(p, f"after{p}-{i}") for p in range(4) for i in range(2)])
    later: list[list] = [[], []]
    _poll_until(members, later, lambda: sum(map(len, later)) >= 8, 40, "the records after the restart")
    time.sleep(1.5)  # three heartbeats: a fenced member would have rejoined by now
    _poll_until(members, later, lambda: True, 5, "nothing more")
    for m, seen, parts in zip(members, later, held):  # each reads its own partitions, each record once
        assert _parts(m) == parts and sorted(seen) == sorted((*after[k], k) for k in after if after[k][0] in parts)
    assert [m.memberid() for m in members] == ids
    assert _described(broker, group) == before  # same members, epochs and partitions
    restarted = "".join(broker.output[logged:])
    assert f"loaded consumer group {group} with 2 members" in restarted
    assert f"fenced from group {group}" not in restarted and "UNKNOWN_MEMBER_ID" not in restarted
    assert f"group {group}: epoch" not in restarted  # no rebalance: the group epoch did not move
    for m in members:
        m.close()


@pytest.fixture(scope="module", params=CLIENT_VERSIONS)
def consumer_protocol_classpath(request) -> str:
    return compile_java("ConsumerProtocolCheck.java", client=request.param)


def test_java_consumers_split_the_topic_and_commit(broker_factory, consumer_protocol_classpath):
    broker = broker_factory(**FAST_HEARTBEATS)
    topic, group = "kip848-java", "kip848-java-group"
    create_topic(broker.bootstrap, topic, 4)
    placed = produce_keys(broker.bootstrap, topic, [(p, f"j{p}-{i}") for p in range(4) for i in range(3)])
    result = subprocess.run(["java", "-cp", consumer_protocol_classpath, "ConsumerProtocolCheck", broker.bootstrap,
                             topic, group, str(len(placed))], capture_output=True, text=True, timeout=50)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    # a commit naming a partition that moved to the other consumer meanwhile is refused (as Kafka refuses it)
    # and made again; one naming only partitions still held must not be (KIP-1251: its epoch may be the one
    # before a heartbeat's bump, which the consumer had not read yet)
    assert [r for r in rows if r[0] == "commitfailed" and r[2] != "moved"] == []
    held = {int(r[1]): {int(p) for p in r[2].split(",") if p} for r in rows if r[0] == "assignment"}
    assert held[0] | held[1] == {0, 1, 2, 3} and not held[0] & held[1] and held[0] and held[1]
    records = [(int(r[2]), int(r[3]), r[4]) for r in rows if r[0] == "record"]
    # every record was read, each once unless a partition moved before its commit (then from the commit on)
    assert {(p, o, k) for p, o, k in records} == {(*placed[k], k) for k in placed}
    members = [r for r in rows if r[0] == "member"]
    assert len({r[3] for r in members}) == 2 and all(int(r[2]) > 0 for r in members)
    committed = {int(r[1]): int(r[2]) for r in rows if r[0] == "committed"}
    assert committed == {p: 3 for p in range(4)}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept: a dropped client fails its futures
    (g,) = admin.list_consumer_groups().result(15).valid
    assert (g.group_id, g.type.name, g.state.name) == (group, "CONSUMER", "EMPTY")
