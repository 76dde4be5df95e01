"""Fetch v13+ (KIP-516): topics named by id in the request, its forgotten topics, its sessions and the answer,
in-process."""

from __future__ import annotations

import uuid

import pytest

from protocol import ErrorCode
from protocol.records import iter_batches

from ._admin_client import broker, call, create_ok, produce, req, sub  # noqa: F401  (broker: a fixture)


def _body(session_id: int, epoch: int, partitions: dict, forgotten: dict | None = None, **extra):
    T, F = sub(1, "FetchTopic"), sub(1, "ForgottenTopic")
    topics = [T(topic_id=tid, partitions=[T.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                                          for p, o in parts.items()]) for tid, parts in partitions.items()]
    gone = [F(topic_id=tid, partitions=parts) for tid, parts in (forgotten or {}).items()]
    return req(1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
               topics=topics, forgotten_topics_data=gone, **extra)  # fmt: skip


def _answered(resp) -> list[tuple[uuid.UUID, int, int, list[int]]]:
    """(topic id, partition, error, offsets) of each partition in the answer."""
    return [(t.topic_id, p.partition_index, p.error_code,
             [r.offset for b in iter_batches(p.records or b"") for r in b.iter_records()])
            for t in resp.responses for p in t.partitions]  # fmt: skip


@pytest.mark.parametrize("version", [13, 14, 15, 16, 17, 18])
async def test_a_topic_is_fetched_by_its_id(broker, version):
    tid = (await create_ok(broker, "ids", partitions=2)).topic_id
    await produce(broker, "ids", [1, 2, 3], partition=1)
    resp = await call(broker, 1, version, _body(0, -1, {tid: {0: 0, 1: 1}}))
    assert _answered(resp) == [(tid, 0, ErrorCode.NONE, []), (tid, 1, ErrorCode.NONE, [0, 1, 2])]  # whole batch


async def test_an_id_of_no_topic_is_unknown_topic_id(broker):
    tid = (await create_ok(broker, "known")).topic_id
    stranger = uuid.uuid4()
    resp = await call(broker, 1, 13, _body(0, -1, {stranger: {0: 0}, tid: {0: 0}}))
    assert [(t, p, e) for t, p, e, _ in _answered(resp)] == [
        (stranger, 0, ErrorCode.UNKNOWN_TOPIC_ID), (tid, 0, ErrorCode.NONE)]  # fmt: skip


async def test_a_session_keeps_the_name_and_never_reads_a_topic_made_again_under_it(broker):
    """Kafka's CachedPartition keeps the name the id had when the partition joined the session: once the
    topic is deleted the partition is UNKNOWN_TOPIC_OR_PARTITION, once a topic of that name is made again
    INCONSISTENT_TOPIC_ID (readFromLocalLog's id check), until the client forgets the old id for the new.
    Before, both were UNKNOWN_TOPIC_ID."""
    old = (await create_ok(broker, "again")).topic_id
    await produce(broker, "again", [1])
    full = await call(broker, 1, 17, _body(0, 0, {old: {0: 0}}))
    assert full.session_id and _answered(full) == [(old, 0, ErrorCode.NONE, [0])]
    assert list(broker.fetch_sessions.sessions[full.session_id].partitions) == [(old, 0)]
    await call(broker, 20, 6, req(20, topics=[sub(20, "DeleteTopicState")(name="again")], timeout_ms=1000))
    deleted = await call(broker, 1, 17, _body(full.session_id, 1, {}))
    assert [(t, e) for t, _p, e, _o in _answered(deleted)] == [(old, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    new = (await create_ok(broker, "again")).topic_id
    await produce(broker, "again", [1, 2])
    gone = await call(broker, 1, 17, _body(full.session_id, 2, {}))
    assert gone.node_endpoints == []  # v16+: the leader never moves
    assert [(t, e, o) for t, _p, e, o in _answered(gone)] == [(old, ErrorCode.INCONSISTENT_TOPIC_ID, [])]
    both = await call(broker, 1, 17, _body(full.session_id, 3, {new: {0: 0}}, forgotten={old: [0]}))
    assert [(t, e, o) for t, _p, e, o in _answered(both)] == [(new, ErrorCode.NONE, [0, 1])]
    assert list(broker.fetch_sessions.sessions[full.session_id].partitions) == [(new, 0)]
    fresh = await call(broker, 1, 17, _body(0, -1, {old: {0: 0}}))  # without a session: the id is unknown
    assert [(t, e) for t, _p, e, _o in _answered(fresh)] == [(old, ErrorCode.UNKNOWN_TOPIC_ID)]


@pytest.mark.parametrize(("opened", "then"), [(12, 13), (13, 12)])
async def test_a_session_keeps_the_kind_of_topic_names_it_began_with(broker, opened, then):
    """Kafka's FetchManager.newContext: an incremental fetch switching between names and ids is
    FETCH_SESSION_TOPIC_ID_ERROR, with no partitions and session id 0; the session stays."""
    tid = (await create_ok(broker, "kind")).topic_id
    T = sub(1, "FetchTopic")

    def body(version: int, session_id: int, epoch: int):
        part = T.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
        topic = T(topic_id=tid, partitions=[part]) if version >= 13 else T(topic="kind", partitions=[part])
        return req(1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
                   topics=[topic] if epoch == 0 else [], forgotten_topics_data=[])  # fmt: skip

    full = await call(broker, 1, opened, body(opened, 0, 0))
    assert full.session_id and full.error_code == ErrorCode.NONE
    switched = await call(broker, 1, then, body(then, full.session_id, 1))
    assert (switched.error_code, switched.session_id, switched.responses) == (
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, 0, [])  # fmt: skip
    same = await call(broker, 1, opened, body(opened, full.session_id, 1))
    assert same.error_code == ErrorCode.NONE and same.session_id == full.session_id


async def test_the_follower_fields_are_read_and_not_used(broker):
    tid = (await create_ok(broker, "follower")).topic_id
    await produce(broker, "follower", [1])
    State = sub(1, "ReplicaState")
    body = _body(0, -1, {tid: {0: 0}}, replica_state=State(replica_id=-1, replica_epoch=-1))
    body.topics[0].partitions[0].replica_directory_id = uuid.uuid4()
    body.topics[0].partitions[0].high_watermark = 1
    assert _answered(await call(broker, 1, 18, body)) == [(tid, 0, ErrorCode.NONE, [0])]
