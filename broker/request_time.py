"""Time the event loop spends on a connection's requests, for ``request_percentage`` quotas (KIP-124).

Kafka measures each request's time on its request handler thread (and,
recorded after the answer is sent, on its network thread) and counts it
against the client's ``request_percentage``. Here every connection is one trio
task on the event loop's thread, and a handler may await (a long-poll Fetch,
a JoinGroup waiting for its group), which must not count: only the time the
task actually runs does. ``TaskTime`` is a trio instrument that adds up the
steps of the tasks it is asked to watch; ``begin`` starts a watch on the
current task (from now, the step under way included), ``elapsed`` reads it,
``end`` reads and drops it.

The instrument costs two clock reads per task step of every task, so the
broker keeps it installed only while some entity has a ``request_percentage``
quota (``sync``), as Kafka measures nothing while no quota is set.
"""

from __future__ import annotations

import time

import trio


class TaskTime(trio.abc.Instrument):
    """Seconds each watched task has run since its watch began."""

    def __init__(self) -> None:
        self.watched: dict[trio.lowlevel.Task, float] = {}
        self.step_started = 0.0
        self.installed = False

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.step_started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.watched:
            self.watched[task] += time.perf_counter() - self.step_started

    def sync(self, wanted: bool) -> None:
        """Install the instrument when ``wanted`` and not yet installed; remove it when no longer wanted."""
        if wanted != self.installed:
            (trio.lowlevel.add_instrument if wanted else trio.lowlevel.remove_instrument)(self)
            self.installed = wanted
            self.watched.clear()
            self.step_started = time.perf_counter()  # the step under way counts from here

    def begin(self) -> None:
        """Watch the current task from now: what its step under way ran before now is taken off."""
        self.watched[trio.lowlevel.current_task()] = self.step_started - time.perf_counter()

    def elapsed(self) -> float:
        """Seconds the current task has run since ``begin`` (0 when it is not watched)."""
        task = trio.lowlevel.current_task()
        if task not in self.watched:
            return 0.0
        return self.watched[task] + time.perf_counter() - self.step_started

    def end(self) -> float:
        """``elapsed``, and the watch dropped."""
        seconds = self.elapsed()
        self.watched.pop(trio.lowlevel.current_task(), None)
        return seconds
