"""broker.cleaning: the trio loop tells the cleaners' gate when it is busy; the instrument comes and goes with them."""

from __future__ import annotations

import threading

import pytest
import trio

from broker.cleaning import _LoopActivity, start_cleaner, stop_cleaner
from cleaner import RequestGate
from tests.broker._admin_client import broker  # noqa: F401 - fixture

pytestmark = pytest.mark.timeout(30)


async def _busy_seen_from_a_thread(gate: RequestGate) -> bool:
    """What a cleaner thread sees while the loop waits for that very thread (an I/O wait)."""
    started, seen = threading.Event(), []
    done = trio.to_thread.run_sync(lambda: (started.wait(5), seen.append(gate.busy)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: done)
        await trio.sleep(0.05)  # the loop is idle, sleeping, when the thread looks
        started.set()
    return seen[0]


async def test_the_loop_is_busy_while_it_runs_tasks_and_idle_while_it_waits():
    gate = RequestGate()
    trio.lowlevel.add_instrument(_LoopActivity(gate))
    await trio.sleep(0)
    assert gate.busy  # this task is running
    with trio.fail_after(10):
        assert await _busy_seen_from_a_thread(gate) is False


async def test_start_cleaner_adds_the_instrument_and_stop_cleaner_removes_it(broker):  # noqa: F811
    with trio.fail_after(20):
        cleaner = start_cleaner(broker)
        activity = broker.loop_activity
        assert activity.gate is cleaner.gate
        await trio.sleep(0)
        assert cleaner.gate.busy
        cleaner.gate.mark_busy()  # as if the loop were busy when the instrument goes
        await stop_cleaner(broker)
    assert broker.loop_activity is None and not cleaner.gate.busy  # no cleaner waits out a busy mark
    with pytest.raises(KeyError):
        trio.lowlevel.remove_instrument(activity)


async def test_a_disabled_cleaner_adds_no_instrument(tmp_path):
    from broker.config import BrokerConfig
    from broker.core import Broker

    props = {"log.dirs": str(tmp_path), "prometheus.port": "0", "log.cleaner.enable": "false"}
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        with trio.fail_after(20):
            start_cleaner(b)
            assert getattr(b, "loop_activity", None) is None
            await stop_cleaner(b)
    finally:
        b.close()
