"""broker.cleaning: the loop's one instrument tells the cleaners' gate when it is busy; the gate comes and goes with them."""

from __future__ import annotations

import threading

import pytest
import trio

from broker.cleaning import start_cleaner, stop_cleaner
from broker.loop_idle import LoopIdle
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
    gate, loop = RequestGate(), LoopIdle((2, 1000))
    loop.start()
    loop.gate = gate
    trio.lowlevel.add_instrument(loop)
    try:
        await trio.sleep(0)
        assert gate.busy  # this task is running
        with trio.fail_after(10):
            assert await _busy_seen_from_a_thread(gate) is False
    finally:
        trio.lowlevel.remove_instrument(loop)


async def test_start_cleaner_hands_its_gate_to_the_loop_instrument_and_stop_cleaner_takes_it_back(broker):  # noqa: F811
    broker.loop_idle.start()
    trio.lowlevel.add_instrument(broker.loop_idle)  # as serve_broker does before it starts the cleaner
    try:
        with trio.fail_after(20):
            cleaner = start_cleaner(broker)
            assert broker.loop_idle.gate is cleaner.gate and not hasattr(broker, "loop_activity")  # no 2nd instrument
            await trio.sleep(0)
            assert cleaner.gate.busy
            cleaner.gate.mark_busy()  # as if the loop were busy when the cleaner stops
            await stop_cleaner(broker)
        assert broker.loop_idle.gate is None and not cleaner.gate.busy  # no cleaner waits out a busy mark
        await trio.sleep(0)
        assert not cleaner.gate.busy  # the loop marks it no more
    finally:
        trio.lowlevel.remove_instrument(broker.loop_idle)


async def test_a_disabled_cleaner_hands_no_gate(tmp_path):
    from broker.config import BrokerConfig
    from broker.core import Broker

    props = {"log.dirs": str(tmp_path), "prometheus.port": "0", "log.cleaner.enable": "false"}
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        with trio.fail_after(20):
            start_cleaner(b)
            assert b.loop_idle.gate is None
            await stop_cleaner(b)
    finally:
        b.close()
