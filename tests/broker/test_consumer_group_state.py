"""The KIP-848 state machine (``ConsumerCoordinator``) alone: fake topics, an injected clock, no broker.

Covers joins, revocation before reassignment, leaving, session and rebalance
timeouts, static membership, subscription and partition-count changes, the
uniform and range assignors and the coordinator's error paths (the wire
format and the handler's checks are ``test_consumer_group_heartbeat``'s).
"""

from __future__ import annotations

import types
import uuid

import pytest

from broker.groups import assignors
from broker.groups.consumer_coordinator import ConsumerCoordinator
from broker.groups.consumer_member import as_owned
from broker.groups.consumer_requests import GroupError, Heartbeat
from protocol import ErrorCode


class Topics:
    """What the coordinator reads of the topic registry."""

    def __init__(self) -> None:
        self.topics: dict[str, types.SimpleNamespace] = {}

    def add(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.uuid5(uuid.NAMESPACE_OID, name)
        self.topics[name] = types.SimpleNamespace(topic_id=topic_id, num_partitions=partitions)
        return topic_id

    def get(self, name):
        return self.topics.get(name)

    def names(self):
        return list(self.topics)

    def snapshot(self):
        return dict(self.topics)

    def name_for_id(self, topic_id):
        return next(n for n, t in self.topics.items() if t.topic_id == topic_id)


class Clock:
    now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def env():
    topics, clock = Topics(), Clock()
    config = types.SimpleNamespace(group_consumer_max_size=100, group_consumer_assignors=("uniform", "range"))
    settings = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 5_000}
    coordinator = ConsumerCoordinator(config, {}, topics, clock, lambda _g, key: settings[key])
    return types.SimpleNamespace(c=coordinator, topics=topics, clock=clock, t=topics.add("t", 6))


def join(env, member_id, topics=("t",), **kw):
    return env.c.heartbeat(Heartbeat("g", member_id, 0, rebalance_timeout_ms=kw.pop("rebalance", 10_000),
                                     subscribed_topic_names=list(topics), owned=[], **kw))  # fmt: skip


def beat(env, member_id, epoch, assignment=None, **kw):
    return env.c.heartbeat(Heartbeat("g", member_id, epoch, owned=as_owned(assignment or {}), **kw))


def group(env):
    return env.c.groups["g"]


def test_first_member_gets_everything_and_the_group_is_stable(env):
    a = join(env, "a")
    assert (a.member_epoch, a.assignment, a.heartbeat_interval_ms) == (1, {env.t: frozenset(range(6))}, 5_000)
    assert (group(env).state, group(env).group_epoch, group(env).assignment_epoch) == ("Stable", 1, 1)
    assert env.c.dirty == {("g", None), ("g", "a")}
    again = beat(env, "a", 1, a.assignment)
    assert (again.member_epoch, again.assignment) == (1, None)  # nothing changed: no assignment sent


def test_partitions_move_only_after_the_owner_revokes_them(env):
    a = join(env, "a")
    b = join(env, "b")
    assert (b.member_epoch, b.assignment, group(env).state) == (2, {}, "Reconciling")
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, a.assignment) == (1, {env.t: frozenset({0, 1, 2})})  # still epoch 1: revoking 3-5
    assert beat(env, "b", 2).assignment is None  # 3-5 are still a's
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, a.assignment) == (2, None)
    b = beat(env, "b", 2)
    assert (b.member_epoch, b.assignment) == (2, {env.t: frozenset({3, 4, 5})})
    assert group(env).state == "Stable"


def test_leave_and_rejoin(env):
    a = join(env, "a")
    join(env, "b")
    left = beat(env, "b", -1)
    assert (left.member_id, left.member_epoch) == ("b", -1) and group(env).group_epoch == 3
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, a.assignment) == (3, None)  # kept everything: nothing to send
    with pytest.raises(GroupError) as gone:
        beat(env, "b", 2)
    assert gone.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_expiry(env):
    join(env, "a")
    env.clock.now += 44_999
    env.c.tick()
    assert "a" in group(env).members
    env.clock.now += 1
    env.c.tick()
    assert (group(env).members, group(env).group_epoch, group(env).state) == ({}, 2, "Empty")


def test_rebalance_timeout_fences_a_member_that_keeps_its_partitions(env):
    a = join(env, "a", rebalance=3_000)
    join(env, "b")
    a = beat(env, "a", 1, a.assignment)
    env.clock.now += 2_999
    beat(env, "a", 1, {env.t: frozenset(range(6))})  # still owns 3-5: no progress, the timer runs on
    env.c.tick()
    assert "a" in group(env).members
    env.clock.now += 1
    env.c.tick()
    assert list(group(env).members) == ["b"]


def test_rebalance_timer_is_dropped_once_the_member_revoked(env):
    a = join(env, "a", rebalance=3_000)
    join(env, "b")
    a = beat(env, "a", 1, a.assignment)
    beat(env, "a", 1, a.assignment)
    env.clock.now += 3_000
    env.c.tick()
    assert sorted(group(env).members) == ["a", "b"]


def test_static_member_leaves_and_rejoins_with_its_partitions(env):
    a = join(env, "a1", instance_id="i")
    join(env, "b")
    a = beat(env, "a1", 1, a.assignment, instance_id="i")
    a = beat(env, "a1", 1, a.assignment, instance_id="i")
    held = a.assignment or {env.t: frozenset({0, 1, 2})}
    assert beat(env, "a1", -2, instance_id="i").member_epoch == -2
    assert group(env).members["a1"].assigned == held and group(env).state == "Reconciling"
    back = join(env, "a2", instance_id="i")
    assert (back.member_epoch, back.assignment) == (2, held)
    assert "a1" not in group(env).members and group(env).static_members == {"i": "a2"}
    assert group(env).group_epoch == 2  # no rebalance for a static member coming back


def test_static_member_that_does_not_return_is_expired(env):
    join(env, "a1", instance_id="i")
    beat(env, "a1", -2, instance_id="i")
    env.clock.now += 45_000
    env.c.tick()
    assert group(env).members == {}


def test_subscription_change_revokes_the_topics_left(env):
    u = env.topics.add("u", 2)
    a = join(env, "a", topics=("t", "u"))
    assert a.assignment == {env.t: frozenset(range(6)), u: frozenset({0, 1})}
    a = env.c.heartbeat(Heartbeat("g", "a", 1, subscribed_topic_names=["u"], owned=as_owned(a.assignment)))
    assert (a.member_epoch, a.assignment) == (1, {u: frozenset({0, 1})})  # t to be revoked first
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, group(env).group_epoch, group(env).state) == (2, 2, "Stable")


def test_more_partitions_bump_the_epoch_and_are_assigned(env):
    a = join(env, "a")
    env.topics.topics["t"].num_partitions = 8
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, a.assignment) == (2, {env.t: frozenset(range(8))})


def test_topics_that_do_not_exist_yet_are_assigned_when_created(env):
    a = join(env, "a", topics=("later",))
    assert a.assignment == {}
    later = env.topics.add("later", 3)
    a = beat(env, "a", 1, a.assignment)
    assert (a.member_epoch, a.assignment) == (2, {later: frozenset({0, 1, 2})})


def test_regex_subscription_follows_new_topics(env):
    a = env.c.heartbeat(Heartbeat("g", "a", 0, rebalance_timeout_ms=1, subscribed_topic_regex="t.*", owned=[]))
    assert a.assignment == {env.t: frozenset(range(6))}
    t2 = env.topics.add("t2", 1)
    env.topics.add("x", 1)
    a = beat(env, "a", 1, a.assignment)
    assert a.assignment == {env.t: frozenset(range(6)), t2: frozenset({0})}
    hidden = env.c.heartbeat(Heartbeat("g", "b", 0, rebalance_timeout_ms=1, subscribed_topic_regex="x|t2", owned=[]),
                             may_describe=lambda name: name != "x")  # fmt: skip
    assert group(env).resolved_regexes["x|t2"] == frozenset({"t2"}) and hidden.member_epoch == 3


def test_range_and_uniform_assignors(env):
    u = env.topics.add("u", 3)
    members = [assignors.MemberSpec(m, None, frozenset({env.t, u}), {}) for m in ("m2", "m1")]
    ranged = assignors.assign("range", members, {env.t: 6, u: 3})
    assert ranged == {"m1": {env.t: frozenset({0, 1, 2}), u: frozenset({0, 1})},
                      "m2": {env.t: frozenset({3, 4, 5}), u: frozenset({2})}}  # fmt: skip
    uniform = assignors.assign("uniform", members, {env.t: 6, u: 3})
    assert sorted(sum(map(len, a.values())) for a in uniform.values()) == [4, 5]
    assert set().union(*(a.get(env.t, ()) for a in uniform.values())) == set(range(6))
    sticky = assignors.assign("uniform", [assignors.MemberSpec("m1", None, frozenset({env.t}), {env.t: frozenset({5})}),
                                          assignors.MemberSpec("m2", None, frozenset({env.t}), {})], {env.t: 6})
    assert 5 in sticky["m1"][env.t] and len(sticky["m1"][env.t]) == len(sticky["m2"][env.t]) == 3


def test_heterogeneous_uniform_is_balanced(env):
    u = env.topics.add("u", 4)
    members = [assignors.MemberSpec("a", None, frozenset({env.t, u}), {}),
               assignors.MemberSpec("b", None, frozenset({u}), {})]  # fmt: skip
    out = assignors.assign("uniform", members, {env.t: 6, u: 4})
    assert out["a"][env.t] == frozenset(range(6)) and out["b"] == {u: frozenset(range(4))}


def test_members_choose_the_range_assignor(env):
    a = join(env, "a", server_assignor="range")
    join(env, "b", server_assignor="range")
    assert group(env).preferred_assignor("uniform") == "range"
    assert group(env).target == {"a": {env.t: frozenset({0, 1, 2})}, "b": {env.t: frozenset({3, 4, 5})}}
    assert a.member_epoch == 1


@pytest.mark.parametrize("make,code,message", [
    (lambda e: beat(e, "x", 1), ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found."),
    (lambda e: beat(e, "x", -1), ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found."),
    (lambda e: (join(e, "a"), beat(e, "x", 1))[1], ErrorCode.UNKNOWN_MEMBER_ID, "Member x is not a member of group g."),
    (lambda e: (join(e, "a"), beat(e, "a", 2))[1], ErrorCode.FENCED_MEMBER_EPOCH, None),
    (lambda e: (join(e, "a", instance_id="i"), join(e, "b", instance_id="i"))[1], ErrorCode.UNRELEASED_INSTANCE_ID,
     None),
    (lambda e: (join(e, "a", instance_id="i"), beat(e, "b", 1, instance_id="i"))[1], ErrorCode.FENCED_INSTANCE_ID,
     "Static member b with instance id i was fenced by member a."),
    (lambda e: join(e, "a", topics=(), subscribed_topic_regex="a("), ErrorCode.INVALID_REGULAR_EXPRESSION, None),
])
def test_error_paths(env, make, code, message):
    with pytest.raises(GroupError) as err:
        make(env)
    assert err.value.code == code
    assert message is None or err.value.message == message


def test_a_failed_join_changes_nothing(env):
    join(env, "a", instance_id="i")
    with pytest.raises(GroupError):
        join(env, "b", instance_id="i", subscribed_topic_regex="(")
    assert list(group(env).members) == ["a"] and group(env).group_epoch == 1


def test_group_max_size(env):
    env.c.config.group_consumer_max_size = 1
    join(env, "a")
    with pytest.raises(GroupError) as full:
        join(env, "b")
    assert full.value.code == ErrorCode.GROUP_MAX_SIZE_REACHED


@pytest.mark.parametrize("props,message", [
    ({"group.coordinator.rebalance.protocols": "consumer"}, "Disabling the 'classic' protocol is not supported."),
    ({"group.coordinator.rebalance.protocols": "classic,bogus"}, "Invalid value bogus for configuration "
     "group.coordinator.rebalance.protocols: String must be one of: classic, consumer, share, streams"),
    ({"group.consumer.assignors": "uniform,uniform"}, "Invalid value uniform,uniform for configuration "
     "group.consumer.assignors: the list must not be empty or name one twice"),
    ({"group.consumer.assignors": "org.example.MyAssignor"}, "Invalid value org.example.MyAssignor for "
     "configuration group.consumer.assignors: String must be one of: uniform, range"),
    ({"group.consumer.max.size": "0"}, "Invalid value 0 for configuration group.consumer.max.size: Value must be "
     "at least 1"),
])  # fmt: skip
def test_config_keys_are_checked(props, message):
    from broker.config import BrokerConfig, ConfigError

    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_props(props)
    assert str(refused.value) == message


def test_config_defaults():
    from broker.config import BrokerConfig

    config = BrokerConfig.from_props({"group.consumer.assignors": " range , uniform"})
    assert (config.group_consumer_assignors, config.group_coordinator_rebalance_protocols,
            config.group_consumer_max_size) == (("range", "uniform"), ("classic", "consumer"), 2**31 - 1)  # fmt: skip


def test_only_what_changed_is_reported_for_storing(env):
    """Steady heartbeats report nothing; a new rack the member alone; a target assignment made after a fence
    (stored apart, at the tick) the group's target epoch and the member; a subscription change both."""
    a = join(env, "a")
    b = join(env, "b")
    a = beat(env, "a", 1, a.assignment)
    a = beat(env, "a", 1, a.assignment)
    b = beat(env, "b", 2)
    assert group(env).state == "Stable"
    env.c.dirty.clear()
    for _ in range(3):
        assert beat(env, "a", 2, a.assignment).assignment is None and beat(env, "b", 2, b.assignment).member_epoch == 2
        assert env.c.dirty == set()
    beat(env, "a", 2, a.assignment, rack_id="r1")
    assert env.c.dirty == {("g", "a")}
    env.c.dirty.clear()
    env.clock.now += 45_000
    beat(env, "a", 2, a.assignment)
    env.c.tick()  # b's session expired
    assert env.c.dirty == {("g", None), ("g", "b")}
    env.c.dirty.clear()
    beat(env, "a", 2, a.assignment)
    assert group(env).assignment_epoch == group(env).group_epoch == 3 and env.c.dirty == {("g", None), ("g", "a")}
    env.c.dirty.clear()
    env.topics.add("u", 2)
    beat(env, "a", 3, subscribed_topic_names=["t", "u"])
    assert group(env).group_epoch == 4 and env.c.dirty == {("g", None), ("g", "a")}
