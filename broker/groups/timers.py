"""When the group coordinators' timers run: a trio task that sleeps until the next deadline.

Kafka's coordinator arms a timer for each deadline (a member's session, a
rebalance, the initial rebalance delay, KIP-848 member timers) and does
nothing in between. Here the deadlines are fields of the groups, which
``GroupCoordinator.tick`` and ``ConsumerCoordinator.tick`` compare with the
broker's clock; ``GroupTimers.run`` calls them (then stores what a fenced
consumer group changed, and checks offset expiry every
``offsets.retention.check.interval.ms``) and sleeps until the first deadline
either coordinator reports (``next_deadline``), the next expiry check, or
forever on a broker without them.

A request that may arm or move a deadline, or end a parked JoinGroup or
SyncGroup (which holds a member's session back), calls ``moved()``
(``GroupManager.timers_moved``), which wakes the sleep. Waking a trio task
only schedules it, so one call at the start of a request counts for every
change it makes before its first await; code that changes deadlines after an
await (a stored assignment, a stored static member's new id) calls it again.
Woken so, the task waits until ``ROUND_S`` after its last round before it
looks again: a group's steady heartbeats then cost at most the rounds a 50 ms
poll did, and a deadline a request armed is seen within that time, as before.
A consumer group whose changes failed to be stored is tried again after the
same pause. No sleep is longer than ``MAX_SLEEP_S``: a deadline armed by a
path that did not call ``moved()``, or a wall-clock jump (the deadlines are
on the broker's clock, the sleep on trio's), is still seen within it.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

log = logging.getLogger("minibroker.groups")
ROUND_S = 0.05  # the shortest time between two rounds that requests wake
MAX_SLEEP_S = 5.0  # the longest sleep: a safety net, not the timers' precision (module docstring)


class GroupTimers:
    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self._moved = trio.Event()

    def moved(self) -> None:
        self._moved.set()

    async def run(self) -> None:
        m = self.manager
        interval_ms = m.config.offsets_retention_check_interval_ms
        last_expiry = m.clock()
        last_round = trio.current_time()
        while True:
            await self._sleep(last_expiry + interval_ms, last_round)
            last_round = trio.current_time()
            self._moved = trio.Event()  # what a request changes from here on wakes the next sleep
            try:
                m.coordinator.tick()
                m.consumer.tick()
                await m.store_consumer_groups()
                if m.clock() - last_expiry >= interval_ms:
                    last_expiry = m.clock()
                    await m.expire_offsets()
            except Exception:  # one broken group must not stop the timers of the others
                log.exception("group duties failed")

    async def _sleep(self, expiry_at: int, last_round: float) -> None:
        """Until the first deadline (ms on the broker's clock) or, once woken, ``ROUND_S`` after the last round."""
        m = self.manager
        now = m.clock()
        due = [expiry_at, m.coordinator.next_deadline(now), m.consumer.next_deadline(now)]
        first = min(d for d in due if d is not None)
        if m.consumer.dirty or m.consumer.downgraded:  # a failed store: tried again after a round's pause
            first = min(first, now + int(ROUND_S * 1000))
        with trio.move_on_after(min(max(first - now, 0) / 1000, MAX_SLEEP_S)):
            await self._moved.wait()
            await trio.sleep_until(last_round + ROUND_S)
