"""Rebuilding groups at startup from what ``GroupStore.load`` reads back from ``__consumer_offsets``.

Records are replayed in log order, partition by partition, as Kafka's
``GroupMetadataManager`` loads them:

* a plain offset record sets ``(group, topic, partition)`` (remembering the
  record's offset), a null value deletes it and also every offset a still
  open transaction staged for that partition;
* an offset record of a *transactional* batch is staged under its producer
  id (per ``__consumer_offsets`` partition, as markers are per partition);
  a null value there drops the staged one;
* a marker ends that producer's transaction in the partition: COMMIT makes
  its staged offsets committed unless a newer record of the same key already
  is (the newest record wins, as in memory), ABORT drops them;
* a group record sets the group's metadata, a null value deletes it;
* the records of a KIP-848 consumer group (its epoch, members, target and
  current assignments) are replayed by ``consumer_replay``; the newer of a
  classic and a consumer group record of one group says which kind the
  group is.

Offsets still staged at the end stay staged (their transaction is open; its
marker comes later). A group is rebuilt when it has metadata, committed or
staged offsets; members are restored with a fresh session (a consumer
group's by ``ConsumerCoordinator.loaded``), so they carry on heartbeating.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from . import consumer_replay as cgr
from . import records as r
from .consumer_group import ConsumerGroup
from .group import EMPTY, STABLE, Group, Member, MemberProfile
from .store import Loaded, Marker

log = logging.getLogger("minibroker.groups")
Key = tuple[str, int]
Slot = dict[Key, tuple[int, Any]]  # (topic, partition) -> (record offset, value)


class OffsetsReplay:
    def __init__(self) -> None:
        self.offsets: dict[str, Slot] = {}
        self.metas: dict[str, Any] = {}
        self.consumer: dict[str, cgr.ConsumerState] = {}
        self.pending: dict[tuple[int, int], dict[str, Slot]] = {}  # (partition, producer id) -> group -> staged

    def feed(self, entry: Loaded | Marker) -> None:
        if isinstance(entry, Marker):
            self._marker(entry)
            return
        key = entry.key
        try:
            if isinstance(key, r.OffsetKey):
                value = None if entry.value is None else r.parse_offset_value(entry.value)
                self._offset(entry, (key.topic, key.partition), value)
            elif isinstance(key, r.ConsumerKey):
                if cgr.feed(self.consumer, key, entry.value):
                    self.metas.pop(key.group, None)
            else:
                self.metas[key.group] = None if entry.value is None else r.parse_group_value(entry.value)
                if entry.value is not None:
                    self.consumer.pop(key.group, None)
        except Exception as exc:  # a record we cannot read is skipped, as Kafka skips unknown versions
            log.warning("skipping unreadable %s record of group %s: %s", type(key).__name__, key.group, exc)

    def _offset(self, entry: Loaded, tp: Key, value: Any) -> None:
        group = entry.key.group
        if entry.producer_id >= 0:
            staged = self.pending.setdefault((entry.partition, entry.producer_id), {}).setdefault(group, {})
            if value is None:
                staged.pop(tp, None)
            else:
                staged[tp] = (entry.offset, value)
        elif value is not None:
            self.offsets.setdefault(group, {})[tp] = (entry.offset, value)
        else:
            self.offsets.get(group, {}).pop(tp, None)
            for (partition, _), by_group in self.pending.items():
                if partition == entry.partition:
                    by_group.get(group, {}).pop(tp, None)

    def _marker(self, marker: Marker) -> None:
        staged = self.pending.pop((marker.partition, marker.producer_id), {})
        if not marker.commit:
            return
        for group, slot in staged.items():
            committed = self.offsets.setdefault(group, {})
            for tp, (position, value) in slot.items():
                if tp not in committed or committed[tp][0] < position:
                    committed[tp] = (position, value)

    def groups(self, now: int) -> dict[str, Group]:
        staged = self._staged_by_group()
        out = {}
        for group_id in set(self.offsets) | set(self.metas) | set(staged) | set(self.consumer):
            meta, slot = self.metas.get(group_id), self.offsets.get(group_id, {})
            consumer = self.consumer.get(group_id)
            if meta is None and consumer is None and not slot and not staged.get(group_id):
                continue
            group: Group | ConsumerGroup
            if consumer is not None:
                group = cgr.build(group_id, consumer, now)
            else:
                group = restored(group_id, meta, now)
            group.offsets = {tp: value for tp, (_, value) in slot.items()}
            group.offset_records = {tp: position for tp, (position, _) in slot.items()}
            group.pending_txn = staged.get(group_id, {})
            out[group_id] = group
        return out

    def _staged_by_group(self) -> dict[str, dict[int, Slot]]:
        out: dict[str, dict[int, Slot]] = {}
        for (_, producer_id), by_group in self.pending.items():
            for group_id, slot in by_group.items():
                if slot:
                    out.setdefault(group_id, {}).setdefault(producer_id, {}).update(slot)
        return out


def rebuild_groups(entries: Iterable[Loaded | Marker], now: int) -> dict[str, Group]:
    """Groups as ``__consumer_offsets`` left them (see the module's docstring)."""
    replay = OffsetsReplay()
    for entry in entries:
        replay.feed(entry)
    return replay.groups(now)


def restored(group_id: str, meta: Any, now: int) -> Group:
    group = Group(group_id, state_timestamp=now)
    if meta is None:
        return group
    group.protocol_type = meta.protocol_type or None
    group.generation_id, group.protocol_name, group.leader_id = meta.generation, meta.protocol, meta.leader
    if meta.current_state_timestamp >= 0:
        group.state_timestamp = meta.current_state_timestamp
    for m in meta.members:
        profile = MemberProfile(m.group_instance_id, m.client_id, m.client_host, m.session_timeout,
                                m.rebalance_timeout, meta.protocol_type, [(meta.protocol or "", m.subscription)])
        member = Member(m.member_id, profile, assignment=m.assignment)
        member.extend_session(now)
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    group.state = STABLE if group.members else EMPTY
    return group
