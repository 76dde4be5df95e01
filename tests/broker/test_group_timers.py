"""The group coordinators' timer task (``GroupManager.run``) sleeps until the next deadline it knows.

Kafka's coordinator arms a timer per deadline (session, rebalance, initial
delay, KIP-848 member timers) and does nothing in between. These tests serve
a broker on port 0 (its real clock) and count the timer task's rounds (calls
of ``GroupCoordinator.tick``): none in a second on a broker without groups;
and a classic member's and a KIP-848 member's session that stop
heartbeating still end when their session timeout runs out, though each was
armed by a request while the task slept with no deadline at all (the
classic one also when its SyncGroup's changes come after an await).
"""

from __future__ import annotations

import pytest
import trio

from broker.config import BrokerConfig
from broker.server import serve_broker

from ._consumer_group_client import heartbeat as consumer_heartbeat
from ._consumer_group_client import make_topic, ready
from ._group_client import join_new, sync

pytestmark = pytest.mark.timeout(60)
SESSION_MS = 500
LATE_S = 0.25  # the allowed lateness: scheduling on a busy 2-core machine


def _config(tmp_path, **extra: str) -> BrokerConfig:
    return BrokerConfig.from_props({
        "log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "100", "prometheus.port": "0", **extra,
    })  # fmt: skip


def _count_ticks(b) -> list[int]:
    ticks = [0]
    tick = b.groups.coordinator.tick

    def counted() -> None:
        ticks[0] += 1
        tick()

    b.groups.coordinator.tick = counted
    return ticks


async def _gone_after(present, started: float | None = None) -> float:
    """Seconds from ``started`` (now, by default) until ``present()`` turns false (checked every 10 ms)."""
    started = trio.current_time() if started is None else started
    while present():
        await trio.sleep(0.01)
    return trio.current_time() - started


async def test_an_idle_broker_runs_no_group_timer_rounds(tmp_path):
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b = await nursery.start(serve_broker, _config(tmp_path))
            ticks = _count_ticks(b)
            await trio.sleep(1)
            assert ticks[0] == 0  # polling every 50 ms made 20
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("store_delay_s", [0, 0.2], ids=["store-at-once", "slow-store"])
async def test_a_classic_session_ends_on_time_without_polling(tmp_path, store_delay_s):
    """With a slow store, the timer task looks while the leader's SyncGroup waits for the assignment to be
    stored (its parked sync holds the session back); the session starts again when the sync is answered (Kafka's
    ``propagateAssignment``), and must then run out on time."""
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b = await nursery.start(serve_broker, _config(tmp_path))
            await b.groups.store.ready()
            write_group = b.groups.store.write_group

            async def slow_write_group(group):
                await trio.sleep(store_delay_s)
                return await write_group(group)

            b.groups.store.write_group = slow_write_group
            ticks = _count_ticks(b)
            joined = await join_new(b, "g", session=SESSION_MS, rebalance=SESSION_MS)
            assert joined.error_code == 0
            synced = await sync(b, "g", joined.generation_id, joined.member_id, {joined.member_id: b"a"})
            started = trio.current_time()  # answering the SyncGroup restarts the session
            assert synced.error_code == 0
            took = await _gone_after(lambda: joined.member_id in b.groups.groups["g"].members, started)
            assert SESSION_MS / 1000 - 0.05 < took < SESSION_MS / 1000 + LATE_S, took
            assert ticks[0] < 10, ticks  # a few rounds for the requests and the deadline, not one per 50 ms
            nursery.cancel_scope.cancel()


async def test_a_consumer_group_session_ends_on_time_without_polling(tmp_path):
    config = _config(tmp_path, **{"group.consumer.min.session.timeout.ms": "100",
                                  "group.consumer.session.timeout.ms": str(SESSION_MS),
                                  "group.consumer.heartbeat.interval.ms": "100"})  # fmt: skip
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b = await nursery.start(serve_broker, config)
            await ready(b)
            await make_topic(b, "t", 1)
            ticks = _count_ticks(b)
            joined = await consumer_heartbeat(b, member_id="m-1")
            assert joined.error_code == 0
            took = await _gone_after(lambda: joined.member_id in b.groups.groups["cg"].members)
            assert SESSION_MS / 1000 - 0.05 < took < SESSION_MS / 1000 + LATE_S, took
            assert ticks[0] < 10, ticks
            nursery.cancel_scope.cancel()


class _Quiet:
    """A coordinator stand-in: no deadline until ``arm`` sets one (without waking the task); counts ticks."""

    def __init__(self) -> None:
        self.deadline: int | None = None
        self.ticks: list[float] = []

    def next_deadline(self) -> int | None:
        return self.deadline

    def tick(self) -> None:
        self.ticks.append(trio.current_time())
        self.deadline = None


async def test_a_deadline_armed_without_a_wake_is_still_seen_within_the_longest_sleep(autojump_clock):
    """A deadline no request announced (``moved()`` not called) waits at most ``MAX_SLEEP_S``, not forever."""
    from types import SimpleNamespace

    from broker.groups.timers import MAX_SLEEP_S, GroupTimers

    classic, consumer = _Quiet(), _Quiet()

    async def nothing() -> None:
        return None

    manager = SimpleNamespace(
        config=SimpleNamespace(offsets_retention_check_interval_ms=10**9), coordinator=classic, consumer=consumer,
        clock=lambda: int(trio.current_time() * 1000), store_consumer_groups=nothing, expire_offsets=nothing,
        store_retry_in=lambda: None)  # fmt: skip
    async with trio.open_nursery() as nursery:
        nursery.start_soon(GroupTimers(manager).run)
        await trio.sleep(1)
        classic.deadline = int(trio.current_time() * 1000) + 10  # armed quietly
        await trio.sleep(MAX_SLEEP_S + 0.5)
        nursery.cancel_scope.cancel()
    assert classic.ticks and classic.ticks[0] <= 1 + MAX_SLEEP_S + 0.1
