"""The server-side assignors of consumer groups: ``uniform`` and ``range`` (``group.consumer.assignors``).

An assignor gets the members in group order with what each subscribes to
(topic ids), each topic's partition count, and the current target
assignment, and returns every member's new target (Kafka's
``ConsumerGroupPartitionAssignor.assign``).

``uniform`` (Kafka's ``UniformAssignor``): when every member subscribes to
the same topics (homogeneous) it is Kafka's ``UniformHomogeneousAssignmentBuilder``:
each member keeps up to its quota (total // members, one more for the first
``total % members`` members that can use it) of the partitions it had, and
the partitions left over, in topic then partition order, fill the members
below quota in group order. With different subscriptions (heterogeneous) it
is our own sticky balancing, not Kafka's ``UniformHeterogeneousAssignmentBuilder``:
members keep what they had, each free partition goes to the subscriber with
fewest partitions, then partitions move from a member to a subscriber with
at least two fewer until none can. Both are balanced and sticky as Kafka's;
which member gets which partition may differ (Kafka's member order is a hash
map's).

``range`` (Kafka's ``RangeAssignor``): members sorted by instance id (static
first) then member id; each topic's partitions are cut into consecutive
ranges, the first ``partitions % subscribers`` ranges one longer. It does not
look at the current assignment.
"""

from __future__ import annotations

import uuid

import attrs

from .consumer_member import ordered

Assignment = dict[uuid.UUID, frozenset[int]]


@attrs.frozen
class MemberSpec:
    member_id: str
    instance_id: str | None
    subscribed: frozenset[uuid.UUID]  # topic ids that exist
    current: Assignment  # the member's current target assignment


def assign(name: str, members: list[MemberSpec], partitions: dict[uuid.UUID, int]) -> dict[str, Assignment]:
    if not members:
        return {}
    if name == "range":
        return _range(members, partitions)
    if len({m.subscribed for m in members}) == 1:
        return _uniform_homogeneous(members, partitions)
    return _uniform_heterogeneous(members, partitions)


def _freeze(taken: dict[uuid.UUID, set[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in taken.items() if ps}


def _uniform_homogeneous(members: list[MemberSpec], partitions: dict[uuid.UUID, int]) -> dict[str, Assignment]:
    topics = ordered(members[0].subscribed)
    if not topics:
        return {m.member_id: {} for m in members}
    held = {(t, p) for m in members for t, ps in m.current.items() for p in ps}
    free = [(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in held]
    total = sum(partitions[t] for t in topics)
    minimum, extra = divmod(total, len(members))
    out: dict[str, dict[uuid.UUID, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(members):
        quota, has_extra = (minimum + 1, True) if extra > 0 else (minimum, False)
        kept: dict[uuid.UUID, set[int]] = {}
        for t in ordered(m.current):
            if t not in m.subscribed:
                continue
            for p in sorted(m.current[t]):
                if quota > 0:
                    kept.setdefault(t, set()).add(p)
                    quota -= 1
                else:
                    free.append((t, p))
        if quota > 0 and has_extra and len(members) - index > extra:
            quota, has_extra = quota - 1, False
        if quota > 0:
            unfilled.append((m.member_id, quota))
        if has_extra:
            extra -= 1
        out[m.member_id] = kept
    for member_id, quota in unfilled:
        given, free = free[:quota], free[quota:]
        for t, p in given:
            out[member_id].setdefault(t, set()).add(p)
    return {member_id: _freeze(taken) for member_id, taken in out.items()}


def _uniform_heterogeneous(members: list[MemberSpec], partitions: dict[uuid.UUID, int]) -> dict[str, Assignment]:
    owner: dict[tuple[uuid.UUID, int], str] = {}
    for m in members:  # keep what each had, if still subscribed (the first holder wins a clash)
        for t in ordered(m.current):
            if t in m.subscribed:
                for p in sorted(m.current[t]):
                    owner.setdefault((t, p), m.member_id)
    count = {m.member_id: 0 for m in members}
    for member_id in owner.values():
        count[member_id] += 1
    subscribers = {t: [m.member_id for m in members if t in m.subscribed] for t in partitions}
    order = sorted((t for t in partitions if subscribers[t]), key=lambda t: (len(subscribers[t]), str(t)))
    for t in order:
        for p in range(partitions[t]):
            if (t, p) not in owner:
                chosen = min(subscribers[t], key=lambda member_id: count[member_id])
                owner[(t, p)] = chosen
                count[chosen] += 1
    _balance(owner, count, subscribers)
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    for (t, p), member_id in owner.items():
        out[member_id].setdefault(t, set()).add(p)
    return {member_id: _freeze(taken) for member_id, taken in out.items()}


def _balance(owner: dict, count: dict[str, int], subscribers: dict[uuid.UUID, list[str]]) -> None:
    """Move partitions from a member to a subscriber of their topic with at least two fewer, until none can."""
    moved = True
    while moved:
        moved = False
        for (t, p), member_id in sorted(owner.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            target = min(subscribers[t], key=lambda other: count[other])
            if count[target] + 1 < count[member_id]:
                owner[(t, p)] = target
                count[member_id] -= 1
                count[target] += 1
                moved = True


def _range(members: list[MemberSpec], partitions: dict[uuid.UUID, int]) -> dict[str, Assignment]:
    ranked = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in ranked}
    for t in ordered({t for m in members for t in m.subscribed}):
        subscribed = [m for m in ranked if t in m.subscribed]
        minimum, extra = divmod(partitions[t], len(subscribed))
        start = 0
        for index, m in enumerate(subscribed):
            end = min(start + minimum + (1 if index < extra else 0), partitions[t])
            if start < end:
                out[m.member_id][t] = set(range(start, end))
            start = end
    return {member_id: _freeze(taken) for member_id, taken in out.items()}
