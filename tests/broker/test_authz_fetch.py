"""Fetch under the ACL authorizer, as Kafka's ``handleFetchRequest`` authorizes it.

A consumer needs READ on each topic (TOPIC_AUTHORIZATION_FAILED per
partition, existing or not; an unknown topic id is UNKNOWN_TOPIC_ID first); a
follower (``replica_id`` >= 0, from v15 in ``replica_state``) needs
CLUSTER_ACTION or every partition is refused. Refused partitions stay in a
fetch session and are answered on every incremental fetch until a grant
lets them be read; they do not end a long poll.
"""

from __future__ import annotations

import uuid

import trio

from broker.acl_model import PatternType
from protocol import ErrorCode

from ._admin_client import call, req, sub
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import ADMIN, make_topics, produce, records

TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def fetch_body(version: int, partitions: dict, session=(0, -1), replica_id: int = -1, max_wait_ms: int = 0,
               min_bytes: int = 0):  # fmt: skip
    """``partitions``: ``{topic (or id from v13): {partition: fetch offset}}``."""
    T = sub(1, "FetchTopic")
    key = "topic_id" if version >= 13 else "topic"
    topics = [T(**{key: t}, partitions=[T.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                                        for p, o in parts.items()]) for t, parts in partitions.items()]  # fmt: skip
    body = req(1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, session_id=session[0],
               session_epoch=session[1], topics=topics)  # fmt: skip
    if version >= 15:
        body.replica_state = sub(1, "ReplicaState")(replica_id=replica_id, replica_epoch=-1)
    else:
        body.replica_id = replica_id
    return body


async def fetch(broker, who, version: int, partitions: dict, **options):
    return await call(broker, 1, version, fetch_body(version, partitions, **options), connection=who)


def answered(resp, version: int = 12) -> dict:
    """``{(topic or id, partition): (error, high watermark, record bytes)}``."""
    return {(t.topic_id if version >= 13 else t.topic, p.partition_index): (p.error_code, p.high_watermark,
                                                                            len(p.records or b""))
            for t in resp.responses for p in t.partitions}  # fmt: skip


async def topics_with_data(broker, *names: str) -> dict:
    ids = await make_topics(broker, *names)
    assert set((await produce(broker, ADMIN, {n: {0: records(b"v")} for n in names})).values()) == {0}
    return ids


async def test_a_consumer_needs_read_on_each_topic_existing_or_not(authz_broker):
    await topics_with_data(authz_broker, "t", "u")
    bob = user("bob")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "u")  # DESCRIBE is not READ
    asked = {"t": {0: 0}, "u": {0: 0}, "missing": {0: 0}}
    assert answered(await fetch(authz_broker, bob, 12, asked)) == {
        ("t", 0): (TAF, -1, 0), ("u", 0): (TAF, -1, 0), ("missing", 0): (TAF, -1, 0)}  # fmt: skip
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "t")
    got = answered(await fetch(authz_broker, bob, 12, asked))
    assert got[("t", 0)][:2] == (ErrorCode.NONE, 1) and got[("t", 0)][2] > 0
    assert (got[("u", 0)], got[("missing", 0)]) == ((TAF, -1, 0), (TAF, -1, 0))
    grant(authz_broker, "User:*", Op.READ, Res.TOPIC, "*")
    assert answered(await fetch(authz_broker, bob, 12, {"missing": {0: 0}})) == {
        ("missing", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, 0)}  # fmt: skip


async def test_a_prefixed_grant_reads_its_topics_in_old_versions_too(authz_broker):
    await topics_with_data(authz_broker, "logs-a", "metrics")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "logs-", PatternType.PREFIXED)
    for version in (0, 4, 11):
        got = answered(await fetch(authz_broker, user("bob"), version, {"logs-a": {0: 0}, "metrics": {0: 0}}))
        assert got[("logs-a", 0)][0] == ErrorCode.NONE and got[("logs-a", 0)][2] > 0
        assert got[("metrics", 0)] == (TAF, -1, 0)


async def test_topic_ids_an_unknown_id_is_unknown_topic_id_for_a_consumer(authz_broker):
    ids = await topics_with_data(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "t")
    nobody = uuid.uuid4()
    got = answered(await fetch(authz_broker, user("bob"), 13, {ids["t"]: {0: 0}, ids["u"]: {0: 0}, nobody: {0: 0}}),
                   13)  # fmt: skip
    assert got[(ids["t"], 0)][0] == ErrorCode.NONE
    assert (got[(ids["u"], 0)], got[(nobody, 0)]) == ((TAF, -1, 0), (ErrorCode.UNKNOWN_TOPIC_ID, -1, 0))


async def test_a_follower_needs_cluster_action_not_read(authz_broker):
    ids = await topics_with_data(authz_broker, "t")
    grant(authz_broker, "broker2", Op.READ, Res.TOPIC, "t")
    follower = user("broker2")
    nobody = uuid.uuid4()
    assert answered(await fetch(authz_broker, follower, 11, {"t": {0: 0}}, replica_id=2)) == {("t", 0): (TAF, -1, 0)}
    by_id = await fetch(authz_broker, follower, 16, {ids["t"]: {0: 0}, nobody: {0: 0}}, replica_id=2)
    assert answered(by_id, 16) == {(ids["t"], 0): (TAF, -1, 0), (nobody, 0): (TAF, -1, 0)}  # no id is told apart
    grant(authz_broker, "broker2", Op.CLUSTER_ACTION, Res.CLUSTER, "kafka-cluster")
    assert answered(await fetch(authz_broker, user("broker3"), 11, {"t": {0: 0}}, replica_id=3)) == {
        ("t", 0): (TAF, -1, 0)}  # fmt: skip
    for version in (11, 16):
        key = ids["t"] if version >= 13 else "t"
        got = answered(await fetch(authz_broker, follower, version, {key: {0: 0}}, replica_id=2), version)
        assert got[(key, 0)][0] == ErrorCode.NONE and got[(key, 0)][2] > 0
    by_id = await fetch(authz_broker, follower, 16, {nobody: {0: 0}}, replica_id=2)
    assert answered(by_id, 16) == {(nobody, 0): (ErrorCode.UNKNOWN_TOPIC_ID, -1, 0)}


async def test_a_refused_partition_stays_in_the_session_until_a_grant(authz_broker):
    await topics_with_data(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "t")
    bob = user("bob")
    full = await fetch(authz_broker, bob, 12, {"t": {0: 0}, "u": {0: 0}}, session=(0, 0))
    assert full.session_id != 0 and [k for k in answered(full)] == [("t", 0), ("u", 0)]
    quiet = await fetch(authz_broker, bob, 12, {"t": {0: 1}}, session=(full.session_id, 1))
    assert answered(quiet) == {("u", 0): (TAF, -1, 0)}  # an error is answered every time
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "u")
    now = answered(await fetch(authz_broker, bob, 12, {}, session=(full.session_id, 2)))
    assert list(now) == [("u", 0)] and now[("u", 0)][:2] == (ErrorCode.NONE, 1) and now[("u", 0)][2] > 0
    assert answered(await fetch(authz_broker, bob, 12, {"u": {0: 1}}, session=(full.session_id, 3))) == {}


async def test_a_refused_partition_does_not_end_the_long_poll(authz_broker):
    await topics_with_data(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.READ, Res.TOPIC, "t")
    bob = user("bob")
    start = trio.current_time()
    only_refused = await fetch(authz_broker, bob, 12, {"u": {0: 0}}, max_wait_ms=10_000, min_bytes=1)
    assert answered(only_refused) == {("u", 0): (TAF, -1, 0)} and trio.current_time() - start < 5
    start = trio.current_time()
    mixed = await fetch(authz_broker, bob, 12, {"t": {0: 1}, "u": {0: 0}}, max_wait_ms=300, min_bytes=1)
    assert trio.current_time() - start >= 0.29
    assert answered(mixed) == {("t", 0): (ErrorCode.NONE, 1, 0), ("u", 0): (TAF, -1, 0)}
