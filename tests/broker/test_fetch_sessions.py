"""Incremental fetch sessions (KIP-227, ``broker/fetch_sessions.py``) through the Fetch handler, in-process."""

from __future__ import annotations

import types

import trio
import trio.testing

from broker.fetch_sessions import SHARD_ID_RANGE, FetchSessionCache
from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, produce, req, sub  # noqa: F401  (broker: a fixture)


def _fetch_body(session_id: int, epoch: int, partitions: dict, forgotten: dict | None = None):
    T, F = sub(1, "FetchTopic"), sub(1, "ForgottenTopic")
    topics = [T(topic=topic, partitions=[T.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                                         for p, o in parts.items()]) for topic, parts in partitions.items()]
    gone = [F(topic=topic, partitions=parts) for topic, parts in (forgotten or {}).items()]
    return req(1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
               topics=topics, forgotten_topics_data=gone)  # fmt: skip


async def fetch(broker, session_id: int, epoch: int, partitions: dict, forgotten: dict | None = None):
    return await call(broker, 1, 12, _fetch_body(session_id, epoch, partitions, forgotten))


def answered(resp) -> list[tuple[str, int, int]]:
    """(topic, partition, number of record bytes) of each partition in the answer, in order."""
    return [(t.topic, p.partition_index, len(p.records or b"")) for t in resp.responses for p in t.partitions]


async def test_a_session_answers_only_what_changed(broker):
    await create_ok(broker, "s", partitions=3)
    for p in range(3):
        await produce(broker, "s", [1, 2], partition=p)
    full = await fetch(broker, 0, 0, {"s": {0: 0, 1: 0, 2: 0}})
    assert full.error_code == ErrorCode.NONE and full.session_id != 0
    assert [(t, p) for t, p, _ in answered(full)] == [("s", 0), ("s", 1), ("s", 2)]
    nothing_new = await fetch(broker, full.session_id, 1, {"s": {0: 2, 1: 2, 2: 2}})  # the client caught up
    assert answered(nothing_new) == [] and nothing_new.session_id == full.session_id
    await produce(broker, "s", [3], partition=1)
    news = await fetch(broker, full.session_id, 2, {})  # nothing changed on the client's side
    assert [(t, p) for t, p, size in answered(news) if size] == [("s", 1)]
    assert [(t, p) for t, p, _ in answered(news)] == [("s", 1)]  # its high watermark moved too; the others not
    forgot = await fetch(broker, full.session_id, 3, {}, forgotten={"s": [1]})
    assert answered(forgot) == []
    await produce(broker, "s", [4], partition=1)
    assert answered(await fetch(broker, full.session_id, 4, {})) == []  # partition 1 left the session
    assert broker.fetch_sessions.sessions[full.session_id].epoch == 5


async def test_session_errors_and_sessionless_fetches(broker):
    await create_ok(broker, "e")
    await produce(broker, "e", [1])
    full = await fetch(broker, 0, 0, {"e": {0: 0}})
    stale = await fetch(broker, full.session_id, 7, {})
    assert (stale.error_code, stale.session_id, stale.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    unknown = await fetch(broker, full.session_id + 1, 1, {})
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    closing = await fetch(broker, full.session_id, -1, {"e": {0: 0}})  # epoch -1: close it, fetch without one
    assert (closing.session_id, [p for _t, p, _s in answered(closing)]) == (0, [0])
    assert full.session_id not in broker.fetch_sessions.sessions
    assert (await call(broker, 1, 6, _fetch_body(0, -1, {"e": {0: 0}}))).responses  # before v7: no sessions


async def test_only_a_partition_answered_with_records_moves_to_the_end(broker):
    await create_ok(broker, "r", partitions=3)
    for p in range(3):
        await produce(broker, "r", [1], partition=p)
    sid = (await fetch(broker, 0, 0, {"r": {0: 1, 1: 1, 2: 1}})).session_id  # caught up: order 0, 1, 2
    assert answered(await fetch(broker, sid, 1, {"r": {0: 99}})) == [("r", 0, 0)]  # an error, no records
    assert answered(await fetch(broker, sid, 2, {"r": {0: 1}})) == [("r", 0, 0)]  # cleared: another watermark
    for p in range(3):
        await produce(broker, "r", [2], partition=p)
    news = await fetch(broker, sid, 3, {})  # partition 0 answered twice without records: it kept its place
    assert [p for _t, p, size in answered(news) if size] == [0, 1, 2]
    await produce(broker, "r", [3], partition=1)
    assert [p for _t, p, _s in answered(await fetch(broker, sid, 4, {"r": {0: 2, 1: 2, 2: 2}}))] == [1]
    for p in range(3):
        await produce(broker, "r", [4], partition=p)
    rotated = await fetch(broker, sid, 5, {"r": {1: 3}})  # partition 1's records sent it to the end
    assert [p for _t, p, size in answered(rotated) if size] == [0, 2, 1]


def _request(session_id: int, epoch: int, topics=(), forgotten=(), replica_id: int = -1):
    return types.SimpleNamespace(session_id=session_id, session_epoch=epoch, topics=list(topics),
                                 forgotten_topics_data=list(forgotten), replica_id=replica_id)  # fmt: skip


def _read(hw: int, lso: int, log_start: int = 0, error=ErrorCode.NONE, size: int = 0):
    return types.SimpleNamespace(partition=0, error=error, high_watermark=hw, last_stable_offset=lso,
                                 log_start_offset=log_start, size=size)  # fmt: skip


def test_the_last_stable_offset_alone_does_not_put_a_partition_in_the_answer():
    cache = FetchSessionCache()
    part = types.SimpleNamespace(partition=0, fetch_offset=0, partition_max_bytes=100)
    full = cache.context(_request(0, 0, [types.SimpleNamespace(topic="t", partitions=[part])]), 12, 0)
    sid, _ = full.respond([_read(5, 3)], 0)
    assert cache.context(_request(sid, 1), 12, 1).respond([_read(5, 5)], 1) == (sid, [])  # only the LSO moved
    assert cache.context(_request(sid, 2), 12, 2).respond([_read(5, 5, 1)], 2)[1] != []  # the log start moved


async def test_a_session_left_empty_is_closed_and_answered_without_one(broker):
    await create_ok(broker, "x")
    await produce(broker, "x", [1])
    sid = (await fetch(broker, 0, 0, {"x": {0: 0}})).session_id
    emptied = await fetch(broker, sid, 1, {}, forgotten={"x": [0]})
    assert (emptied.error_code, emptied.session_id, emptied.responses) == (ErrorCode.NONE, 0, [])
    assert sid not in broker.fetch_sessions.sessions
    assert (await fetch(broker, sid, 2, {})).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    sid = (await fetch(broker, 0, 0, {"x": {0: 0}})).session_id
    both = await fetch(broker, sid, 1, {"x": {0: 0}}, forgotten={"x": [0]})  # named and forgotten: read once more
    assert both.session_id == 0 and [(t, p) for t, p, size in answered(both) if size] == [("x", 0)]
    assert sid not in broker.fetch_sessions.sessions


async def test_a_fetch_whose_session_moved_on_while_it_waited_is_invalid_fetch_session_epoch(broker):
    await create_ok(broker, "c")
    sid = (await fetch(broker, 0, 0, {"c": {0: 0}})).session_id
    got = {}

    async def waiting():
        body = _fetch_body(sid, 1, {})
        body.min_bytes, body.max_wait_ms = 1, 3000
        got["waited"] = await call(broker, 1, 12, body)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiting)
            await trio.testing.wait_all_tasks_blocked()
            assert (await fetch(broker, sid, 2, {})).error_code == ErrorCode.NONE  # the epoch is 3 now
            await produce(broker, "c", [1])  # wakes the first fetch
    waited = got["waited"]
    assert (waited.error_code, waited.session_id, waited.responses) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH, sid, [])
    assert (await fetch(broker, sid, 3, {})).error_code == ErrorCode.NONE


def _part():
    return [("t", types.SimpleNamespace(partition=0, fetch_offset=0, partition_max_bytes=100))]


def _parts(n: int):
    return [("t", types.SimpleNamespace(partition=i, fetch_offset=0, partition_max_bytes=100)) for i in range(n)]


def test_the_slots_are_split_over_eight_shards_taken_in_turn():
    assert all(FetchSessionCache(slots=7).open(_part(), now_ms=0) is None for _ in range(8))  # 0 a shard
    assert FetchSessionCache(slots=0).open(_part(), now_ms=0) is None  # sessions switched off
    cache = FetchSessionCache(slots=8)
    opened = [cache.open(_part(), now_ms=0) for _ in range(8)]
    assert [s.id // SHARD_ID_RANGE for s in opened] == list(range(8))  # each shard gives ids from its range
    assert cache.open(_part(), now_ms=120_000) is None  # shard 0 full, its session not unused for over 2 min
    third = cache.open(_part(), now_ms=120_001)  # shard 1 is tried, and its session is stale now
    assert third is not None and third.id // SHARD_ID_RANGE == 1 and cache.evictions == 1
    assert opened[1].id not in cache.sessions and len(cache.sessions) == 8
    samples = {name: rows[0][1] for name, _h, _l, rows in cache.metric_samples()}
    assert samples == {"kafka_server_fetchsessioncache_numincrementalfetchsessions": 8.0,
                       "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached": 8.0}  # fmt: skip


def test_a_full_shard_evicts_a_smaller_old_session_or_for_a_follower_a_consumers():
    cache = FetchSessionCache(slots=8)  # one session a shard
    opened = [cache.open(_parts(2), now_ms=0) for _ in range(8)]
    for session in opened:  # used at 130 s, made at 0: old enough for any fetch to evict, yet not stale
        cache.context(_request(session.id, 1), 12, 130_000)
    assert cache.open(_parts(2), now_ms=130_000) is None  # shard 0: not more partitions than its session
    bigger = cache.open(_parts(3), now_ms=130_000)  # shard 1: more
    assert bigger is not None and bigger.id // SHARD_ID_RANGE == 1 and opened[1].id not in cache.sessions
    follower = cache.open(_parts(1), now_ms=130_000, privileged=True)  # shard 2: a follower's beats a consumer's
    assert follower is not None and follower.privileged and opened[2].id not in cache.sessions
    for _ in range(6):  # shards 3-7 and 0: a consumer's session with fewer partitions evicts nothing
        assert cache.open(_parts(1), now_ms=130_000) is None
    assert cache.open(_parts(9), now_ms=130_000) is None  # shard 1: its session was made just now
    assert cache.open(_parts(9), now_ms=130_000, privileged=True) is None  # shard 2: a recent follower's
    assert cache.evictions == 2 and len(cache.sessions) == 8
