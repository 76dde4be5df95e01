"""Writing what changed in KIP-848 consumer groups to ``__consumer_offsets``.

``ConsumerCoordinator`` changes groups in memory and queues what has to be
written: ``dirty`` (group id, member id or None for the group's own
records), ``converted`` (classic groups that became consumer groups: the
classic group's record is deleted, first in the group's next batch) and
``downgraded`` (consumer groups that became classic groups again: every
record the consumer group stored is deleted (those of two consumer groups
when the group was downgraded again before the first downgrade was
written), then the classic group's record written, as Kafka's
``convertToClassicGroup`` writes them). ``ConsumerStore.store_groups`` (a
ConsumerGroupHeartbeat's, a classic member's request in a consumer group,
each round of the timer task) takes the queues and appends the downgrades
first, then each changed consumer group in one batch (``consumer_records``:
only records whose value changed since ``group.stored``, in
``consumer_records.order``).

The appends are made under a lock (``_writing``), one call at a time, as
Kafka's coordinator runtime appends a partition's batches in turn: their
order in the log is fixed there, and ``group.stored`` is updated as each
batch goes in. The wait for durability comes after the lock is released
(a group commit then covers the batches of many calls at once, as Kafka
does not wait for one batch's commit before appending the next). Each call
then waits for what it needs: its own batches, and, for the group it serves,
a batch of an earlier call not yet durable (a heartbeat whose change a timer
round took is not answered before that change is durable, nor without that
write's error). ``delete_group`` (DeleteGroups, a group's expiry) appends its
tombstones under the same lock, from ``group.stored`` as the store left it,
forgets the group there (a later request finds no group, as in Kafka), and
takes the group's queued changes out (its tombstones cover them: those
of a queued downgrade, the classic record of a queued ``converted`` mark).

A write that fails (its append, or its wait for durability) undoes the
changes it carried (``consumer_rollback``: the group as it was before them,
as Kafka reverts its timeline state; the requests that made them, and those
that changed the group on top of them, answer the error; a timer's fencing
is due again). What no request or timer round changed (the records
``loaded`` checks at startup, or checks after an undo) is queued again
instead (a batch that went in but did not become durable gives back the
``group.stored`` values it set). A group whose downgrade is still queued is not written as a consumer group
meanwhile (it is one again only if it was upgraded since): its records must
follow the downgrade's tombstones, so they wait for the downgrade. Each group
is written on its own, so a group that cannot be written does not hold back
the others, and the caller gets its own group's error (any group's, when it
names none). A group whose writes keep failing (its partition offline) is
tried again by others' calls and the timer task only after a pause that
doubles from ``ROUND_S`` up to ``MAX_SLEEP_S`` (``retry_in``), reset by a
success; its own requests still try. Its failures are logged at most once
per ``LOG_EVERY_S``, with the count not logged since.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any, Callable

import attrs
import trio

from protocol import ErrorCode

from . import consumer_records as cr
from . import records as r
from .consumer_fencing import queue_downgrade
from .consumer_group import ConsumerGroup
from .consumer_rollback import Pending
from .group import DEAD, EMPTY, Group
from .store import group_value
from .timers import LOG_EVERY_S, MAX_SLEEP_S, ROUND_S

log = logging.getLogger("minibroker.groups")
_SLACK_S = 0.001  # a retry time this close is due: the timer task sleeps whole ms


@attrs.define
class _Flight:
    """One store call's batches, from their appends until they are durable (``_settle``)."""

    epoch: int  # the store's, when the call began: its appends fail once the topic is deleted (``GroupStore``)
    done: trio.Event = attrs.field(factory=trio.Event)
    errors: dict[str, ErrorCode | None] = attrs.field(factory=dict)  # per group the call wrote (or tried)
    undo: dict[str, Callable[[ErrorCode], None]] = attrs.field(factory=dict)  # per group appended: its failure's
    taken: dict[str, list[Pending]] = attrs.field(factory=dict)  # per group: the changes its batches carry


@attrs.define
class _Failing:
    """A group whose writes fail: when it is tried again (trio time) and how its failures were logged."""

    delay: float = ROUND_S
    retry_at: float = 0.0
    logged_at: float | None = None
    unlogged: int = 0


@attrs.frozen
class _Taken:
    """A group's queued changes, taken out by a delete (given back if it fails)."""

    entries: set
    converted: bool
    downgrade: frozenset[bytes] | None


class ConsumerStore:
    def __init__(self, store: Any, consumer: Any, groups: dict) -> None:
        self.store = store  # GroupStore
        self.consumer = consumer  # ConsumerCoordinator: its dirty, converted and downgraded queues
        self.groups = groups
        self._writing = trio.Lock()  # the appends, one call at a time (module docstring)
        self._flights: dict[str, _Flight] = {}  # per group: the last call that appended for it, until durable
        self._failing: dict[str, _Failing] = {}

    async def store_groups(self, group_id: str | None = None, pending: Pending | None = None) -> ErrorCode | None:
        """Write all that is queued; the error of ``pending``'s changes if given (its ``error``: they were undone),
        else of ``group_id``'s write (of any, if None), else None."""
        async with self._writing:
            flight = await self._append_queued(group_id)
            earlier = self._flights.get(group_id) if group_id not in flight.undo else None
            for gid in flight.undo:
                self._flights[gid] = flight
        await self._settle(flight)
        if pending is not None:
            if pending.flight is not None:  # the call that took its changes (a timer round's, maybe): until settled
                await pending.flight.done.wait()
            return pending.error
        if earlier is not None and flight.errors.get(group_id) is None:  # its change may be in an earlier call's
            # batch (this call appended nothing for the group, or nothing new): answered once that is durable
            await earlier.done.wait()
            return earlier.errors.get(group_id)
        failed = [e for g, e in flight.errors.items() if e is not None and group_id in (None, g)]
        return failed[0] if failed else None

    def unload(self) -> None:
        """Every group is gone (``GroupManager.resign``): no call waits for another's batches of them, and a
        group made again starts with no retry pause."""
        self._flights.clear()
        self._failing.clear()

    def retry_in(self) -> float | None:
        """Seconds until a queued group is due to be written again (0: now); None when nothing is queued."""
        c, now = self.consumer, trio.current_time()
        queued = {g for g, _m in c.dirty} | c.converted | set(c.downgraded)
        waits = [max(self._failing[g].retry_at - now, 0) if g in self._failing else 0.0 for g in queued]
        return min(waits) if waits else None

    def _take_due(self, group_id: str | None) -> tuple[dict, set, set]:
        """The queued downgrades, dirty entries and ``converted`` marks of groups due to be written: not those of
        a failing group before its retry time (unless it is ``group_id``'s, whose own request tries)."""
        c, now = self.consumer, trio.current_time()

        def due(gid: str) -> bool:
            return gid == group_id or gid not in self._failing or self._failing[gid].retry_at <= now + _SLACK_S

        downgraded = {g: keys for g, keys in c.downgraded.items() if due(g)}
        dirty = {e for e in c.dirty if due(e[0])}
        converted = {g for g in c.converted if due(g)}
        for g in downgraded:
            del c.downgraded[g]
        c.dirty -= dirty
        c.converted -= converted
        return downgraded, dirty, converted

    async def _append_queued(self, group_id: str | None) -> _Flight:
        flight = _Flight(self.store.epoch)
        downgraded, dirty, converted = self._take_due(group_id)
        flight.taken = self.consumer.rollback.take({*downgraded, *converted, *(g for g, _m in dirty)}, flight)
        await self._append_downgraded(flight, downgraded)
        for gid in sorted(converted | {g for g, _m in dirty}):
            group = self.groups.get(gid)
            if not isinstance(group, ConsumerGroup) or any(p.error is not None for p in flight.taken.get(gid, ())):
                continue  # a classic group now (its downgrade deletes what it stored), or its changes were undone
            entries = {(g, m) for g, m in dirty if g == gid}
            if gid in self.consumer.downgraded:  # its downgrade is queued: this group's records wait for it
                self._requeue(gid, entries, gid in converted)
                continue
            await self._append_group(flight, group, gid in converted, entries)
        return flight

    def _requeue(self, group_id: str, entries: set, converted: bool) -> None:
        self.consumer.dirty |= entries
        if converted:
            self.consumer.converted.add(group_id)

    async def _append_group(self, flight: _Flight, group: ConsumerGroup, converted: bool, entries: set) -> None:
        """One batch: the classic record's tombstone (``converted``), then the group's changed records."""
        group_id, wanted = group.group_id, {}
        for _g, member_id in entries:
            wanted.update(cr.group_rows(group) if member_id is None else cr.member_rows(group, member_id))
        changed = {k for k, v in wanted.items() if group.stored.get(k) != v}
        rows = [(r.group_key(group_id), None)] if converted else []
        rows += [(k, wanted[k]) for k in cr.order(changed, wanted)]
        pendings = flight.taken.get(group_id, [])
        flight.errors[group_id] = error = await self.store.append_rows(group_id, rows, epoch=flight.epoch)
        requeue = partial(self._requeue, group_id, entries, converted)
        if error is not None:
            self._undo(pendings, error, requeue, flight.epoch)
            return
        before = {k: group.stored.get(k) for k in changed}
        _set_stored(group.stored, {k: wanted[k] for k in changed})

        def undo(error: ErrorCode) -> None:  # not durable: its values are not stored after all; its changes undone
            _set_stored(group.stored, {k: v for k, v in before.items() if group.stored.get(k) == wanted[k]})
            self._undo(pendings, error, requeue, flight.epoch)

        if rows:
            flight.undo[group_id] = undo

    async def _append_downgraded(self, flight: _Flight, downgraded: dict[str, frozenset[bytes]]) -> None:
        """Per downgraded group, its consumer records deleted then its classic record written, in one batch;
        one that fails is undone (the others are still written)."""
        for group_id, keys in downgraded.items():
            group = self.groups.get(group_id)
            rows = cr.group_tombstones(group_id, keys)
            if isinstance(group, Group):
                rows.append((r.group_key(group_id), r.group_value(group_value(group))))
            requeue = partial(queue_downgrade, self.consumer.downgraded, group_id, keys)  # with one queued meanwhile
            undo = partial(self._undo, flight.taken.get(group_id, []), requeue=requeue, epoch=flight.epoch)
            flight.errors[group_id] = error = await self.store.append_rows(group_id, rows, epoch=flight.epoch)
            if error is not None:
                undo(error)
            else:
                flight.undo[group_id] = undo

    def _undo(self, pendings: list[Pending], error: ErrorCode, requeue: Callable[[], None], epoch: int) -> None:
        """A write of ``pendings``' changes failed: they are undone; with nothing to undo, ``requeue`` queues
        what the write carried again, unless the topic was deleted since the write began (``epoch``): its
        groups went with it, and the queues ``unload`` cleared stay empty."""
        if not self.consumer.rollback.failed(pendings, error) and epoch == self.store.epoch:
            requeue()

    async def _settle(self, flight: _Flight) -> None:
        """Wait until the flight's batches are durable; undo those that are not. Shielded: a caller that goes
        away must not leave a failed batch neither requeued nor reported to the calls that wait on it."""
        with trio.CancelScope(shield=True):
            try:
                if flight.undo:
                    durable = await self.store.durable_for(sorted(flight.undo), flight.epoch)
                    for gid, error in durable.items():
                        if error is not None:
                            flight.undo[gid](error)
                            flight.errors[gid] = error
                for gid, error in flight.errors.items() if flight.epoch == self.store.epoch else ():
                    self._outcome(gid, error)  # (the groups of a deleted topic's epoch are gone)
            finally:
                for pendings in flight.taken.values():
                    self.consumer.rollback.written(pendings)  # those not undone
                for gid in flight.undo:
                    if self._flights.get(gid) is flight:
                        del self._flights[gid]
                flight.done.set()

    def _outcome(self, group_id: str, error: ErrorCode | None) -> None:
        """A group's write succeeded (its pause ends) or failed: its retry pauses longer (doubling up to
        ``MAX_SLEEP_S``), and the failure is logged at most once per ``LOG_EVERY_S``, else counted."""
        if error is None:
            self._failing.pop(group_id, None)
            return
        now = trio.current_time()
        failing = self._failing.get(group_id)
        if failing is None:
            failing = self._failing[group_id] = _Failing()
        else:
            failing.delay = min(failing.delay * 2, MAX_SLEEP_S)
        failing.retry_at = now + failing.delay
        if failing.logged_at is not None and now - failing.logged_at < LOG_EVERY_S:
            failing.unlogged += 1
            return
        log.error("could not store consumer group %s: %s (%d more failures since the last logged; tried again "
                  "in %.2f s)", group_id, error.name, failing.unlogged, failing.delay)  # fmt: skip
        failing.logged_at, failing.unlogged = now, 0

    async def delete_group(self, group: Any, rows: Callable[[], list[tuple[bytes, bytes | None]]], atomic: bool,
                           still: Callable[[], ErrorCode | None] = lambda: None,
                           on_append: Callable[[int], None] | None = None,
                           epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """Append ``rows()`` (offset tombstones, chosen once the lock is held) and the tombstones of every record
        ``group`` has in the log, in the store's order (under its lock), and forget the group at once, then wait
        until durable (``on_append`` as ``append_rows``'); ``still`` checks, once the lock is held, that the group may
        still go (its error, if not). The check, the append and the forgetting are one step (nothing else runs
        between them), as Kafka's DeleteGroups makes the tombstones in one write operation and replays them as they
        are appended: a request after it finds no group (a heartbeat makes a new one, whose records follow the
        tombstones). The group's queued changes are taken out: its tombstones cover them. If the write fails they are
        given back, and so is the group when its durability fails (``_put_back``). ``epoch``: the store's when the
        caller read the group (now if None); once the topic was deleted since, nothing is written (NOT_COORDINATOR)."""
        gid, consumer = group.group_id, isinstance(group, ConsumerGroup)
        epoch = self.store.epoch if epoch is None else epoch
        async with self._writing:
            if epoch == self.store.epoch:
                await self.store.ready()  # the topic made: no pause from the check to the forgetting
            if epoch != self.store.epoch:  # deleted since the caller read the group: the group went with it
                return ErrorCode.NOT_COORDINATOR
            if (refused := still()) is not None:
                return refused
            taken = self._take_group(gid)
            error = await self.store.append_rows(gid, rows() + _group_tombstones(group, taken), None, on_append, atomic,
                                                 epoch)  # fmt: skip
            if error is not None:
                self._give_back(gid, taken)
                return error
            stored = dict(group.stored) if consumer else {}
            if consumer:
                group.stored.clear()
            self.consumer.rollback.forget(gid)  # changes not written: the group is gone with them
            _forget(self.groups, group)
        with trio.CancelScope(shield=True):
            error = (await self.store.durable_for([gid], epoch))[gid]
        if error is not None and epoch == self.store.epoch:  # else the topic was deleted: every group is gone
            self._undo_delete(group, taken, stored, error)
        return error

    def _undo_delete(self, group: Any, taken: Any, stored: dict, error: ErrorCode) -> None:
        """A delete whose tombstones did not become durable: its queued changes, stored offsets and group back."""
        self._give_back(group.group_id, taken)
        if isinstance(group, ConsumerGroup):
            _set_stored(group.stored, {k: v for k, v in stored.items() if k not in group.stored})
        self._put_back(group, error)

    def _put_back(self, group: Any, error: ErrorCode) -> None:
        """A delete whose tombstones did not become durable fails: the group is back, as Kafka reverts to the
        state before the delete's batch. A consumer group made since (its records follow the tombstones in
        the same log, so they are not durable either) is undone first, as that revert drops it too; a group
        that still holds the id then (a classic group a JoinGroup made, one with offsets committed since)
        keeps it, and the deleted group stays gone."""
        gid, current = group.group_id, self.groups.get(group.group_id)
        if current is not None and current is not group:
            self.consumer.rollback.failed(list(self.consumer.rollback.pending.get(gid, ())), error)
            current = self.groups.get(gid)
        if current is None:
            if isinstance(group, Group):
                group.state = EMPTY
            self.groups[gid] = group

    def _take_group(self, group_id: str) -> _Taken:
        c = self.consumer
        entries = {e for e in c.dirty if e[0] == group_id}
        c.dirty -= entries
        taken = _Taken(entries, group_id in c.converted, c.downgraded.pop(group_id, None))
        c.converted.discard(group_id)
        return taken

    def _give_back(self, group_id: str, taken: _Taken) -> None:
        self._requeue(group_id, taken.entries, taken.converted)
        if taken.downgrade is not None:
            queue_downgrade(self.consumer.downgraded, group_id, taken.downgrade)


def _group_tombstones(group: Any, taken: _Taken) -> list[tuple[bytes, None]]:
    """Every record of ``group`` in the log deleted: those of a queued downgrade, the classic record (of a
    classic group, or of a consumer group whose ``converted`` mark was queued), a consumer group's own."""
    gid = group.group_id
    rows = cr.group_tombstones(gid, taken.downgrade) if taken.downgrade is not None else []
    if not isinstance(group, ConsumerGroup):
        return rows + [(r.group_key(gid), None)]
    return rows + ([(r.group_key(gid), None)] if taken.converted else []) + cr.group_tombstones(gid, group.stored)


def _forget(groups: dict, group: Any) -> None:
    """``group`` leaves ``groups`` (a classic group is Dead: a request still holding it finds it gone)."""
    if isinstance(group, Group):
        group.state = DEAD
    if groups.get(group.group_id) is group:
        del groups[group.group_id]


def _set_stored(stored: dict, values: dict) -> None:
    for k, v in values.items():
        if v is None:
            stored.pop(k, None)
        else:
            stored[k] = v
