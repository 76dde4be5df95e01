"""``request_percentage`` quotas (KIP-124, ``broker/request_time.py`` and ``broker/quotas.py``): the time the
event loop runs a client's requests, Kafka's bounded throttle, the empty Fetch, the
exempt WriteTxnMarkers and the time spent sending, in-process; and the throttle of a Fetch that fails
after it recorded it, on its error answer."""

from __future__ import annotations

import time

import attrs
import pytest
import trio

from broker.dispatch import REGISTRY
from broker.handlers import fetch as fetch_handler
from broker.quotas import record_send_time
from broker.request_time import TaskTime
from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, fake_connection, req  # noqa: F401  (broker: a fixture)
from .test_client_quotas import CLIENT, alter, fetch, produce


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_only_the_steps_of_the_watched_task_count():
    timer = TaskTime()

    async def other():
        await trio.sleep(0.01)
        _busy(0.05)  # runs while the watched task sleeps: not its time

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            timer.sync(True)
            nursery.start_soon(other)
            timer.begin()
            _busy(0.02)
            await trio.sleep(0.1)  # waiting is not running
            _busy(0.02)
            seconds = timer.end()
            timer.sync(False)
    assert 0.04 <= seconds < 0.055
    assert not timer.watched and not timer.installed


async def metadata(broker, version: int, connection):
    return await call(broker, 3, version, req(3, topics=[]), connection=connection)


async def test_a_client_over_its_request_percentage_is_throttled_for_at_most_a_window(broker):
    assert await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 0.0001})]) == [(ErrorCode.NONE, None)]
    assert broker.request_time.installed is False  # installed by the next request
    conn = fake_connection(throttle=None)
    resp = await metadata(broker, 6, conn)
    assert broker.request_time.installed
    assert 0 < resp.throttle_time_ms <= 1000  # bounded by quota.window.size.seconds
    assert conn.throttle == resp.throttle_time_ms  # muted that long once the answer is out
    assert conn.answering == ("ANONYMOUS", CLIENT)
    old = fake_connection(throttle=None)
    await metadata(broker, 5, old)
    assert old.throttle > 0  # Metadata v5 too: Kafka mutes every version the same way
    quotas = broker.quotas
    rate = quotas.measures[("request_percentage", "", CLIENT)].rate(broker.clock())
    assert rate > 0.0001
    samples = {name: rows for name, _h, _l, rows in quotas.metric_samples(broker.clock())}
    assert samples["kafka_server_request_request_time"][0][0] == ["", CLIENT]
    assert samples["kafka_server_request_throttle_time"][0][1] > 0
    assert await alter(broker, [([("client-id", CLIENT)], {"request_percentage": None})]) == [(ErrorCode.NONE, None)]
    unthrottled = fake_connection(throttle=None)
    assert (await metadata(broker, 6, unthrottled)).throttle_time_ms == 0 and unthrottled.throttle is None
    assert not broker.request_time.installed  # removed once no entity has the quota


async def test_within_the_quota_nothing_is_throttled(broker):
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 1000.0})])
    conn = fake_connection(throttle=None)
    for _ in range(5):
        assert (await metadata(broker, 9, conn)).throttle_time_ms == 0
    assert conn.throttle is None


async def test_a_fetch_over_the_request_quota_is_answered_empty(broker):
    await create_ok(broker, "rq")
    await produce(broker, "rq", 5_000)
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 0.0001})])
    conn = fake_connection(throttle=None)
    resp = await fetch(broker, "rq", 100_000, conn)
    assert resp.responses == [] and 0 < resp.throttle_time_ms <= 1000
    assert conn.throttle == resp.throttle_time_ms


async def test_a_produce_gets_the_longer_of_its_two_throttles(broker):
    await create_ok(broker, "rp")
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 0.0001, "producer_byte_rate": 1e9})])
    conn = fake_connection(throttle=None)
    resp = await produce(broker, "rp", 3_000, connection=conn)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE  # appended all the same
    assert 0 < resp.throttle_time_ms <= 1000 and conn.throttle == resp.throttle_time_ms


async def test_write_txn_markers_is_exempt(broker):
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 0.0001})])
    conn = fake_connection(throttle=None)
    await call(broker, 27, 1, req(27, markers=[]), connection=conn)
    assert conn.throttle is None
    assert ("request_percentage", "", CLIENT) not in broker.quotas.measures


async def test_the_time_spent_sending_counts_but_never_throttles(broker):
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 0.0001})])
    record_send_time(broker, ("ANONYMOUS", CLIENT), 0.5)
    measure = broker.quotas.measures[("request_percentage", "", CLIENT)]
    assert measure.rate(broker.clock()) == pytest.approx(50 / 10, rel=0.01)  # 0.5 s of a thread over 10 s
    assert ("request_percentage", "", CLIENT) not in broker.quotas.throttles


async def test_a_request_that_fails_leaves_no_watch_behind(broker, monkeypatch):
    await alter(broker, [([("client-id", CLIENT)], {"request_percentage": 1000.0})])
    await metadata(broker, 9, fake_connection(throttle=None))  # installs the instrument

    async def broken(ctx, request):
        raise RuntimeError("a bug in a handler")

    monkeypatch.setitem(REGISTRY, 3, attrs.evolve(REGISTRY[3], fn=broken))
    resp = await metadata(broker, 13, fake_connection(throttle=None))  # answered UNKNOWN_SERVER_ERROR (dispatch)
    assert resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert broker.request_time.installed and broker.request_time.watched == {}


@pytest.mark.parametrize("quota", ["consumer_byte_rate", "request_percentage"])
async def test_a_fetch_that_fails_after_its_throttle_answers_with_that_throttle(broker, monkeypatch, quota):
    """Its error answer (UNKNOWN_SERVER_ERROR) carries the throttle the connection is muted for, as Kafka's
    ``handleError`` sends ``getErrorResponse(throttleTimeMs)`` with the throttle it mutes the channel for
    (``RequestHandlerHelper.sendErrorResponseMaybeThrottle``); before, it said 0."""
    await create_ok(broker, "ft")
    for _ in range(3):
        await produce(broker, "ft", 10_000)
    limit = {"consumer_byte_rate": 2_000.0, "request_percentage": 0.0001}[quota]  # the fetch below is over it
    await alter(broker, [([("client-id", CLIENT)], {quota: limit})])
    recorded, throttles = fetch_handler._quota, []

    def fails_after_its_throttle(ctx, resp, answered) -> int:
        throttles.append(recorded(ctx, resp, answered))
        raise RuntimeError("injected after the throttle")

    monkeypatch.setattr(fetch_handler, "_quota", fails_after_its_throttle)
    conn = fake_connection(throttle=None)
    resp = await fetch(broker, "ft", 100_000, conn)
    assert resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and throttles[0] > 0
    assert resp.throttle_time_ms == conn.throttle == throttles[0]
