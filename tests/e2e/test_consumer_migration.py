"""KIP-848 online migration with real clients: a rolling switch of ``group.protocol`` and back.

confluent-kafka 2.16.1 consumers of one group read a 4-partition topic:
two with ``group.protocol=classic``; one is closed and replaced by a
``group.protocol=consumer`` member (the classic group is upgraded and the
classic member carries on inside the consumer group), then the other; and
the reverse: consumer members are replaced one by one by classic ones (the
last consumer member leaving turns the group back into a classic group).
After each step records are produced to every partition and must all be
read, each once (every member commits what it read before it is closed, so
a member taking a partition over resumes from the commit), and no partition
is ever held by two members at once (checked at every poll).
ConsumerGroupDescribe and DescribeGroups show the member types and the
group's kind along the way.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition

from ..broker._admin_client import req
from .groups import create_topic, produce_keys
from .harness import raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
FAST = {"group_consumer_min_heartbeat_interval_ms": "500", "group_consumer_heartbeat_interval_ms": "500"}
TOPIC, GROUP = "migrate", "migrate-group"


class Fleet:
    """The members running now, what each read, and the checks made at every poll."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap, self.members, self.read, self.step = bootstrap, {}, [], 0

    def start(self, name: str, protocol: str) -> None:
        conf = {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "client.id": name,
                "group.protocol": protocol, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 100}  # fmt: skip
        if protocol == "classic":
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        consumer = Consumer(conf)
        consumer.subscribe([TOPIC])
        self.members[name] = [consumer, []]

    def stop(self, name: str) -> None:
        consumer, seen = self.members.pop(name)
        self._commit(consumer, seen)
        consumer.close()

    def _commit(self, consumer: Consumer, seen: list) -> None:
        last: dict[int, int] = {}
        for partition, offset, _key in seen:
            last[partition] = max(last.get(partition, -1), offset)
        if last:
            consumer.commit(offsets=[CKTopicPartition(TOPIC, p, o + 1) for p, o in last.items()], asynchronous=False)
        seen.clear()

    def poll_until(self, done, what: str, timeout: float = 25) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            held = {n: {tp.partition for tp in c.assignment()} for n, (c, _s) in self.members.items()}
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {held}"
            everyone = [p for ps in held.values() for p in ps]
            assert len(everyone) == len(set(everyone)), f"a partition held by two members: {held}"
            for consumer, seen in self.members.values():
                for msg in consumer.consume(num_messages=100, timeout=0.05):
                    assert msg.error() is None, msg.error()
                    seen.append((msg.partition(), msg.offset(), msg.key().decode()))
                    self.read.append((msg.partition(), msg.offset(), msg.key().decode()))
                self._commit(consumer, seen)

    def produce_and_read(self) -> None:
        """Records to every partition: all read, each once, and all four partitions held."""
        self.step += 1
        placed = produce_keys(self.bootstrap, TOPIC, [(p, f"s{self.step}-{p}-{i}") for p in range(4) for i in range(3)])
        wanted = {(*placed[k], k) for k in placed}
        self.poll_until(lambda: wanted <= set(self.read) and self.held() == {0, 1, 2, 3},
                        f"the records of step {self.step}")  # fmt: skip
        assert len(self.read) == len(set(self.read)), "a record read twice"

    def held(self) -> set[int]:
        return {tp.partition for c, _s in self.members.values() for tp in c.assignment()}


def _types(broker) -> tuple[int, dict[str, int]]:
    """ConsumerGroupDescribe v1: its error, and {client id: member type} (0 classic, 1 consumer)."""
    (g,) = raw_call(broker.port, 69, 1, req(69, group_ids=[GROUP])).groups
    return g.error_code, {m.client_id: m.member_type for m in g.members}


def _classic(broker) -> tuple[int, str, list[str]]:
    """DescribeGroups v5: error, protocol type and client ids (Dead without members for a consumer group)."""
    (g,) = raw_call(broker.port, 15, 5, req(15, groups=[GROUP])).groups
    return g.error_code, g.group_state, sorted(m.client_id for m in g.members)


def _wait(fleet: Fleet, check, what: str) -> None:
    fleet.poll_until(check, what)


def test_rolling_upgrade_then_rolling_downgrade(broker_factory):
    broker = broker_factory(**FAST)
    create_topic(broker.bootstrap, TOPIC, 4)
    fleet = Fleet(broker.bootstrap)
    fleet.start("a-classic", "classic")
    fleet.start("b-classic", "classic")
    fleet.produce_and_read()
    _wait(fleet, lambda: _classic(broker)[1:] == ("Stable", ["a-classic", "b-classic"]), "a stable classic group")
    # upgrade, one instance at a time
    fleet.stop("a-classic")
    fleet.start("a-consumer", "consumer")
    _wait(fleet, lambda: _types(broker) == (0, {"b-classic": 0, "a-consumer": 1}), "a mixed group")
    fleet.produce_and_read()
    assert _classic(broker) == (0, "Dead", [])  # a consumer group now
    fleet.stop("b-classic")
    fleet.start("b-consumer", "consumer")
    _wait(fleet, lambda: _types(broker) == (0, {"a-consumer": 1, "b-consumer": 1}), "consumer members only")
    fleet.produce_and_read()
    # and back
    fleet.stop("a-consumer")
    fleet.start("a-classic2", "classic")
    _wait(fleet, lambda: _types(broker) == (0, {"b-consumer": 1, "a-classic2": 0}), "a mixed group again")
    fleet.produce_and_read()
    fleet.stop("b-consumer")  # the last consumer member: the group becomes a classic group
    fleet.start("b-classic2", "classic")
    _wait(fleet, lambda: _classic(broker)[1:] == ("Stable", ["a-classic2", "b-classic2"]), "a classic group again")
    assert _types(broker)[0] == 69  # GROUP_ID_NOT_FOUND: no consumer group
    fleet.produce_and_read()
    for name in list(fleet.members):
        fleet.stop(name)
    logged = "".join(broker.output)
    assert "upgraded classic group migrate-group to a consumer group (1 classic members)" in logged
    assert "downgraded consumer group migrate-group to a classic group (1 members)" in logged
    assert fleet.step == 5 and len(fleet.read) == 5 * 12
