"""The group timer task's rounds (``broker.groups.timers``) on trio's MockClock, and the coordinators' deadlines.

A round that keeps raising (a broken group, a store that fails) must not
spin the task: rounds stay ``ROUND_S`` apart, the offset expiry check still
runs on its interval, and the traceback is logged once per ``LOG_EVERY_S``,
not once a round. A deadline that falls due while a round is storing (after
its ticks) must run as soon as the round ends: ``next_deadline`` reports the
earliest deadline whether it has passed or not (Kafka arms a timer per
deadline, so none is skipped). The end-to-end case runs a broker whose clock
follows trio's (``_TrioClock``) through ``dispatch``, with no network and no
fsync thread, so the autojumping clock makes it exact and quick. Within a
tick each group's timers run on their own: a group whose handling raises is
logged and the groups after it still expire on time.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import trio

from broker.groups.consumer_store import ConsumerStore
from broker.groups.timers import LOG_EVERY_S, ROUND_S, GroupTimers

from ._consumer_group_client import heartbeat as consumer_heartbeat
from ._consumer_group_client import make_topic, ready
from ._group_client import FakeClock, groups_broker, join_new, sync  # noqa: F401

pytestmark = pytest.mark.timeout(60)


class _Broken:
    """A coordinator stand-in whose tick always raises, so its deadline (long past) stays due; it records when
    each tick ran and ends the run after ``stop_after`` of them."""

    def __init__(self, stop_after: int) -> None:
        self.ticks: list[float] = []
        self.stop_after, self.scope = stop_after, trio.CancelScope()

    def next_deadline(self) -> int | None:
        return 0

    def tick(self) -> None:
        self.ticks.append(trio.current_time())
        if len(self.ticks) >= self.stop_after:
            self.scope.cancel()
        raise RuntimeError("a broken group")


class _Idle(_Broken):
    def next_deadline(self) -> int | None:
        return None

    def tick(self) -> None:
        return None


async def _run_failing_rounds(broken: _Broken, interval_ms: int = 100) -> list[float]:
    """Run the timer task until ``broken`` has ticked ``stop_after`` times; the expiry checks' times."""
    expiries: list[float] = []

    async def nothing() -> None:
        return None

    async def expire() -> None:
        expiries.append(trio.current_time())

    manager = SimpleNamespace(
        config=SimpleNamespace(offsets_retention_check_interval_ms=interval_ms), coordinator=broken,
        consumer=_Idle(10**9), clock=lambda: round(trio.current_time() * 1000), store_consumer_groups=nothing,
        expire_offsets=expire, store_retry_in=lambda: None)  # fmt: skip
    with broken.scope:
        await GroupTimers(manager).run()
    return expiries


async def test_a_round_that_keeps_failing_does_not_spin_the_timer_task(autojump_clock, caplog):
    broken = _Broken(stop_after=40)
    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        expiries = await _run_failing_rounds(broken)
    gaps = [b - a for a, b in zip(broken.ticks, broken.ticks[1:])]
    assert gaps == pytest.approx([ROUND_S] * 39), gaps  # the old code: back to back (20,000 rounds a second)
    # the expiry check keeps its interval though every round's tick raised
    assert [round(t, 3) for t in expiries] == [round(0.1 * i, 3) for i in range(1, len(expiries) + 1)]
    assert len(expiries) >= 19
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1, [r.getMessage() for r in logged]  # not 40 tracebacks
    assert "the classic group timers failed" in logged[0].getMessage()


async def test_a_conversion_left_queued_by_a_failed_store_is_retried_after_a_round(autojump_clock):
    """A ``converted`` mark still queued (its classic tombstone not written; nothing else queued) brings the next
    round after ``ROUND_S``; the old code looked at ``dirty`` and ``downgraded`` only and slept ``MAX_SLEEP_S``."""
    consumer, stores, scope = _Idle(10**9), [], trio.CancelScope()
    consumer.dirty, consumer.converted, consumer.downgraded = set(), {"cg"}, {}

    async def store() -> None:
        stores.append(trio.current_time())
        if len(stores) == 2:
            scope.cancel()

    async def nothing() -> None:
        return None

    manager = SimpleNamespace(
        config=SimpleNamespace(offsets_retention_check_interval_ms=10**9), coordinator=_Idle(10**9),
        consumer=consumer, clock=lambda: round(trio.current_time() * 1000), store_consumer_groups=store,
        expire_offsets=nothing, store_retry_in=ConsumerStore(None, consumer, {}).retry_in)  # fmt: skip
    with scope:
        await GroupTimers(manager).run()
    assert stores == pytest.approx([ROUND_S, 2 * ROUND_S])


async def test_a_lasting_failure_logs_its_traceback_once_per_interval_with_the_count(autojump_clock, caplog):
    rounds = int((LOG_EVERY_S + 1) / ROUND_S)
    broken = _Broken(stop_after=rounds)
    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        await _run_failing_rounds(broken, interval_ms=10**9)
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 2, [r.getMessage() for r in logged]
    second = broken.ticks.index(next(t for t in broken.ticks if t - broken.ticks[0] >= LOG_EVERY_S))
    assert f"({second - 1} more failures since the last logged)" in logged[1].getMessage()


class _TrioClock(FakeClock):
    """The broker's clock (ms): its fixed start plus trio's time while a run is going, so sleeps move it."""

    def __call__(self) -> int:
        try:
            return self.now + int(trio.current_time() * 1000)
        except RuntimeError:  # outside trio (the broker opening): the start
            return self.now


@pytest.fixture
def clock():
    return _TrioClock()


@pytest.fixture
def group_props():
    return {"group.consumer.min.session.timeout.ms": "100", "group.consumer.session.timeout.ms": "500",
            "group.consumer.heartbeat.interval.ms": "100"}  # fmt: skip


async def test_a_session_that_ends_while_a_round_stores_is_fenced_when_the_round_ends(groups_broker,
                                                                                      autojump_clock):  # fmt: skip
    """m-1's session ends at 500 ms and m-2's at 530 ms; fencing m-1 stores for 100 ms, in which m-2's ends:
    it is fenced once that round is over (600 ms), not up to ``MAX_SLEEP_S`` later."""
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.groups.run)
        assert (await consumer_heartbeat(b, member_id="m-1")).error_code == 0
        await trio.sleep(0.03)
        assert (await consumer_heartbeat(b, member_id="m-2")).error_code == 0
        started = trio.current_time()
        durable = b.wait_durable

        async def slow_durable():
            await trio.sleep(0.1)
            return await durable()

        b.wait_durable = slow_durable
        members = b.groups.groups["cg"].members
        while "m-2" in members:
            await trio.sleep(0.001)
        took = trio.current_time() - started
        nursery.cancel_scope.cancel()
    assert took == pytest.approx(0.57, abs=0.005), took  # 5.57 s before: the 5 s cap of a sleep


async def test_a_deadline_that_passed_before_the_tick_is_still_the_next_deadline(groups_broker):
    """What ``next_deadline`` reports between a deadline passing and the tick that runs it: that deadline."""
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    joined = await join_new(b, "g", session=1_000, rebalance=1_000)
    assert (await sync(b, "g", joined.generation_id, joined.member_id, {joined.member_id: b"a"})).error_code == 0
    classic_end = b.groups.groups["g"].members[joined.member_id].heartbeat_deadline
    assert (await consumer_heartbeat(b, member_id="m-1")).error_code == 0
    consumer_end = b.groups.groups["cg"].session_deadlines["m-1"]
    b.clock.now += 10_000  # both passed; no tick ran
    assert b.groups.coordinator.next_deadline() == classic_end  # None before: only later ones counted
    assert b.groups.consumer.next_deadline() == consumer_end


async def _members_gone_after(b, group_ids: list[str], join) -> float:
    """Run the timer task with members in ``group_ids`` (joined by ``join``); the first group's handling raises.
    Seconds until the last group has no member left (at most 10)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.groups.run)
        for group_id in group_ids:
            await join(group_id)
        started = trio.current_time()
        last = b.groups.groups[group_ids[-1]]
        with trio.move_on_after(10):  # the old code: never
            while last.members:
                await trio.sleep(0.001)
        took = trio.current_time() - started
        nursery.cancel_scope.cancel()
    return took


def _break_for(monkeypatch, owner, name: str, group_id: str) -> None:
    """``owner.name(group, ...)`` raises for ``group_id`` and works as before for the other groups."""
    real = getattr(owner, name)

    def broken(group, *args):
        if group.group_id == group_id:
            raise RuntimeError("a broken group")
        real(group, *args)

    monkeypatch.setattr(owner, name, broken)


async def test_a_classic_group_whose_timers_raise_does_not_stop_the_next_one(groups_broker, autojump_clock,
                                                                            monkeypatch, caplog):  # fmt: skip
    """Group "a"'s expired member cannot be removed (its handling raises); group "g"'s member still goes when its
    1 s session ends. Before, every tick raised at "a" and "g" was never reached."""
    b = groups_broker
    await ready(b)
    _break_for(monkeypatch, b.groups.coordinator, "remove_member", "a")

    async def stable(group_id: str) -> None:
        joined = await join_new(b, group_id, session=1_000, rebalance=1_000)
        await sync(b, group_id, joined.generation_id, joined.member_id, {joined.member_id: b"x"})

    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        took = await _members_gone_after(b, ["a", "g"], stable)
    assert took == pytest.approx(1.0, abs=ROUND_S + 0.005), took
    assert list(b.groups.groups["a"].members)  # still there: its handling keeps raising
    assert any("classic group a" in r.getMessage() for r in caplog.records if r.exc_info)


async def test_a_consumer_group_whose_timers_raise_does_not_stop_the_next_one(groups_broker, autojump_clock,
                                                                             monkeypatch, caplog):  # fmt: skip
    """The same for KIP-848 groups: "ca"'s member cannot be fenced, "cg"'s is fenced when its 500 ms session ends."""
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    _break_for(monkeypatch, b.groups.consumer, "fence", "ca")

    async def member(group_id: str) -> None:
        assert (await consumer_heartbeat(b, member_id=f"{group_id}-1", group=group_id)).error_code == 0

    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        took = await _members_gone_after(b, ["ca", "cg"], member)
    assert took == pytest.approx(0.5, abs=ROUND_S + 0.005), took
    assert list(b.groups.groups["ca"].members) == ["ca-1"]
    assert any("consumer group ca" in r.getMessage() for r in caplog.records if r.exc_info)


async def test_a_second_failure_is_logged_on_its_own_not_hidden_behind_the_first(caplog):
    """Group a's timers fail, then group b's within the minute: both tracebacks are logged (each failure has its
    own rate limit); a's second failure is counted, not logged. One limit for all hid b's traceback."""
    timers = GroupTimers(SimpleNamespace())
    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        for what in [f"the timers of consumer group {g}" for g in "aba"]:
            try:
                raise RuntimeError(what)
            except RuntimeError:
                timers.failed(what)
    logged = [r.getMessage() for r in caplog.records if r.exc_info]
    assert logged == ["group timers: the timers of consumer group a failed (0 more failures since the last logged)",
                      "group timers: the timers of consumer group b failed (0 more failures since the last logged)"]


async def test_the_log_limit_forgets_groups_that_stopped_failing(autojump_clock, caplog):
    """One entry per failing group was kept forever; now one logged over ``LOG_EVERY_S`` ago without a failure
    since is dropped at the next failure, and a step that succeeds drops its own."""
    timers = GroupTimers(SimpleNamespace())
    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        for what in [f"the timers of consumer group g{i}" for i in range(100)]:
            try:
                raise RuntimeError(what)
            except RuntimeError:
                timers.failed(what)
        await trio.sleep(LOG_EVERY_S)
        try:
            raise RuntimeError("again")
        except RuntimeError:
            timers.failed("the timers of consumer group g0")
    assert list(timers._logged) == ["the timers of consumer group g0"]

    async def works() -> None:
        return None

    await timers._guarded("the timers of consumer group g0", works)
    assert timers._logged == {}
