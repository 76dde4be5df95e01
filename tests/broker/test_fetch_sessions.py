"""Incremental fetch sessions (KIP-227, ``broker/fetch_sessions.py``) through the Fetch handler, in-process."""

from __future__ import annotations

import types

from broker.fetch_sessions import FetchSessionCache
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


def test_a_full_cache_gives_a_slot_only_when_its_least_recent_session_is_stale():
    cache = FetchSessionCache(slots=1)
    part = types.SimpleNamespace(partition=0, fetch_offset=0, partition_max_bytes=100)
    first = cache.open([("t", part)], now_ms=0)
    assert first is not None and cache.open([("t", part)], now_ms=119_999) is None
    second = cache.open([("t", part)], now_ms=120_000)
    assert second is not None and list(cache.sessions) == [second.id] and cache.evictions == 1
    assert FetchSessionCache(slots=0).open([("t", part)], now_ms=0) is None  # sessions switched off
    samples = {name: rows[0][1] for name, _h, _l, rows in cache.metric_samples()}
    assert samples == {"kafka_server_fetchsessioncache_numincrementalfetchsessions": 1.0,
                       "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached": 1.0}  # fmt: skip
