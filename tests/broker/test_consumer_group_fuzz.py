"""Random runs of the KIP-848 state machine against a model of well-behaved clients.

Clients join (some static), heartbeat with or without owned partitions and
subscription changes, lose answers (and then send a full heartbeat, as the
Java client and librdkafka do), leave with -1 or -2; the clock jumps past
session and rebalance timeouts; topics appear and grow. After every step:
no partition is held by two live clients, no partition is assigned or
pending revocation at two members, and the partition epochs are exactly
the owners' member epochs.
"""

from __future__ import annotations

import random

import pytest

from broker.groups.consumer_member import as_owned
from broker.groups.consumer_requests import GroupError, Heartbeat

from .test_consumer_group_state import env  # noqa: F401  (fixture)

class Client:
    def __init__(self, mid, inst=None):
        self.mid, self.inst, self.epoch, self.owned, self.target = mid, inst, 0, {}, {}
        self.full, self.subs = False, ["t"]


def _join(env, rnd, clients, n):
    c = Client(f"m{n}", rnd.choice([None, "i1", "i2", "i3"]))
    c.subs = rnd.choice([["t"], ["t", "u"], ["u"]])
    try:
        r = env.c.heartbeat(Heartbeat("g", c.mid, 0, instance_id=c.inst, rebalance_timeout_ms=5000,
                                      subscribed_topic_names=c.subs, owned=[]))  # fmt: skip
    except GroupError:  # UNRELEASED_INSTANCE_ID
        return
    c.epoch, c.target = r.member_epoch, r.assignment or {}
    clients[c.mid] = c


def _heartbeat(env, rnd, clients, c):
    if rnd.random() < 0.05:
        env.c.heartbeat(Heartbeat("g", c.mid, -2 if c.inst and rnd.random() < 0.5 else -1, instance_id=c.inst))
        del clients[c.mid]
        return
    if rnd.random() < 0.5:  # the client has revoked what it must and taken what it got
        c.owned = {t: ps for t, ps in c.target.items() if ps}
    owned = None if rnd.random() < 0.1 else as_owned(c.owned)
    subs = rnd.choice([None] * 8 + [["t"], ["t", "u"], ["u"]])
    if c.full:  # after a lost answer the client sends every field
        owned, subs, c.full = as_owned(c.owned), subs or c.subs, False
    c.subs = subs or c.subs
    r = env.c.heartbeat(Heartbeat("g", c.mid, c.epoch, instance_id=c.inst, owned=owned, subscribed_topic_names=subs,
                                  rebalance_timeout_ms=5000 if subs and owned is not None else -1))  # fmt: skip
    c.full = rnd.random() < 0.05  # the answer is lost
    if not c.full:
        c.epoch = r.member_epoch
        if r.assignment is not None:
            c.target = r.assignment
            c.owned = {t: ps & r.assignment.get(t, frozenset()) for t, ps in c.owned.items()}


def _check(env, clients):
    g = env.c.groups.get("g")
    held = {}
    for c in clients.values():
        if g is None or c.mid not in g.members:
            continue  # fenced: the client learns it at its next heartbeat
        for t, ps in c.owned.items():
            for p in ps:
                assert (t, p) not in held, (c.mid, held[(t, p)], p)
                held[(t, p)] = c.mid
    seen = {}
    for m in g.members.values() if g else ():
        for parts in (m.assigned, m.pending_revocation):
            for t, ps in parts.items():
                for p in ps:
                    assert (t, p) not in seen and g.partition_epochs.get((t, p)) == m.member_epoch
                    seen[(t, p)] = m.member_id
    assert g is None or set(g.partition_epochs) == set(seen)


def _world(env, rnd):
    if rnd.random() < 0.03:
        env.clock.now += rnd.choice([1000, 6000, 46000])
        env.c.tick()
    if rnd.random() < 0.02:
        if "u" not in env.topics.topics:
            env.topics.add("u", 3)
        else:
            env.topics.topics["u"].num_partitions += 1


@pytest.mark.parametrize("seed", range(30))
def test_no_partition_is_ever_held_twice(env, seed):
    rnd = random.Random(seed)
    clients: dict[str, Client] = {}
    for step in range(600):
        if rnd.random() < 0.15 or not clients:
            _join(env, rnd, clients, step)
        else:
            c = rnd.choice(list(clients.values()))
            try:
                _heartbeat(env, rnd, clients, c)
            except GroupError:  # fenced or unknown: the client drops everything (and would rejoin)
                clients.pop(c.mid, None)
        _world(env, rnd)
        _check(env, clients)
