"""A topic change as steps that hand their durable writes to the caller.

A change of the topics (``LogManager.create_topic_steps``,
``add_partitions_steps``, ``overrides_steps``, ``deletion_steps``) is a
generator wrapped in ``Steps``. ``send()`` runs it to its next step, which is
either a partition whose log it made (an ``int``) or a ``Save``: a durable
write (a journal line, checkpoints: fsyncs) that must be done before the
change goes on. The caller runs the save, on whatever thread it likes (the
broker on a worker thread, so no fsync runs on its event loop), then calls
``send()`` again, with the save's exception if it raised: the change then
undoes what it did, as it does for a failure of its own. ``StopIteration``
ends it.

The order of saves and memory is the change's own: what a change makes seen
(the topic, its configs) comes after its save, in the same ``send``. A
caller that runs changes side by side keeps one at a time between a save and
the ``send`` after it (the broker: ``TopicRegistry.saves``), so memory and
the journal see changes in one order.

Iterating a ``Steps`` (``for partition in steps``) runs each save in line on
the calling thread; ``abort()`` undoes what the steps made so far.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Callable


class Save:
    """A durable write a change waits for: call it (on any thread), then resume the change."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.fn, self.args = fn, args

    def __call__(self) -> None:
        self.fn(*self.args)


class Aborted(Exception):
    """Thrown into a change by ``Steps.abort``: undo what was made."""


def run_save(save: Save) -> Exception | None:
    """Run ``save`` here; its exception, for the next ``send``."""
    try:
        save()
    except Exception as exc:
        return exc
    return None


class Steps:
    """One change's steps; see the module docstring."""

    def __init__(self, steps: Generator[int | Save, None, None]) -> None:
        self._steps = steps

    def send(self, failure: BaseException | None = None) -> int | Save:
        """The next step: a partition made or a ``Save`` to run; ``failure``: the last save's exception."""
        return self._steps.send(None) if failure is None else self._steps.throw(failure)

    def __iter__(self) -> "Steps":
        return self

    def __next__(self) -> int:
        return self._saves_in_line(self.send())

    def abort(self) -> None:
        """Undo what the steps made so far (nothing once the change is made), its saves run in line."""
        try:
            self._saves_in_line(self.send(Aborted()))
        except (Aborted, StopIteration):
            pass

    def _saves_in_line(self, item: int | Save) -> int:
        """From ``item`` on, run each save here, up to the next partition made."""
        while isinstance(item, Save):
            item = self.send(run_save(item))
        return item
