"""Undoing a consumer group's changes whose write failed, as Kafka's coordinator reverts its timeline state.

Kafka applies a request's records to its in-memory state as it appends
them and, when the append fails (a batch over ``max.message.bytes``, a
storage error), reverts the state to what it was before that batch
(``CoordinatorRuntime``'s ``failCurrentBatch`` and the ``SnapshotRegistry``
revert): the request fails and the group is as it was; so do the requests
whose changes were made on top of it. A timer whose write fails runs again.

Here the coordinators change a group in memory (``ConsumerCoordinator``,
``ClassicMembers``) and ``ConsumerStore`` writes what they queued. Around
each change (a ConsumerGroupHeartbeat, a classic member's JoinGroup or
LeaveGroup in a consumer group, a timer round of a group with a deadline
due) ``changing`` keeps a ``Pending``: a copy of the group as it was (its
members, epochs, target assignment, regexes, timers; the object itself when
it changes kind, or None when it is new) and of the group's entries in the
store queues (``dirty``, ``converted``, ``downgraded``). Requests that change
the group before a store round takes its queues share that ``Pending``;
once taken (``take``), later changes open a new one, whose copy then holds
the changes being written. A successful write drops the pendings it took
(``written``); a failed one (``failed``) puts the first of them back and
fails it and every later pending of the group (their changes were made on
top of it, and are gone too): each request answers its pending's ``error``.
A change that queued nothing to write keeps no pending (``changing`` drops
it), so a steady heartbeat copies nothing for long.

What is not reverted: committed offsets (written on their own, shared by
both kinds of group), ``stored`` (what the log holds), the session
deadlines of members that are in the group after the revert, and the join
and sync deadlines of members the undone changes did not touch: like
Kafka's timers they are not part of the reverted state, so a member's
heartbeat still counts and a classic member's SyncGroup stays done. A
session that expired and whose fencing failed is due again, so the timer
task fences the member at its next round.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import attrs

from protocol import ErrorCode

from . import consumer_records as cr
from .consumer_group import ConsumerGroup
from .group import DEAD, Group
from .results import JoinResult, SyncResult

_STATE = ("group_epoch", "assignment_epoch", "members", "static_members", "target", "partition_epochs",
          "metadata_hash", "resolved_regexes", "session_deadlines", "rebalance_deadlines", "join_deadlines",
          "sync_deadlines", "state_timestamp")  # fmt: skip (the dicts copied: their values are replaced, never changed)
_WRITTEN = ("group_epoch", "assignment_epoch", "members", "metadata_hash", "target")  # what the records hold


@attrs.define(eq=False)
class Pending:
    """A group as it was before changes not yet written; ``error`` once they were undone."""

    group_id: str
    group: Any  # the object ``groups`` held (None: no group)
    state: dict[str, Any] | str | None  # a consumer group's fields (``_STATE``); a classic one's state
    dirty: frozenset
    converted: bool
    downgraded: frozenset[bytes] | None
    taken: bool = False  # a store round took its changes: later ones open another pending
    flight: Any = None  # the store call that took them (``ConsumerStore``), settled when they are written or not
    error: ErrorCode | None = None


def _copy(group: Any) -> dict[str, Any] | str | None:
    if isinstance(group, ConsumerGroup):
        state = {name: getattr(group, name) for name in _STATE}
        return {name: dict(v) if isinstance(v, dict) else v for name, v in state.items()}
    return group.state if isinstance(group, Group) else None


def _timers_kept(group: ConsumerGroup, copy: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """The deadlines an undo leaves as they are (None: none): every member's session deadline, and the join and
    sync deadlines of members no undone change touched (the same member object in the group and the copy), so
    that a SyncGroup's or a heartbeat's timer change made meanwhile stands. Those of members the undone changes
    touched come from the copy: Kafka sets a join's timers only once its write succeeds."""
    untouched = [m for m, member in copy["members"].items() if group.members.get(m) is member]
    kept = {"session_deadlines": dict(group.session_deadlines)}
    for name in ("join_deadlines", "sync_deadlines"):
        kept[name] = {m: getattr(group, name).get(m) for m in untouched}
    return kept


def release_waiters(group: Group) -> None:
    """A classic group leaves ``groups`` (Kafka's ``convertToConsumerGroup``; or the classic group a downgrade made
    is undone): its parked JoinGroups and SyncGroups are told to rejoin (REBALANCE_IN_PROGRESS)."""
    for m in group.members.values():
        if m.join_waiter is not None:
            m.join_waiter.complete(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id))
        if m.sync_waiter is not None:
            m.sync_waiter.complete(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        m.join_waiter = m.sync_waiter = None
    group.state = DEAD


class Rollback:
    """The pendings of every group (module docstring); ``ConsumerCoordinator.rollback``."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer  # ConsumerCoordinator: its groups and store queues
        self.pending: dict[str, list[Pending]] = {}  # per group, in the order its changes were made

    def unload(self, error: ErrorCode) -> None:
        """Every group is gone (``__consumer_offsets`` deleted, ``GroupManager.resign``): each request whose
        changes are not yet durable answers ``error``, and nothing is restored any more."""
        for pendings in self.pending.values():
            for p in pendings:
                p.error = p.error or error
        self.pending.clear()

    def _queued(self, group_id: str) -> tuple[frozenset, bool, frozenset[bytes] | None]:
        c = self.consumer
        dirty = frozenset(e for e in c.dirty if e[0] == group_id)
        return dirty, group_id in c.converted, c.downgraded.get(group_id)

    @contextlib.contextmanager
    def changing(self, group_id: str) -> Iterator[Pending]:
        """The pending the changes made in the ``with`` block belong to (dropped after it if they queued nothing)."""
        pendings = self.pending.setdefault(group_id, [])
        if not pendings or pendings[-1].taken:
            group = self.consumer.groups.get(group_id)
            pendings.append(Pending(group_id, group, _copy(group), *self._queued(group_id)))
        pending = pendings[-1]
        try:
            yield pending
        finally:
            if pending is pendings[-1] and not pending.taken and self._unchanged(pending):
                pendings.pop()
            if not pendings:
                del self.pending[group_id]

    def _unchanged(self, p: Pending) -> bool:
        """Nothing to write since ``p`` was made: the same group, queue and records' content (timers aside)."""
        group = self.consumer.groups.get(p.group_id)
        if group is not p.group or self._queued(p.group_id) != (p.dirty, p.converted, p.downgraded):
            return False
        if isinstance(group, ConsumerGroup):
            return all(p.state[name] == getattr(group, name) for name in _WRITTEN)
        return not isinstance(group, Group) or group.state == p.state

    def take(self, group_ids: set[str], flight: Any) -> dict[str, list[Pending]]:
        """A store call (``flight``) takes the queued changes of ``group_ids``: the pendings it writes, by group."""
        taken = {}
        for group_id in group_ids:
            mine = [p for p in self.pending.get(group_id, ()) if not p.taken]
            for p in mine:
                p.taken, p.flight = True, flight
            if mine:
                taken[group_id] = mine
        return taken

    def forget(self, group_id: str) -> None:
        """The group was deleted with its changes not yet written: nothing of them is restored any more (the
        failure of their write still fails their requests, ``failed``)."""
        self.pending.pop(group_id, None)

    def written(self, pendings: list[Pending]) -> None:
        for p in pendings:
            self._forget(p)

    def failed(self, pendings: list[Pending], error: ErrorCode) -> bool:
        """The write of ``pendings`` failed: the group as before the first of them, which fails with every later
        pending of the group. False when there was nothing to undo (no pending: the caller queues it again)."""
        if not pendings:
            return False
        first = pendings[0]
        group_pendings = self.pending.get(first.group_id, [])
        if first not in group_pendings:  # undone already by the failure of a write before it (which set their
            # error), or forgotten by a delete of the group since: nothing to restore, but the requests still fail
            for p in pendings:
                p.error = p.error or error
            return True
        later = group_pendings[group_pendings.index(first):]
        for p in later:
            p.error = error
            self._forget(p)
        self._restore(first)
        return True

    def _forget(self, p: Pending) -> None:
        pendings = self.pending.get(p.group_id, [])
        if p in pendings:
            pendings.remove(p)
        if not pendings:
            self.pending.pop(p.group_id, None)

    def _restore(self, p: Pending) -> None:
        c, group_id = self.consumer, p.group_id
        current = c.groups.get(group_id)
        if isinstance(current, Group) and current is not p.group:
            release_waiters(current)  # the classic group a downgrade made
        if isinstance(p.group, ConsumerGroup):
            timers = _timers_kept(current, p.state) if current is p.group else {}
            for name, value in p.state.items():
                setattr(p.group, name, value)
            for name, kept in timers.items():
                deadlines = getattr(p.group, name)
                for member_id, deadline in kept.items():
                    if member_id not in p.group.members or deadline is None:
                        deadlines.pop(member_id, None)
                    else:
                        deadlines[member_id] = deadline
        elif isinstance(p.group, Group):
            p.group.state = p.state
        if p.group is not None:
            c.groups[group_id] = p.group
        elif current is not None and (current.offsets or current.pending_txn):  # offsets committed meanwhile stay
            c.groups[group_id] = Group(group_id, state_timestamp=c.clock(), **current.kept_offsets())
        else:
            c.groups.pop(group_id, None)
        c.dirty = {e for e in c.dirty if e[0] != group_id} | p.dirty
        c.converted.discard(group_id)
        if p.converted:
            c.converted.add(group_id)
        c.downgraded.pop(group_id, None)
        if p.downgraded is not None:
            c.downgraded[group_id] = p.downgraded
        if isinstance(p.group, ConsumerGroup):
            self._resync(p.group)

    def _resync(self, group: ConsumerGroup) -> None:
        """Every record of the group checked against what the log holds (``stored``) at the next store: the write
        that failed may have carried the rows of a change made during an earlier write, now undone too."""
        keys = (cr.parse_key(int.from_bytes(key[:2], "big"), key) for key in group.stored)
        ids = {k.member_id for k in keys if k is not None}
        self.consumer.dirty.update((group.group_id, m) for m in {None, *group.members, *ids})
