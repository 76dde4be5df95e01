"""When the group coordinators' timers run: a trio task that sleeps until the next deadline.

Kafka's coordinator arms a timer for each deadline (a member's session, a
rebalance, the initial rebalance delay, KIP-848 member timers) and does
nothing in between. Here the deadlines are fields of the groups, which
``GroupCoordinator.tick`` and ``ConsumerCoordinator.tick`` compare with the
broker's clock; ``GroupTimers.run`` calls them (then stores what a fenced
consumer group changed, and checks offset expiry every
``offsets.retention.check.interval.ms``) and sleeps until the first deadline
either coordinator reports (``next_deadline``) or the next expiry check,
whichever comes first, and never longer than ``MAX_SLEEP_S``: the expiry
check is always there, so even a broker without groups wakes for it, and
an idle broker runs a round every ``MAX_SLEEP_S`` (5 s), not every
``ROUND_S``. ``next_deadline`` reports a deadline that has already passed
too: one that fell due while a round was storing (after its ticks) runs as
soon as that round is over, as Kafka's own timer for it would, rather than
being skipped until a later deadline.

A request that may arm or move a deadline, or end a parked JoinGroup or
SyncGroup (which holds a member's session back), calls ``moved()``
(``GroupManager.timers_moved``), which wakes the sleep. Waking a trio task
only schedules it, so one call at the start of a request counts for every
change it makes before its first await; code that changes deadlines after an
await (a stored assignment, a stored static member's new id) calls it again.
Woken or due, the task never starts a round sooner than ``ROUND_S`` after
the last one began: a group's steady heartbeats then cost at most the rounds
a 50 ms poll did, a deadline is run at most that late, and a round that
keeps failing (a broken group, a store that raises) cannot spin the task.
Consumer-group changes whose write failed (anything still queued: dirty,
converted or downgraded) are tried again after their group's pause
(``ConsumerStore.retry_in``: ``ROUND_S``, doubling while the group keeps
failing, up to ``MAX_SLEEP_S``). Each step
of a round (the two ticks, the store, the expiry check) is guarded on its
own, so one that raises does not stop the others, and the expiry check
moves on to its next interval even when it failed; within a tick each
group's timers are guarded too (the coordinators' ``timer_failed`` is
``failed`` here), so one broken group does not hold back the others'
deadlines, as Kafka runs each timer on its own. Each failing step or group
logs its traceback at most once per ``LOG_EVERY_S``, with the count of its
failures not logged since (at one round per ``ROUND_S`` a lasting failure
would otherwise write twenty tracebacks a second); another's failure is
logged on its own, not hidden behind the first. No sleep is longer
than ``MAX_SLEEP_S``: a deadline armed by a path that did not call
``moved()``, or a wall-clock jump (the deadlines are on the broker's clock,
the sleep on trio's), is still seen within it.
"""

from __future__ import annotations

import inspect
import logging
import math
from typing import Any, Callable

import trio

log = logging.getLogger("minibroker.groups")
ROUND_S = 0.05  # the shortest time between two rounds that requests wake
MAX_SLEEP_S = 5.0  # the longest sleep: a safety net, not the timers' precision (module docstring)
LOG_EVERY_S = 60.0  # a step that keeps failing logs its traceback once in this time, not every round


def log_timer_failure(what: str) -> None:
    """What a coordinator's ``timer_failed`` does until ``GroupManager`` wires in ``GroupTimers.failed`` (with
    its rate limit): a group's timers raised."""
    log.exception("group timers: %s failed", what)


class GroupTimers:
    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self._moved = trio.Event()
        self._logged: dict[str, tuple[float, int]] = {}  # per failing step or group: when its traceback was last
        # logged, and its failures since then, not logged

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
            # each step on its own: one that raises (a broken group) must not stop the others
            await self._guarded("the classic group timers", m.coordinator.tick)
            await self._guarded("the consumer group timers", m.consumer.tick)
            await self._guarded("storing the consumer groups", m.store_consumer_groups)
            if m.clock() - last_expiry >= interval_ms:
                last_expiry = m.clock()  # moved on even when the check fails: it waits for the next interval
                await self._guarded("the offset expiry check", m.expire_offsets)

    async def _guarded(self, what: str, step: Callable[[], Any]) -> None:
        """Run one step of a round; a failure is logged, with its traceback at most once per ``LOG_EVERY_S``."""
        try:
            result = step()
            if inspect.isawaitable(result):
                await result
        except Exception:
            self.failed(what)
        else:
            self._logged.pop(what, None)  # it works again: a later failure is news

    def failed(self, what: str) -> None:
        """Log the exception being handled: its traceback at most once per ``LOG_EVERY_S``, else counted. The
        coordinators call it too (``timer_failed``), for a group whose timers raised."""
        now = trio.current_time()
        self._prune(now)
        logged_at, unlogged = self._logged.get(what, (None, 0))
        if logged_at is not None and now - logged_at < LOG_EVERY_S:
            self._logged[what] = (logged_at, unlogged + 1)
            return
        log.exception("group timers: %s failed (%d more failures since the last logged)", what, unlogged)
        self._logged[what] = (now, 0)

    def _prune(self, now: float) -> None:
        """Forget the steps and groups logged over ``LOG_EVERY_S`` ago with no failure since: their next failure
        is logged anyway, so the entries of groups that stopped failing (or are gone) do not pile up."""
        stale = [w for w, (at, unlogged) in self._logged.items() if now - at >= LOG_EVERY_S and not unlogged]
        for what in stale:
            del self._logged[what]

    async def _sleep(self, expiry_at: int, last_round: float) -> None:
        """Until the first deadline (ms on the broker's clock) or a wake, and never less than ``ROUND_S`` after the
        last round began."""
        m = self.manager
        now = m.clock()
        due = [expiry_at, m.coordinator.next_deadline(), m.consumer.next_deadline()]  # a passed one: at once
        first = min(d for d in due if d is not None)
        retry = m.store_retry_in()  # a failed store: again after its pause (``ConsumerStore.retry_in``)
        if retry is not None:
            first = min(first, now + math.ceil(retry * 1000))
        with trio.move_on_after(min(max(first - now, 0) / 1000, MAX_SLEEP_S)):
            await self._moved.wait()
        await trio.sleep_until(last_round + ROUND_S)  # the floor: due or woken, no round sooner than this
