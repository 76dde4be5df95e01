"""``controller_mutation_rate`` quotas (KIP-599, ``broker/mutation_quota.py``): Kafka's token bucket, strict
and permissive versions of CreateTopics, CreatePartitions and DeleteTopics, in-process."""

from __future__ import annotations

import pytest

from broker.mutation_quota import KEY, TokenBucket
from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker: a fixture)
    broker, call, create, creatable, fake_connection, open_broker, req, sub)
from .test_client_quotas import CLIENT, alter

THROTTLED = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")


def test_the_bucket_starts_full_refills_at_the_quota_and_never_passes_its_burst():
    bucket = TokenBucket()
    assert bucket.tokens_at(2.0, 22.0, 1_000) == 22.0
    assert bucket.take(30, 2.0, 22.0, 1_000) == -8.0
    assert bucket.tokens_at(2.0, 22.0, 3_000) == pytest.approx(-4.0)  # 2 s at 2 a second
    assert bucket.tokens_at(2.0, 22.0, 60_000) == 22.0


async def _limit(broker, rate: float = 1.0) -> None:
    """Set the quota, and stop the broker's clock: the bucket refills with time, so a busy machine would
    otherwise move the tokens and throttle times the tests expect."""
    assert await alter(broker, [([("client-id", CLIENT)], {"controller_mutation_rate": rate})]) == [(ErrorCode.NONE, None)]
    now = broker.clock()
    broker.clock = lambda: now


async def test_strict_create_topics_lets_the_bucket_go_below_zero_once_then_refuses(broker):
    await _limit(broker)  # 1 a second: a burst of 11 (quota.window.num 11 x 1 s)
    conn = fake_connection(throttle=None)
    first = await call(broker, 19, 7, req(19, topics=[creatable("m1", 10)], timeout_ms=1000), connection=conn)
    assert first.topics[0].error_code == ErrorCode.NONE and first.throttle_time_ms == 0 and conn.throttle is None
    second = await call(broker, 19, 7, req(19, topics=[creatable("m2", 5), creatable("m3", 1)], timeout_ms=1000),
                        connection=conn)  # fmt: skip
    codes = {t.name: (t.error_code, t.error_message) for t in second.topics}
    assert codes == {"m2": (ErrorCode.NONE, None), "m3": THROTTLED}  # m2 found 1 token; m3 found -4
    assert second.throttle_time_ms == 4_000 and conn.throttle == 4_000
    assert broker.topics.get("m2") is not None and broker.topics.get("m3") is None


async def test_a_refused_topic_costs_nothing(broker):
    await _limit(broker)
    bad = await create(broker, creatable("bad name!", 11))
    assert bad["bad name!"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (await create(broker, creatable("fits", 11)))["fits"].error_code == ErrorCode.NONE


async def test_permissive_versions_go_through_and_are_throttled(broker):
    await _limit(broker)
    conn = fake_connection(throttle=None)
    resp = await call(broker, 19, 5, req(19, topics=[creatable("p1", 11), creatable("p2", 3)], timeout_ms=1000),
                      connection=conn)  # fmt: skip
    assert [t.error_code for t in resp.topics] == [ErrorCode.NONE, ErrorCode.NONE]
    assert resp.throttle_time_ms == 3_000 and conn.throttle == 3_000


async def _grow(broker, name: str, count: int, version: int):
    Topic = sub(37, "CreatePartitionsTopic")
    body = req(37, topics=[Topic(name=name, count=count, assignments=None)], timeout_ms=1000, validate_only=False)
    return await call(broker, 37, version, body, connection=fake_connection(throttle=None))


async def test_create_partitions_is_strict_from_v3(broker):
    await create(broker, creatable("g", 1))
    await _limit(broker)
    assert (await _grow(broker, "g", 13, 3)).results[0].error_code == ErrorCode.NONE  # 12 of 11 tokens: -1
    refused = await _grow(broker, "g", 14, 3)
    assert (refused.results[0].error_code, refused.results[0].error_message) == THROTTLED
    assert refused.throttle_time_ms > 0 and broker.topics.get("g").num_partitions == 13
    permissive = await _grow(broker, "g", 14, 2)
    assert permissive.results[0].error_code == ErrorCode.NONE and broker.topics.get("g").num_partitions == 14


async def _delete(broker, name: str, version: int):
    if version >= 6:
        return await call(broker, 20, version, req(20, topics=[sub(20, "DeleteTopicState")(name=name)],
                                                   timeout_ms=1000))  # fmt: skip
    return await call(broker, 20, version, req(20, topic_names=[name], timeout_ms=1000))


async def test_delete_topics_is_strict_from_v5(broker):
    for name, partitions in (("d1", 12), ("d2", 1), ("d3", 1)):
        await create(broker, creatable(name, partitions))
    await _limit(broker)
    assert (await _delete(broker, "d1", 6)).responses[0].error_code == ErrorCode.NONE  # 12 of 11: -1
    refused = (await _delete(broker, "d2", 5)).responses[0]
    assert (refused.error_code, refused.error_message) == THROTTLED and broker.topics.get("d2") is not None
    assert (await _delete(broker, "d2", 4)).responses[0].error_code == ErrorCode.NONE  # permissive
    assert broker.topics.get("d2") is None


async def test_without_the_quota_nothing_is_counted(broker):
    resp = await call(broker, 19, 7, req(19, topics=[creatable("free", 50)], timeout_ms=1000))
    assert resp.topics[0].error_code == ErrorCode.NONE and resp.throttle_time_ms == 0
    assert broker.quotas.buckets == {}


async def test_client_ids_that_come_and_go_leave_no_bucket_behind_once_it_has_refilled(broker):
    """Kafka's bucket lives on the client's quota sensor, which expires once idle (ClientQuotaManager's
    InactiveSensorExpirationTimeSeconds): a bucket back at its burst is the same as a new one, so it is
    dropped at the next prune, while one still short of its burst keeps its debt."""
    assert await alter(broker, [([("client-id", None)], {"controller_mutation_rate": 1.0})]) == [(ErrorCode.NONE, None)]
    now = [broker.clock()]
    broker.clock = lambda: now[0]
    for i in range(20):
        await call(broker, 19, 7, req(19, topics=[creatable(f"c{i}", 1)], timeout_ms=1000), client_id=f"app-{i}")
    debt = await call(broker, 19, 7, req(19, topics=[creatable("big", 100)], timeout_ms=1000), client_id="debtor")
    assert debt.throttle_time_ms == 89_000  # 11 - 100 tokens at 1 a second
    assert len(broker.quotas.buckets) == 21
    now[0] += 61_000  # past the prune interval: the one-topic clients refilled, the debtor is still 28 short
    await call(broker, 19, 7, req(19, topics=[creatable("late", 1)], timeout_ms=1000), client_id="late")
    assert sorted(broker.quotas.buckets) == [(KEY, "", "debtor"), (KEY, "", "late")]
    again = await call(broker, 19, 7, req(19, topics=[creatable("more", 1)], timeout_ms=1000), client_id="debtor")
    assert again.topics[0].error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED and again.throttle_time_ms == 28_000
    tokens = {tuple(labels): value for name, _h, _l, rows in broker.quotas.metric_samples(now[0]) for labels, value
              in rows if name == "kafka_server_controllermutation_tokens"}  # fmt: skip
    assert tokens == {("", "debtor"): -28.0, ("", "late"): 10.0}


async def test_kafkas_controller_mutation_metrics(broker):
    await _limit(broker)
    await call(broker, 19, 7, req(19, topics=[creatable("x1", 12), creatable("x2", 1)], timeout_ms=1000))
    samples = {(name, tuple(labels)): value for name, _h, _l, rows in broker.quotas.metric_samples(broker.clock())
               for labels, value in rows}  # fmt: skip
    tags = ("", CLIENT)
    assert samples[("kafka_server_controllermutation_mutation_rate", tags)] == pytest.approx(12 / 10)  # x2 refused
    assert samples[("kafka_server_controllermutation_tokens", tags)] == -1
    assert samples[("kafka_server_controllermutation_throttle_time", tags)] == 1000


async def test_the_bucket_follows_kafkas_controller_quota_windows_not_the_client_quota_ones(tmp_path):
    """Kafka sizes the bucket with ``controller.quota.window.num`` and ``controller.quota.window.size.seconds``
    (QuotaFactory's controller mutation config); ``quota.window.num`` is the byte and request quotas' own."""
    for extra, throttle_ms in (({"quota_window_num": "2"}, 0),  # 11 x 1 s at 1 a second: 11 tokens, 1 left
                               ({"controller_quota_window_num": "3", "controller_quota_window_size_seconds": "2"},
                                4_000)):  # 3 x 2 s: 6 tokens, 4 short  # fmt: skip
        b = open_broker(tmp_path / str(throttle_ms), **extra)
        try:
            await _limit(b)
            resp = await call(b, 19, 5, req(19, topics=[creatable("b", 10)], timeout_ms=1000))
            assert (resp.topics[0].error_code, resp.throttle_time_ms) == (ErrorCode.NONE, throttle_ms)
        finally:
            b.close()
