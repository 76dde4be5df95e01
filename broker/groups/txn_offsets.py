"""Transactional offset commits (KIP-98): offsets staged per producer until the transaction ends.

TxnOffsetCommit writes ordinary offset records to ``__consumer_offsets``, but
in a *transactional* batch of the producer; they are not committed offsets
yet. Each group keeps them in ``Group.pending_txn`` (producer id ->
``(topic, partition)`` -> ``(record offset, value)``) from the moment the
batch is appended (so a marker written after it always finds them) until the
transaction coordinator writes the COMMIT or ABORT marker into the group's
partition (``complete``): a commit makes them the group's committed offsets,
an abort drops them.

Like Kafka, every committed offset remembers the offset of the record it
came from (``Group.offset_records``) and the newest record wins: a
transaction committed after a plain commit of the same partition that was
written *later* in the log does not overwrite it. This is what compaction of
``__consumer_offsets`` (which keeps the last record per key) would leave, so
memory and a replay after a restart agree.

A tombstone for a partition (OffsetDelete, DeleteGroups, a deleted topic)
also drops the staged offsets of that partition, and staged offsets are
never expired. OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for a partition with staged offsets (``has_pending``).

A plain OffsetCommit is applied once durable (OffsetFetch sees only that,
as Kafka's reads see the state at the last committed offset), but from its
append until then it counts in ``Group.committing`` (``appended``,
``settle``): Kafka replays it into the state that deletes and expiry read as
it is appended, so DeleteGroups, OffsetDelete and a deleted topic tombstone
it too, and expiry leaves the partition alone. ``forget`` works by place in
the log, as a replay would: a tombstone drops what records before it hold
(a commit still in flight among them), not what was written after it.

The group checks are Kafka's for transactional commits
(``ClassicGroup.validateOffsetCommit`` with ``isTransactional``, which
OffsetCommit shares: ``offsets.commit_error``): a group
that does not exist accepts generation -1 (a "simple" group is created), a
commit carrying a generation, member id or instance id (TxnOffsetCommit v3+)
must come from a current member of that generation, and, unlike
OffsetCommit, neither a non-empty group without member nor a group completing
a rebalance refuses it.
"""

from __future__ import annotations

from typing import Any, Iterable

from .group import Group

Key = tuple[str, int]


def stage(group: Group, producer_id: int, base_offset: int, values: list[tuple[Key, Any]]) -> None:
    """The records of ``values`` were appended from ``base_offset`` on, in one transactional batch."""
    staged = group.pending_txn.setdefault(producer_id, {})
    for position, (key, value) in enumerate(values, base_offset):
        staged[key] = (position, value)


def unstage(group: Group, producer_id: int, base_offset: int, count: int) -> None:
    """Forget what ``stage`` added for a batch whose write failed (later stagings stay)."""
    staged = group.pending_txn.get(producer_id)
    if staged is None:
        return
    for key in [k for k, (position, _) in staged.items() if base_offset <= position < base_offset + count]:
        del staged[key]
    if not staged:
        del group.pending_txn[producer_id]


def complete(group: Group, producer_id: int, commit: bool) -> int:
    """The producer's marker is written: apply (commit) or drop (abort) its staged offsets; how many applied."""
    staged = group.pending_txn.pop(producer_id, None) or {}
    if not commit:
        return 0
    return sum(apply(group, key, position, value) for key, (position, value) in staged.items())


def apply(group: Group, key: Key, position: int, value: Any) -> bool:
    """Make ``value`` (from the record at ``position``) the committed offset unless a newer record is (a commit,
    or the tombstone ``forget`` left the place of)."""
    if group.offset_records.get(key, -1) > position:
        return False
    group.offsets[key] = value
    group.offset_records[key] = position
    return True


def has_pending(group: Group | None, key: Key) -> bool:
    return group is not None and any(key in staged for staged in group.pending_txn.values())


def pending_keys(group: Group) -> set[Key]:
    return {key for staged in group.pending_txn.values() for key in staged}


def appended(group: Group, keys: Iterable[Key]) -> None:
    """An OffsetCommit's records of ``keys`` are in the log, not yet durable (``Group.committing``)."""
    for key in keys:
        group.committing[key] = group.committing.get(key, 0) + 1


def settle(group: Group, values: list[tuple[Key, Any]], base_offset: int, durable: bool) -> None:
    """The OffsetCommit appended from ``base_offset`` is durable (its values applied: the newest record wins) or
    failed; its keys are no longer committing."""
    for position, (key, value) in enumerate(values, base_offset):
        if durable:
            apply(group, key, position, value)
        left = group.committing.pop(key, 0) - 1
        if left > 0:
            group.committing[key] = left
        elif key not in group.offsets:  # the place ``forget`` kept for commits in flight is not needed any more
            group.offset_records.pop(key, None)


def forget(group: Group, keys: Iterable[Key], position: int | None = None) -> None:
    """Tombstones for ``keys`` are written (``position``: the offset of their batch, when known): the committed
    and staged offsets of records before them go, those of records after them stay. A commit of a key still
    in flight (appended before the tombstones, durable later) must not apply: the tombstones' place is kept in
    ``offset_records`` until it settles."""
    for key in keys:
        if position is None or group.offset_records.get(key, -1) < position:
            group.offsets.pop(key, None)
            if position is not None and key in group.committing:
                group.offset_records[key] = position
            else:
                group.offset_records.pop(key, None)
        for staged in group.pending_txn.values():
            if key in staged and (position is None or staged[key][0] < position):
                del staged[key]
    for producer_id in [p for p, staged in group.pending_txn.items() if not staged]:
        del group.pending_txn[producer_id]
