"""The records of KIP-848 consumer groups in ``__consumer_offsets``: Kafka's key and value layouts (4.x).

A key starts with an int16 that says the record's type (Kafka's
``coordinator-key`` api key), a value with its int16 version (0, flexible):

* 3 ``ConsumerGroupMetadata`` (group): the group epoch and the metadata hash
  of the subscribed topics (KIP-1101; it replaced 4's record in Kafka 4.1);
* 4 ``ConsumerGroupPartitionMetadata`` (group): not written any more, only
  tombstoned when a group is deleted, as Kafka 4.x does;
* 5 ``ConsumerGroupMemberMetadata`` (group, member): what the member told us
  (instance id, rack, client id and host, subscription, server assignor,
  rebalance timeout; for a classic member of the group, KIP-848's online
  migration, its ``ClassicMemberMetadata``: session timeout and the
  protocols it joined with; null for a member of the consumer protocol);
* 6 ``ConsumerGroupTargetAssignmentMetadata`` (group): the assignment epoch;
* 7 ``ConsumerGroupTargetAssignmentMember`` (group, member): the member's
  target assignment;
* 8 ``ConsumerGroupCurrentMemberAssignment`` (group, member): its epochs,
  state and the partitions it holds (assigned, pending revocation), with
  the assignment epoch of each (KIP-1251's tagged ``AssignmentEpochs``, in
  the order of the partitions; a record written without them, by Kafka
  before 4.3 or by minibroker before, reads as held from the member epoch).

A null value deletes a record. ``group_rows`` and ``member_rows`` give the
records a group's state is stored as (key bytes -> value bytes, None when
the record must not exist); ``order`` sorts a batch of changes the way
Kafka writes them (a member's tombstones before the epoch bump, the member
before the epoch, the target before the current assignment, the group's own
record last when it is deleted). Kafka's ``ConsumerGroupRegularExpression``
(16) is not written: regexes are resolved again at load and at every
heartbeat.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import attrs

from protocol.codec import decode_struct, encode_struct
from protocol.messages import struct_class
from protocol.primitives import Reader
from protocol.schema import BYTES, INT8, INT32, INT64, STRING, UUID, F, Struct

from .consumer_member import as_owned

GROUP, PARTITION_METADATA, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT = 3, 4, 5, 6, 7, 8
_GROUP_KEY = Struct(F("group_id", STRING), name="ConsumerGroupKey")
_MEMBER_KEY = Struct(F("group_id", STRING), F("member_id", STRING), name="ConsumerGroupMemberKey")
_TOPIC_PARTITIONS = Struct(F("topic_id", UUID), F("partitions", [INT32]), name="TopicPartitions")
GROUP_VALUE = Struct(F("epoch", INT32), F("metadata_hash", INT64, tag=0, default=0),
                     name="ConsumerGroupMetadataValue")  # fmt: skip
MEMBER_VALUE = Struct(
    F("instance_id", STRING, null="0+"),
    F("rack_id", STRING, null="0+"),
    F("client_id", STRING),
    F("client_host", STRING),
    F("subscribed_topic_names", [STRING]),
    F("subscribed_topic_regex", STRING, null="0+"),
    F("rebalance_timeout_ms", INT32, default=-1),
    F("server_assignor", STRING, null="0+"),
    F("classic_member_metadata", Struct(
        F("session_timeout_ms", INT32),
        F("supported_protocols", [Struct(F("name", STRING), F("metadata", BYTES), name="ClassicProtocol")]),
        name="ClassicMemberMetadata",
    ), null="0+", tag=0, default=None),
    name="ConsumerGroupMemberMetadataValue",
)  # fmt: skip
TARGET_EPOCH_VALUE = Struct(F("assignment_epoch", INT32), name="ConsumerGroupTargetAssignmentMetadataValue")
TARGET_MEMBER_VALUE = Struct(F("topic_partitions", [_TOPIC_PARTITIONS]),
                             name="ConsumerGroupTargetAssignmentMemberValue")  # fmt: skip
_HELD_PARTITIONS = Struct(F("topic_id", UUID), F("partitions", [INT32]), F("assignment_epochs", [INT32], tag=0),
                         name="TopicPartitions")  # fmt: skip
CURRENT_VALUE = Struct(
    F("member_epoch", INT32),
    F("previous_member_epoch", INT32),
    F("state", INT8),
    F("assigned_partitions", [_HELD_PARTITIONS]),
    F("partitions_pending_revocation", [_HELD_PARTITIONS]),
    name="ConsumerGroupCurrentMemberAssignmentValue",
)
VALUES = {GROUP: GROUP_VALUE, MEMBER: MEMBER_VALUE, TARGET_EPOCH: TARGET_EPOCH_VALUE,
          TARGET_MEMBER: TARGET_MEMBER_VALUE, CURRENT: CURRENT_VALUE}  # fmt: skip
MEMBER_STATES = {"stable": 0, "unrevoked_partitions": 1, "unreleased_partitions": 2}  # Kafka's MemberState bytes
STATE_NAMES = {byte: name for name, byte in MEMBER_STATES.items()}
_GROUP_TYPES = (GROUP, PARTITION_METADATA, TARGET_EPOCH)
_MEMBER_TYPES = (MEMBER, TARGET_MEMBER, CURRENT)
Assignment = dict[Any, frozenset[int]]


@attrs.frozen
class ConsumerKey:
    """A KIP-848 record's key: its type (3-8), the group and, for member records, the member id."""

    type: int
    group: str
    member_id: str | None = None


def key(type_: int, group: str, member_id: str | None = None) -> bytes:
    if type_ in _MEMBER_TYPES:
        body = encode_struct(_MEMBER_KEY, 0, struct_class(_MEMBER_KEY)(group, member_id))
    else:
        body = encode_struct(_GROUP_KEY, 0, struct_class(_GROUP_KEY)(group))
    return type_.to_bytes(2, "big") + body


def parse_key(type_: int, data: bytes) -> ConsumerKey | None:
    """The key after its int16 type; None for a type that is not a consumer group record we read."""
    if type_ in _MEMBER_TYPES:
        k = decode_struct(_MEMBER_KEY, 0, memoryview(data)[2:])
        return ConsumerKey(type_, k.group_id, k.member_id)
    if type_ in _GROUP_TYPES:
        return ConsumerKey(type_, decode_struct(_GROUP_KEY, 0, memoryview(data)[2:]).group_id)
    return None


def encode(type_: int, value: Any) -> bytes:
    return b"\x00\x00" + encode_struct(VALUES[type_], 0, value, flexible=True)


def parse_value(type_: int, data: bytes) -> Any:
    version = Reader(data).int16()
    if version != 0:
        raise ValueError(f"unknown version {version} of a record of type {type_}")
    return decode_struct(VALUES[type_], 0, memoryview(data)[2:], flexible=True)


GroupValue = struct_class(GROUP_VALUE)
MemberValue = struct_class(MEMBER_VALUE)
TargetEpochValue = struct_class(TARGET_EPOCH_VALUE)
TargetMemberValue = struct_class(TARGET_MEMBER_VALUE)
CurrentValue = struct_class(CURRENT_VALUE)


def listed(parts: Assignment) -> list:
    """A target assignment as its record lists it: topics by id, partitions sorted."""
    return [TargetMemberValue.TopicPartitions(t, ps) for t, ps in as_owned(parts)]


def held(parts: Assignment, epochs: dict) -> list:
    """Partitions a member holds as its current assignment lists them, each with its assignment epoch."""
    return [CurrentValue.TopicPartitions(t, ps, [epochs[t, p] for p in ps]) for t, ps in as_owned(parts)]


def assignment(listed_parts: list) -> Assignment:
    return {t.topic_id: frozenset(t.partitions) for t in listed_parts if t.partitions}


def assignment_epochs(listed_parts: list) -> dict:
    """The assignment epochs a current assignment's list gives (a partition past its epochs has none)."""
    return {(t.topic_id, p): e for t in listed_parts for p, e in zip(t.partitions, t.assignment_epochs)}


def member_value(m: Any) -> Any:
    classic = None
    if m.classic is not None:
        meta = MemberValue.ClassicMemberMetadata
        classic = meta(m.classic.session_timeout_ms, [meta.ClassicProtocol(n, d) for n, d in m.classic.protocols])
    return MemberValue(m.instance_id, m.rack_id, m.client_id, m.client_host, list(m.subscribed_topic_names),
                       m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, classic)  # fmt: skip


def current_value(m: Any) -> Any:
    epochs = m.assignment_epochs
    return CurrentValue(m.member_epoch, m.previous_member_epoch, MEMBER_STATES[m.state], held(m.assigned, epochs),
                        held(m.pending_revocation, epochs))  # fmt: skip


def group_rows(group: Any) -> dict[bytes, bytes]:
    """The group's own records: its epoch (with the metadata hash) and its target assignment epoch."""
    gid = group.group_id
    return {key(GROUP, gid): encode(GROUP, GroupValue(group.group_epoch, group.metadata_hash)),
            key(TARGET_EPOCH, gid): encode(TARGET_EPOCH, TargetEpochValue(group.assignment_epoch))}  # fmt: skip


def member_rows(group: Any, member_id: str) -> dict[bytes, bytes | None]:
    """A member's records: metadata, target assignment, current assignment (None: must not exist)."""
    gid, member, target = group.group_id, group.members.get(member_id), group.target.get(member_id)
    return {
        key(MEMBER, gid, member_id): None if member is None else encode(MEMBER, member_value(member)),
        key(TARGET_MEMBER, gid, member_id): None if target is None else encode(
            TARGET_MEMBER, TargetMemberValue(listed(target))),
        key(CURRENT, gid, member_id): None if member is None else encode(CURRENT, current_value(member)),
    }  # fmt: skip


def group_tombstones(group_id: str, stored: Iterable[bytes]) -> list[tuple[bytes, None]]:
    """What Kafka writes when a consumer group goes: every record of it deleted, the group's own last."""
    keys = set(stored) | {key(PARTITION_METADATA, group_id), key(GROUP, group_id)}
    return [(k, None) for k in order(keys, {})]


_RANK_DELETED = {CURRENT: 0, TARGET_MEMBER: 1, TARGET_EPOCH: 2, MEMBER: 3, PARTITION_METADATA: 9, GROUP: 10}
_RANK_WRITTEN = {MEMBER: 4, GROUP: 5, TARGET_MEMBER: 6, TARGET_EPOCH: 7, CURRENT: 8}


def order(keys: set[bytes], values: dict[bytes, bytes | None]) -> list[bytes]:
    """``keys`` in the order Kafka writes such changes (see the module's docstring); stable otherwise."""
    def rank(k: bytes) -> tuple[int, bytes]:
        type_ = int.from_bytes(k[:2], "big")
        ranks = _RANK_WRITTEN if values.get(k) is not None else _RANK_DELETED
        return ranks[type_], k

    return sorted(keys, key=rank)


def subscribed_hash(names: Iterable[str], snap: dict) -> int:
    """Kafka's metadata hash of the subscribed topics ``names``: of each that exists, its name, id and partition
    count (``snap``: the topics by name, ``TopicRegistry.snapshot``)."""
    found = ((name, snap.get(name)) for name in names)
    return metadata_hash([(name, t.topic_id, t.num_partitions) for name, t in found if t is not None])


def metadata_hash(topics: list[tuple[str, Any, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics (name, id, partition count): what Kafka's metadata hash
    covers (no racks: we have one broker), 0 without topics. Kafka hashes with XXH3; we use BLAKE2b."""
    if not topics:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name, topic_id, partitions in sorted(topics, key=lambda t: t[0]):
        h.update(b"\x00" + topic_id.bytes + name.encode() + b"\x00" + partitions.to_bytes(4, "big"))
    return int.from_bytes(h.digest(), "big", signed=True)
