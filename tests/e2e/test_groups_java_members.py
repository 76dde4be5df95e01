"""Classic consumer groups of several Java members (one JVM each, ``java_members``) against a real broker.

* members join, leave and crash while records are produced: with ``range``
  (eager: every member gives up all its partitions at each rebalance) and
  ``cooperative-sticky`` (incremental: a join takes two rebalances and only
  the moved partitions are revoked); a second and third member join, one
  leaves (LeaveGroup), one is killed (its partitions move once the session
  times out); every record is committed exactly once across the group, the
  members' own view of their assignments matches DescribeGroups, and the
  runs, longer than the heartbeat interval, send Heartbeat; the clients log
  no warning;
* static members (KIP-345): the leader and then the follower restart within
  the session timeout and get their partitions back without a rebalance (the
  generation stays, the other member sees no listener call), the leader told
  by JoinGroup v9 to skip the assignment.
"""

from __future__ import annotations

import pytest

from .groups import GROUP_CONFIG, create_topic
from .java_members import Feeder, JavaMember, client_warnings, consumed, describe, wait_consumed, wait_owned

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

PARTS = 6
DYNAMIC = {"session.timeout.ms": "3000", "heartbeat.interval.ms": "300"}


def _heartbeat_versions(broker) -> set[str]:
    """The Heartbeat versions the broker's request metrics counted."""
    counted = [(dict(labels), value) for (name, labels), value in broker.scrape().items()
               if name == "kafka_network_requestmetrics_requests_total"]  # fmt: skip
    return {labels["version"] for labels, value in counted if labels.get("request") == "Heartbeat" and value}


@pytest.mark.parametrize(("client", "assignor"), [
    ("3.9", "RangeAssignor"),
    ("3.9", "CooperativeStickyAssignor"),
    ("4.3", "CooperativeStickyAssignor"),
])  # fmt: skip
def test_java_members_join_leave_and_crash(broker_factory, client, assignor):
    from ..java_jars import compile_java

    classpath = compile_java("GroupConsumer.java", client=client)
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "jm-topic", f"jm-{assignor}"
    create_topic(broker.bootstrap, topic, PARTS)
    feeder = Feeder(broker.bootstrap, topic, PARTS, "jm")
    members: list[JavaMember] = []

    def join(name: str) -> JavaMember:
        members.append(JavaMember(classpath, broker.bootstrap, topic, group, assignor, name, **DYNAMIC))
        return members[-1]

    try:
        m0 = join("m0")
        wait_owned([m0], [set(range(PARTS))], PARTS)
        feeder.batch(30)
        feeder.start()  # records keep coming while members join and leave
        m1 = join("m1")
        wait_owned([m0, m1], None, PARTS)
        _check_join(assignor, m0, m1, lambda: _rebalances(broker))
        m2 = join("m2")
        wait_owned([m0, m1, m2], None, PARTS)
        assert sorted(len(m.owned()) for m in (m0, m1, m2)) == [2, 2, 2]
        _check_described(broker.bootstrap, group, [m0, m1, m2])
        m1.stop()  # LeaveGroup: m0 and m2 share its partitions at once
        wait_owned([m0, m2], None, PARTS)
        _check_described(broker.bootstrap, group, [m0, m2])
        feeder.pause()  # m2 crashes idle: whatever it printed was committed
        wait_consumed(members, feeder)
        m2.kill()  # no LeaveGroup: its partitions move when its session times out
        wait_owned([m0], [set(range(PARTS))], PARTS)
        feeder.batch(30)
        wait_consumed(members, feeder)
        _check_described(broker.bootstrap, group, [m0])
        m0.stop()
        assert consumed(members) == feeder.expected()  # each record committed once, none lost
        assert describe(broker.bootstrap, group) == ("EMPTY", {})
        assert _heartbeat_versions(broker) == {"4"}  # both clients' newest
        assert client_warnings(members) == []
    finally:
        feeder.pause()
        for m in members:
            m.close()


def _rebalances(broker) -> str:
    """The broker's log lines about the group's rebalances, for a failure's message."""
    return "".join(line for line in broker.output if "rebalance" in line or "generation" in line)


def _check_join(assignor: str, m0: JavaMember, m1: JavaMember, rebalances) -> None:
    """What the first member went through when the second joined."""
    kept, moved = m0.owned(), m1.owned()
    assert sorted(map(len, (kept, moved))) == [3, 3]
    events = m0.events()[1:]  # after its first assignment of all partitions
    if assignor == "RangeAssignor":  # eager: all revoked, then the new assignment
        assert events == [("revoked", set(range(PARTS))), ("assigned", kept)], (m0.details(), rebalances())
    else:  # incremental: the moved ones revoked (first rebalance), nothing new for it (second)
        assert [kind for kind, _ in events] == ["revoked", "assigned", "assigned"], (m0.details(), rebalances())
        assert events[0][1] == moved and events[1][1] == events[2][1] == set(), m0.details()
        # one rebalance gives m1 nothing (its partitions are still m0's), the next hands them over; m1 may miss
        # the first if m0 rejoins before m1's SyncGroup (REBALANCE_IN_PROGRESS, as in Kafka's ClassicGroup)
        assert m1.generations() in (m0.generations()[1:], m0.generations()[2:]), (m1.details(), rebalances())


def _check_described(bootstrap: str, group: str, members: list[JavaMember]) -> None:
    """DescribeGroups shows the group Stable with each member's assignment as the member sees it."""
    state, assigned = describe(bootstrap, group)
    assert (state, assigned) == ("STABLE", {m.name: m.owned() for m in members})


@pytest.mark.parametrize("client", ["3.9"])
def test_java_static_members_restart_without_rebalance(broker_factory, client):
    from ..java_jars import compile_java

    classpath = compile_java("GroupConsumer.java", client=client)
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "jm-static", "jm-static-group"
    create_topic(broker.bootstrap, topic, PARTS)
    feeder = Feeder(broker.bootstrap, topic, PARTS, "st")
    members: list[JavaMember] = []

    def start(name: str) -> JavaMember:
        props = {"group.instance.id": f"static-{name}", "session.timeout.ms": "15000", "heartbeat.interval.ms": "300"}
        members.append(JavaMember(classpath, broker.bootstrap, topic, group, "RangeAssignor", name, **props))
        return members[-1]

    try:
        leader = start("s0")
        wait_owned([leader], [set(range(PARTS))], PARTS)
        follower = start("s1")
        wait_owned([leader, follower], None, PARTS)
        feeder.batch(30)
        wait_consumed(members, feeder)
        generation = follower.generations()[-1]
        before = {m.name: m.owned() for m in (leader, follower)}
        for old in (leader, follower):  # the leader first: JoinGroup v9 names it leader, skip_assignment
            other = follower if old is leader else members[-1]
            seen = len(other.events())
            old.stop()  # a static member's close sends no LeaveGroup
            feeder.batch(12)
            new = start(old.name)
            wait_owned([new], [before[old.name]], PARTS)
            wait_consumed(members, feeder)
            assert new.generations() == [generation], new.details()  # no rebalance: the same generation
            assert len(other.events()) == seen, other.details()  # the other member saw nothing
            _check_described(broker.bootstrap, group, [new, other])
        assert consumed(members) == feeder.expected()
        assert client_warnings(members) == []
    finally:
        for m in members:
            m.close()
