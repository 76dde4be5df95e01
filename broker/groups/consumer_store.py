"""Writing what changed in KIP-848 consumer groups to ``__consumer_offsets``.

``ConsumerCoordinator`` changes groups in memory and queues what has to be
written: ``dirty`` (group id, member id or None for the group's own
records), ``converted`` (classic groups that became consumer groups: the
classic group's record is deleted, first in the group's next batch) and
``downgraded`` (consumer groups that became classic groups again: every
record the consumer group stored is deleted (those of two consumer groups
when the group was downgraded again before the first downgrade was written), then the classic group's
record written, as Kafka's ``convertToClassicGroup`` writes them).
``ConsumerStore.store`` (a ConsumerGroupHeartbeat's, a classic member's
request in a consumer group, each round of the timer task) takes the queues
and writes the downgrades first, then each changed consumer group in one
batch (``consumer_records``: only records whose value changed since
``group.stored``, in ``consumer_records.order``).

A write that fails undoes the changes it carried (``consumer_rollback``:
the group as it was before them, as Kafka reverts its timeline state; the
requests that made them, and those that changed the group on top of them,
answer the error; a timer's fencing is due again). What no request or timer
round changed (the records ``loaded`` checks at startup, or checks after an
undo) is queued again for the next round (the timer task comes back after
``ROUND_S`` while anything is queued). A group whose downgrade is still
queued is not written as a consumer group meanwhile (it is one again only
if it was upgraded since): its records must follow the downgrade's
tombstones, so they wait for the downgrade. Each group is written on its
own, so a group that cannot be written does not hold back the others,
and the caller gets its own group's error (any group's, when it names
none).

One store call runs at a time (``_writing``), as Kafka's coordinator runtime
writes one partition's batches in turn: a heartbeat whose change a timer
round has already taken waits until that round's write is over, instead of
being answered before its change is in the log, and two calls cannot put
the same group's batches in the log out of order.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from protocol import ErrorCode

from . import consumer_records as cr
from . import records as r
from .consumer_fencing import queue_downgrade
from .consumer_group import ConsumerGroup
from .consumer_rollback import Pending
from .group import Group
from .store import group_value

log = logging.getLogger("minibroker.groups")


class ConsumerStore:
    def __init__(self, store: Any, consumer: Any, groups: dict) -> None:
        self.store = store  # GroupStore
        self.consumer = consumer  # ConsumerCoordinator: its dirty, converted and downgraded queues
        self.groups = groups
        self._writing = trio.Lock()  # one store call at a time (module docstring)

    async def store_groups(self, group_id: str | None = None, pending: Pending | None = None) -> ErrorCode | None:
        """Write all that is queued; the error of ``pending``'s changes if given (its ``error``: they were undone),
        else of ``group_id``'s write (of any, if None), else None."""
        async with self._writing:
            error = await self._store_queued(group_id)
        return pending.error if pending is not None else error

    async def _store_queued(self, group_id: str | None) -> ErrorCode | None:
        c = self.consumer
        taken = c.rollback.take()
        downgraded, c.downgraded = c.downgraded, {}
        dirty, c.dirty = c.dirty, set()
        converted, c.converted = c.converted, set()
        errors = await self._store_downgraded(downgraded, taken)
        for gid in sorted(converted | {g for g, _m in dirty}):
            group = self.groups.get(gid)
            if not isinstance(group, ConsumerGroup) or any(p.error is not None for p in taken.get(gid, ())):
                continue  # a classic group now (its downgrade deletes what it stored), or its changes were undone
            entries = {(g, m) for g, m in dirty if g == gid}
            if gid in c.downgraded:  # its downgrade failed: this group's records wait until that is written
                self._requeue(gid, entries, gid in converted)
                continue
            errors[gid] = await self._store_group(group, gid in converted, entries, taken.get(gid, []))
        for pendings in taken.values():
            c.rollback.written(pendings)  # those not undone
        failed = [e for g, e in errors.items() if e is not None and group_id in (None, g)]
        return failed[0] if failed else None

    def _requeue(self, group_id: str, entries: set, converted: bool) -> None:
        self.consumer.dirty |= entries
        if converted:
            self.consumer.converted.add(group_id)

    async def _store_group(self, group: ConsumerGroup, converted: bool, entries: set,
                           pendings: list[Pending]) -> ErrorCode | None:  # fmt: skip
        """One batch: the classic record's tombstone (``converted``), then the group's changed records."""
        group_id, wanted = group.group_id, {}
        for _g, member_id in entries:
            wanted.update(cr.group_rows(group) if member_id is None else cr.member_rows(group, member_id))
        changed = {k for k, v in wanted.items() if group.stored.get(k) != v}
        rows = [(r.group_key(group_id), None)] if converted else []
        rows += [(k, wanted[k]) for k in cr.order(changed, wanted)]
        error = await self.store.write(group_id, rows)
        if error is not None:
            log.error("could not store consumer group %s: %s", group_id, error.name)
            if not self.consumer.rollback.failed(pendings, error):  # nothing to undo: written again later
                self._requeue(group_id, entries, converted)
            return error
        for k in changed:
            if wanted[k] is None:
                group.stored.pop(k, None)
            else:
                group.stored[k] = wanted[k]
        return None

    async def _store_downgraded(self, downgraded: dict[str, frozenset[bytes]],
                                taken: dict[str, list[Pending]]) -> dict[str, ErrorCode | None]:  # fmt: skip
        """Per downgraded group, its consumer records deleted then its classic record written, in one batch;
        one that fails is undone (the others are still written). The errors by group."""
        errors: dict[str, ErrorCode | None] = {}
        for group_id, keys in downgraded.items():
            group = self.groups.get(group_id)
            rows = cr.group_tombstones(group_id, keys)
            if isinstance(group, Group):
                rows.append((r.group_key(group_id), r.group_value(group_value(group))))
            errors[group_id] = error = await self.store.write(group_id, rows)
            if error is not None:
                log.error("could not store the downgrade of group %s: %s", group_id, error.name)
                if not self.consumer.rollback.failed(taken.get(group_id, []), error):
                    queue_downgrade(self.consumer.downgraded, group_id, keys)  # with a downgrade queued meanwhile
        return errors
