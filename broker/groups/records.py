"""The records of ``__consumer_offsets``: Kafka's key and value layouts, our declarations.

Every record's key starts with an int16 version that says what it is:

* key v0/v1 ``(group, topic, partition)``: a committed offset; the value is
  an ``OffsetCommitValue`` (v1 when the commit carried an explicit expiry,
  v3 otherwise, as Kafka writes them), a null value deletes it;
* key v2 ``(group)``: the group's metadata (protocol, generation, leader,
  members with their subscriptions and assignments), value v3; a null value
  deletes the group.
* key v3 ``(group)``: a KIP-848 consumer group's epoch
  (``ConsumerGroupMetadataValue`` v0, flexible); a null value deletes the
  consumer group. Kafka also writes the members' subscriptions and the
  target assignment (key types 5-7); we keep those in memory only, so a
  consumer group comes back from a restart empty but at its epoch;
* key v8 ``(group, member)``: what a member of a consumer group holds
  (``ConsumerGroupCurrentMemberAssignmentValue`` v0, flexible: epochs,
  state, assigned partitions and those pending revocation); a null value
  deletes it. After a restart these partitions stay withheld from the
  rejoining members until their old holder is heard from
  (``ConsumerGroup.held``).

The layouts are Kafka's, so tools that read ``__consumer_offsets`` (kcat
with a formatter, Kafka's console consumer with its message formatter)
understand our files; they are declared with our schema DSL and encoded by
``protocol.codec``.
"""

from __future__ import annotations

from typing import Any

import attrs

from protocol.codec import decode_struct, encode_struct
from protocol.messages import struct_class
from protocol.primitives import Reader
from protocol.schema import BYTES, INT8, INT32, INT64, STRING, UUID, F, Struct

OFFSET_KEY = Struct(F("group", STRING), F("topic", STRING), F("partition", INT32), name="OffsetCommitKey")
GROUP_KEY = Struct(F("group", STRING), name="GroupMetadataKey")
OFFSET_VALUE = Struct(
    F("offset", INT64),
    F("leader_epoch", INT32, v="3+", default=-1),
    F("metadata", STRING),
    F("commit_timestamp", INT64),
    F("expire_timestamp", INT64, v="1", default=-1),
    name="OffsetCommitValue",
)
GROUP_VALUE = Struct(
    F("protocol_type", STRING),
    F("generation", INT32),
    F("protocol", STRING, null="0+"),
    F("leader", STRING, null="0+"),
    F("current_state_timestamp", INT64, v="2+", default=-1),
    F("members", [Struct(
        F("member_id", STRING),
        F("group_instance_id", STRING, v="3+", null="3+", default=None),
        F("client_id", STRING),
        F("client_host", STRING),
        F("rebalance_timeout", INT32, v="1+", default=-1),
        F("session_timeout", INT32),
        F("subscription", BYTES),
        F("assignment", BYTES),
        name="MemberMetadata",
    )]),
    name="GroupMetadataValue",
)
CONSUMER_GROUP_KEY = Struct(F("group_id", STRING), name="ConsumerGroupMetadataKey")
CONSUMER_GROUP_VALUE = Struct(
    F("epoch", INT32),
    F("metadata_hash", INT64, tag=0, default=0),
    name="ConsumerGroupMetadataValue",
)
CONSUMER_MEMBER_KEY = Struct(
    F("group_id", STRING), F("member_id", STRING), name="ConsumerGroupCurrentMemberAssignmentKey"
)
_TOPIC_PARTITIONS = Struct(F("topic_id", UUID), F("partitions", [INT32]), name="TopicPartitions")
CONSUMER_MEMBER_VALUE = Struct(
    F("member_epoch", INT32),
    F("previous_member_epoch", INT32),
    F("state", INT8),
    F("assigned_partitions", [_TOPIC_PARTITIONS]),
    F("partitions_pending_revocation", [_TOPIC_PARTITIONS]),
    name="ConsumerGroupCurrentMemberAssignmentValue",
)
MEMBER_STATES = {"stable": 0, "unrevoked_partitions": 1, "unreleased_partitions": 2}  # Kafka's MemberState bytes
OffsetValue = struct_class(OFFSET_VALUE)
ConsumerMemberValue = struct_class(CONSUMER_MEMBER_VALUE)
ConsumerGroupValue = struct_class(CONSUMER_GROUP_VALUE)
GroupValue = struct_class(GROUP_VALUE)
MemberValue = GroupValue.MemberMetadata
_GROUP_KEY_VERSION = 2
_CONSUMER_GROUP_KEY_VERSION = 3
_CONSUMER_MEMBER_KEY_VERSION = 8


@attrs.frozen
class OffsetKey:
    group: str
    topic: str
    partition: int


@attrs.frozen
class GroupKey:
    group: str


@attrs.frozen
class ConsumerGroupKey:
    group: str


@attrs.frozen
class ConsumerMemberKey:
    group: str
    member_id: str


def _with_version(version: int, body: bytes) -> bytes:
    return version.to_bytes(2, "big") + body


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _with_version(1, encode_struct(OFFSET_KEY, 1, struct_class(OFFSET_KEY)(group, topic, partition)))


def group_key(group: str) -> bytes:
    return _with_version(_GROUP_KEY_VERSION, encode_struct(GROUP_KEY, 2, struct_class(GROUP_KEY)(group)))


def consumer_group_key(group: str) -> bytes:
    body = encode_struct(CONSUMER_GROUP_KEY, 0, struct_class(CONSUMER_GROUP_KEY)(group))
    return _with_version(_CONSUMER_GROUP_KEY_VERSION, body)


def consumer_group_value(epoch: int) -> bytes:
    return _with_version(0, encode_struct(CONSUMER_GROUP_VALUE, 0, ConsumerGroupValue(epoch), flexible=True))


def parse_consumer_group_value(data: bytes) -> Any:
    version = Reader(data).int16()
    if version != 0:
        raise ValueError(f"unknown consumer group metadata value version {version}")
    return decode_struct(CONSUMER_GROUP_VALUE, 0, memoryview(data)[2:], flexible=True)


def consumer_member_key(group: str, member_id: str) -> bytes:
    body = encode_struct(CONSUMER_MEMBER_KEY, 0, struct_class(CONSUMER_MEMBER_KEY)(group, member_id))
    return _with_version(_CONSUMER_MEMBER_KEY_VERSION, body)


def consumer_member_value(epoch: int, previous_epoch: int, state: str, assigned: dict, pending: dict) -> bytes:
    """A member's current assignment; ``assigned`` and ``pending`` map topic ids to partition sets."""
    def listed(parts: dict) -> list:
        return [ConsumerMemberValue.TopicPartitions(t, sorted(ps)) for t, ps in sorted(parts.items(), key=str)]

    value = ConsumerMemberValue(epoch, previous_epoch, MEMBER_STATES[state], listed(assigned), listed(pending))
    return _with_version(0, encode_struct(CONSUMER_MEMBER_VALUE, 0, value, flexible=True))


def parse_consumer_member_value(data: bytes) -> Any:
    version = Reader(data).int16()
    if version != 0:
        raise ValueError(f"unknown consumer group member assignment value version {version}")
    return decode_struct(CONSUMER_MEMBER_VALUE, 0, memoryview(data)[2:], flexible=True)


def offset_value(value: Any) -> bytes:
    """v1 when the commit set its own expiry (OffsetCommit v2-4 retention), else v3."""
    version = 1 if value.expire_timestamp >= 0 else 3
    return _with_version(version, encode_struct(OFFSET_VALUE, version, value))


def group_value(value: Any) -> bytes:
    return _with_version(3, encode_struct(GROUP_VALUE, 3, value))


def parse_key(data: bytes) -> OffsetKey | GroupKey | ConsumerGroupKey | ConsumerMemberKey | None:
    """The key of one ``__consumer_offsets`` record; None for a version we do not know."""
    version = Reader(data).int16()
    if version in (0, 1):
        k = decode_struct(OFFSET_KEY, version, memoryview(data)[2:])
        return OffsetKey(k.group, k.topic, k.partition)
    if version == _GROUP_KEY_VERSION:
        return GroupKey(decode_struct(GROUP_KEY, version, memoryview(data)[2:]).group)
    if version == _CONSUMER_GROUP_KEY_VERSION:
        return ConsumerGroupKey(decode_struct(CONSUMER_GROUP_KEY, 0, memoryview(data)[2:]).group_id)
    if version == _CONSUMER_MEMBER_KEY_VERSION:
        k = decode_struct(CONSUMER_MEMBER_KEY, 0, memoryview(data)[2:])
        return ConsumerMemberKey(k.group_id, k.member_id)
    return None


def parse_offset_value(data: bytes) -> Any:
    version = Reader(data).int16()
    if not 0 <= version <= 4:
        raise ValueError(f"unknown offset commit value version {version}")
    return decode_struct(OFFSET_VALUE, version, memoryview(data)[2:], flexible=version >= 4)


def parse_group_value(data: bytes) -> Any:
    version = Reader(data).int16()
    if not 0 <= version <= 4:
        raise ValueError(f"unknown group metadata value version {version}")
    return decode_struct(GROUP_VALUE, version, memoryview(data)[2:], flexible=version >= 4)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
