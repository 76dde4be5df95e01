"""Group requests for the coordinator tests: a real broker with a hand-driven clock.

``groups_broker`` opens a ``Broker`` whose clock is a ``FakeClock`` (ms) and
whose ``__consumer_offsets`` has 5 partitions (``__transaction_state`` 3); ``reopen`` closes it and opens
a new one on the same directory (what a restart leaves). The helpers send
JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch
through ``dispatch`` and return the decoded responses; ``tick`` runs the
coordinator's timers at the fake clock's time.
"""

from __future__ import annotations

import attrs
import pytest

from broker.config import BrokerConfig
from broker.core import Broker
from broker.topics import TopicRegistry

from ._admin_client import call, req, sub


@attrs.define
class FakeClock:
    now: int = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def _open(tmp_path, clock: FakeClock, extra: dict) -> Broker:
    props = {
        "node.id": "3", "log.dirs": str(tmp_path / "data"), "prometheus.port": "0",
        "offsets.topic.num.partitions": "5", "transaction.state.log.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000", **extra,
    }  # fmt: skip
    config = BrokerConfig.from_props(props)
    b = Broker(config, TopicRegistry.open(config, clock), clock=clock)
    b.advertised = ("127.0.0.1", 9999)
    b.groups.load()
    return b


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def group_props():
    return {}


@pytest.fixture
def groups_broker(tmp_path, clock, group_props):
    holder = {"b": _open(tmp_path, clock, group_props)}

    def reopen():
        holder["b"].close()
        holder["b"] = _open(tmp_path, clock, group_props)
        return holder["b"]

    holder["b"].reopen = reopen
    yield holder["b"]
    holder["b"].close()


def tick(broker, advance_ms: int = 0) -> None:
    broker.clock.now += advance_ms
    broker.groups.coordinator.tick()


def protocols(*pairs):
    cls = sub(11, "JoinGroupRequestProtocol")
    return [cls(name=n, metadata=m) for n, m in (pairs or [("range", b"sub")])]


async def join(broker, group="g", member_id="", version=5, protos=None, instance=None, session=10_000,
               rebalance=10_000, ptype="consumer"):  # fmt: skip
    body = req(11, group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance, member_id=member_id,
               group_instance_id=instance, protocol_type=ptype, protocols=protos or protocols())  # fmt: skip
    return await call(broker, 11, version, body, timeout=30)


async def join_new(broker, group="g", version=5, **kw):
    """Join with the KIP-394 round trip: get an id, then join with it."""
    first = await join(broker, group, version=version, **kw)
    if first.error_code != 79:  # MEMBER_ID_REQUIRED
        return first
    return await join(broker, group, first.member_id, version=version, **kw)


async def sync(broker, group, generation, member_id, assignments=None, version=3, instance=None, **kw):
    cls = sub(14, "SyncGroupRequestAssignment")
    body = req(14, group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
               assignments=[cls(member_id=m, assignment=a) for m, a in (assignments or {}).items()], **kw)  # fmt: skip
    return await call(broker, 14, version, body, timeout=30)


async def heartbeat(broker, group, generation, member_id, instance=None, version=3) -> int:
    body = req(12, group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance)
    return (await call(broker, 12, version, body)).error_code


async def commit(broker, group, offsets, generation=-1, member_id="", version=7, retention=-1, metadata="m",
                 instance=None):  # fmt: skip
    """``offsets``: {(topic, partition): offset}; returns {(topic, partition): error}."""
    Topic = sub(8, "OffsetCommitRequestTopic")
    by_topic: dict = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(Topic.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_metadata=metadata))  # fmt: skip
    body = req(8, group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
               group_instance_id=instance, retention_time_ms=retention,
               topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])  # fmt: skip
    resp = await call(broker, 8, version, body)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def fetch(broker, group, wanted=None, version=7):
    """``wanted``: {topic: [partitions]} or None (all); returns (error, {(t, p): (offset, metadata, error)})."""
    Topic = sub(9, "OffsetFetchRequestTopic")
    topics = None if wanted is None else [Topic(name=t, partition_indexes=ps) for t, ps in wanted.items()]
    resp = await call(broker, 9, version, req(9, group_id=group, topics=topics))
    found = {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
             for t in resp.topics for p in t.partitions}  # fmt: skip
    return resp.error_code, found


def start_join(nursery, results: dict, name: str, fn, *args, **kw) -> None:
    """Run a (parked) join in ``nursery``; its response lands in ``results[name]``."""

    async def run():
        results[name] = await fn(*args, **kw)

    nursery.start_soon(run)


async def stable(broker, group="g"):
    """One member joined (KIP-394 round trip) and synced with the assignment ``b"x"``: a Stable group."""
    joined = await join_new(broker, group)
    await sync(broker, group, joined.generation_id, joined.member_id, {joined.member_id: b"x"})
    return joined


def subscription(*topics: str) -> bytes:
    """A v0 ``ConsumerProtocolSubscription`` of ``topics`` (no user data), as a JoinGroup protocol's metadata."""
    out = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return out + b"\xff\xff\xff\xff"  # null user data
