"""The group timer task's rounds (``broker.groups.timers``) on trio's MockClock.

A round that keeps raising (a broken group, a store that fails) must not
spin the task: rounds stay ``ROUND_S`` apart, the offset expiry check still
runs on its interval, and the traceback is logged once per ``LOG_EVERY_S``,
not once a round.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import trio

from broker.groups.timers import LOG_EVERY_S, ROUND_S, GroupTimers

pytestmark = pytest.mark.timeout(60)


class _Broken:
    """A coordinator stand-in whose tick always raises, so its deadline (long past) stays due; it records when
    each tick ran and ends the run after ``stop_after`` of them."""

    dirty = downgraded = False

    def __init__(self, stop_after: int) -> None:
        self.ticks: list[float] = []
        self.stop_after, self.scope = stop_after, trio.CancelScope()

    def next_deadline(self, now: int) -> int | None:
        return 0

    def tick(self) -> None:
        self.ticks.append(trio.current_time())
        if len(self.ticks) >= self.stop_after:
            self.scope.cancel()
        raise RuntimeError("a broken group")


class _Idle(_Broken):
    def next_deadline(self, now: int) -> int | None:
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
        expire_offsets=expire)  # fmt: skip
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


async def test_a_lasting_failure_logs_its_traceback_once_per_interval_with_the_count(autojump_clock, caplog):
    rounds = int((LOG_EVERY_S + 1) / ROUND_S)
    broken = _Broken(stop_after=rounds)
    with caplog.at_level(logging.ERROR, logger="minibroker.groups"):
        await _run_failing_rounds(broken, interval_ms=10**9)
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 2, [r.getMessage() for r in logged]
    second = broken.ticks.index(next(t for t in broken.ticks if t - broken.ticks[0] >= LOG_EVERY_S))
    assert f"({second - 1} more failures since the last logged)" in logged[1].getMessage()
