"""Rebuilding KIP-848 consumer groups from their ``__consumer_offsets`` records (``consumer_records``).

As Kafka's ``GroupMetadataManager.replay`` does, each record sets or (null
value) deletes one piece of a group, the newest record of a key winning, so
a compacted log (only the newest record per key left) gives the same
groups:

* the group record (3) sets the epoch and metadata hash; its tombstone
  deletes the group with everything read of it so far (Kafka writes it
  last, after every other record's tombstone);
* a member's metadata (5) makes the member (its tombstone removes it; its
  ``ClassicMemberMetadata``, when set, makes it a classic member), its
  current assignment (8) gives its epochs, state and partitions with their
  assignment epochs (a partition without one is held from the member
  epoch, at least 0, as Kafka reads a record of before KIP-1251; a
  tombstone: it holds nothing), its target assignment (7) is its share of
  the target whose epoch the assignment epoch record (6) gives;
* the partition metadata record (4) of Kafka before 4.1 is read past.

Any record with a value makes its group a consumer group (the classic
record of the same group deleted, the newer of the two wins). A member
known only by its current assignment (stored by minibroker before members
were stored) is dropped, and its record deleted at the next store.
``build`` returns the ``ConsumerGroup``; its ``stored`` is what the log
holds for it, so the coordinator writes only differences from then on.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from . import consumer_records as cr
from .consumer_group import ConsumerGroup
from .consumer_member import STABLE, ClassicMetadata, ConsumerMember

log = logging.getLogger("minibroker.groups")


@attrs.define
class ConsumerState:
    """What the records of one consumer group said so far."""

    epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int | None = None
    members: dict[str, Any] = attrs.field(factory=dict)  # member id -> member metadata value (5)
    targets: dict[str, Any] = attrs.field(factory=dict)  # member id -> target assignment value (7)
    current: dict[str, Any] = attrs.field(factory=dict)  # member id -> current assignment value (8)
    stored: dict[bytes, bytes] = attrs.field(factory=dict)  # key -> value, the newest of each key


def feed(states: dict[str, ConsumerState], key: cr.ConsumerKey, value: bytes | None) -> bool:
    """Replay one record into ``states`` (group id -> state); True when it made or changed a group (so a
    classic record of the group read before is no longer the newest)."""
    parsed = None if value is None or key.type == cr.PARTITION_METADATA else cr.parse_value(key.type, value)
    state = states.get(key.group)
    if value is None and (state is None or key.type == cr.GROUP):
        states.pop(key.group, None)
        return False
    if state is None:
        state = states[key.group] = ConsumerState()
    raw = cr.key(key.type, key.group, key.member_id)
    if value is None:
        state.stored.pop(raw, None)
    else:
        state.stored[raw] = value
    if key.type == cr.GROUP:
        state.epoch, state.metadata_hash = parsed.epoch, parsed.metadata_hash
    elif key.type == cr.TARGET_EPOCH:
        state.assignment_epoch = None if parsed is None else parsed.assignment_epoch
    elif key.type != cr.PARTITION_METADATA:
        table = {cr.MEMBER: state.members, cr.TARGET_MEMBER: state.targets, cr.CURRENT: state.current}[key.type]
        if parsed is None:
            table.pop(key.member_id, None)
        else:
            table[key.member_id] = parsed
    return value is not None


def _member(member_id: str, meta: Any, current: Any) -> ConsumerMember:
    held = {} if current is None else {
        "member_epoch": current.member_epoch, "previous_member_epoch": current.previous_member_epoch,
        "state": cr.STATE_NAMES.get(current.state, STABLE), "assigned": cr.assignment(current.assigned_partitions),
        "pending_revocation": cr.assignment(current.partitions_pending_revocation),
        "assignment_epochs": {**cr.assignment_epochs(current.assigned_partitions),
                              **cr.assignment_epochs(current.partitions_pending_revocation)},
    }  # fmt: skip
    meta_classic = meta.classic_member_metadata
    if meta_classic is not None:  # a classic member (KIP-848 online migration)
        held["classic"] = ClassicMetadata(meta_classic.session_timeout_ms,
                                          [(p.name, bytes(p.metadata)) for p in meta_classic.supported_protocols])
    return ConsumerMember(
        member_id, instance_id=meta.instance_id, rack_id=meta.rack_id, rebalance_timeout_ms=meta.rebalance_timeout_ms,
        client_id=meta.client_id, client_host=meta.client_host,
        subscribed_topic_names=meta.subscribed_topic_names,
        subscribed_topic_regex=meta.subscribed_topic_regex, server_assignor=meta.server_assignor, **held,
    )  # fmt: skip


def build(group_id: str, state: ConsumerState, now: int) -> ConsumerGroup:
    """The group the records describe (members in the order their metadata was first read)."""
    assignment_epoch = state.epoch if state.assignment_epoch is None else state.assignment_epoch
    group = ConsumerGroup(group_id, group_epoch=state.epoch, assignment_epoch=assignment_epoch,
                          metadata_hash=state.metadata_hash, state_timestamp=now,
                          stored=dict(state.stored))  # fmt: skip
    for member_id, meta in state.members.items():
        group.replace_member(None, _member(member_id, meta, state.current.get(member_id)), now)
    for member_id in state.current.keys() - state.members.keys():
        log.warning("dropping member %s of consumer group %s: its metadata record is missing", member_id, group_id)
    group.target = {m: cr.assignment(v.topic_partitions) for m, v in state.targets.items()}
    return group
