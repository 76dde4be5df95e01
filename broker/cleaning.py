"""The log cleaner inside the broker: started and stopped with the server, swaps on the trio thread.

The cleaner's threads do the heavy work (reading segments, building the
offset map, writing ``.cleaned`` files). The few steps that change a log's
segment list (the swap, the checkpoint, retention of the compacted logs,
which is the cleaner's as in Kafka's ``cleanupLogs``) are handed to the trio thread with ``trio.from_thread.run_sync``, so
storage keeps its single-owner rule and appends or fetches wait only for
those renames. ``start_cleaner`` registers the cleaner's scrape-time gauges
(``cleaner.metrics``) and shortens the GIL switch interval (see
``GIL_SWITCH_INTERVAL_S``) and hands the cleaners' ``RequestGate``
(``cleaner.gate``) to the loop's one instrument, ``broker.loop_idle``, which
tells it when the loop has work (after an I/O wait) and when it goes back to
waiting (before an I/O wait with a timeout), so the cleaners pause between
steps while requests are answered. ``stop_cleaner`` takes the gate back and
stops the threads from a worker thread so the trio loop keeps serving swaps
while they finish.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import trio

from cleaner import CleanerConfig, LogCleaner, RequestGate
from cleaner import metrics as cleaner_metrics

# The cleaner threads are CPU-bound Python: with CPython's default 5 ms switch interval the trio
# thread waits up to 5 ms for the GIL after every socket call, and produce p99 rises ~50x while a
# log is cleaned (bench/bench_cleaner.py). 0.5 ms keeps it near the idle figure (with the gate);
# shorter intervals were measured worse (more handoffs), 5 ms even with the gate 3-9x idle.
GIL_SWITCH_INTERVAL_S = 0.0005


def _owner(token: trio.lowlevel.TrioToken) -> Callable[[Callable[[], Any]], Any]:
    def run(fn: Callable[[], Any]) -> Any:
        return trio.from_thread.run_sync(fn, trio_token=token)

    return run


def start_cleaner(broker: Any) -> LogCleaner | None:
    """Start ``log.cleaner.threads`` threads unless ``log.cleaner.enable=false``; gauges either way."""
    manager = broker.topics.manager
    config = CleanerConfig.from_props(manager.model.other)
    cleaner = LogCleaner(manager, config, clock=broker.clock, owner=_owner(trio.lowlevel.current_trio_token()))
    broker.cleaner = cleaner
    broker.metrics.add_state_collector(lambda: cleaner_metrics.samples(cleaner))
    if config.enable:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        broker.loop_idle.gate = cleaner.gate  # the server's loop instrument marks it busy and idle
        cleaner.start()
    return cleaner


async def stop_cleaner(broker: Any) -> None:
    gate: RequestGate | None = broker.loop_idle.gate
    if gate is not None:
        broker.loop_idle.gate = None
        gate.mark_idle()  # nobody marks it any more: a paused cleaner must not wait it out
    cleaner = getattr(broker, "cleaner", None)
    if cleaner is not None:
        await trio.to_thread.run_sync(cleaner.stop)
