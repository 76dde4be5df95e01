"""The records of ``__consumer_offsets``: Kafka's key and value layouts, our declarations.

Every record's key starts with an int16 version that says what it is:

* key v0/v1 ``(group, topic, partition)``: a committed offset; the value is
  an ``OffsetCommitValue`` (v1 when the commit carried an explicit expiry,
  v3 otherwise, as Kafka writes them), a null value deletes it;
* key v2 ``(group)``: the group's metadata (protocol, generation, leader,
  members with their subscriptions and assignments), value v3; a null value
  deletes the group.
* keys of types 3-8: KIP-848 consumer groups (``consumer_records``).

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
from protocol.schema import BYTES, INT32, INT64, STRING, F, Struct

from . import consumer_records as cr
from .consumer_records import ConsumerKey

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
OffsetValue = struct_class(OFFSET_VALUE)
GroupValue = struct_class(GROUP_VALUE)
MemberValue = GroupValue.MemberMetadata
_GROUP_KEY_VERSION = 2


@attrs.frozen
class OffsetKey:
    group: str
    topic: str
    partition: int


@attrs.frozen
class GroupKey:
    group: str


def _with_version(version: int, body: bytes) -> bytes:
    return version.to_bytes(2, "big") + body


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _with_version(1, encode_struct(OFFSET_KEY, 1, struct_class(OFFSET_KEY)(group, topic, partition)))


def group_key(group: str) -> bytes:
    return _with_version(_GROUP_KEY_VERSION, encode_struct(GROUP_KEY, 2, struct_class(GROUP_KEY)(group)))


def offset_value(value: Any) -> bytes:
    """v1 when the commit set its own expiry (OffsetCommit v2-4 retention), else v3."""
    version = 1 if value.expire_timestamp != -1 else 3
    return _with_version(version, encode_struct(OFFSET_VALUE, version, value))


def group_value(value: Any) -> bytes:
    return _with_version(3, encode_struct(GROUP_VALUE, 3, value))


def parse_key(data: bytes) -> OffsetKey | GroupKey | ConsumerKey | None:
    """The key of one ``__consumer_offsets`` record; None for a version we do not know."""
    version = Reader(data).int16()
    if version in (0, 1):
        k = decode_struct(OFFSET_KEY, version, memoryview(data)[2:])
        return OffsetKey(k.group, k.topic, k.partition)
    if version == _GROUP_KEY_VERSION:
        return GroupKey(decode_struct(GROUP_KEY, version, memoryview(data)[2:]).group)
    return cr.parse_key(version, data)


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
