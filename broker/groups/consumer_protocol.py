"""The consumer protocol embedded in the classic group protocol: a member's subscription and assignment bytes.

A classic member of protocol type ``consumer`` sends, in each JoinGroup
protocol's metadata, a ``ConsumerProtocolSubscription`` (int16 version,
then: topics, nullable user data; from v1 the partitions it owns; from v2
its generation; from v3 its rack), and receives in SyncGroup a
``ConsumerProtocolAssignment`` (int16 version, then its partitions by topic
name and nullable user data; the same layout in every version). Both are
non-flexible: int16 string lengths, int32 array and bytes lengths. A version
above the newest we know is read as the newest, as Kafka reads it (newer
versions only add fields at the end).

``parse_subscription`` and ``parse_assignment`` raise ``SchemaError`` on
bytes they cannot read (Kafka's ``SchemaException``); ``encode_assignment``
writes an assignment in the version the member's subscription used (at
most 3), as Kafka's ``prepareAssignment`` does.
"""

from __future__ import annotations

import attrs

from protocol.primitives import Reader, w_bytes, w_int16, w_int32, w_string

SUBSCRIPTION_MAX_VERSION, ASSIGNMENT_MAX_VERSION = 3, 3
TopicPartitions = list[tuple[str, list[int]]]


class SchemaError(ValueError):
    """Bytes that are not the consumer protocol's layout."""


@attrs.frozen
class Subscription:
    version: int
    topics: list[str]
    user_data: bytes | None = None
    owned: TopicPartitions = attrs.field(factory=list)
    generation: int = -1
    rack_id: str | None = None


@attrs.frozen
class Assignment:
    version: int
    partitions: TopicPartitions
    user_data: bytes | None = None


def _topic_partitions(reader: Reader) -> TopicPartitions:
    out = []
    for _ in range(max(reader.int32(), 0)):
        topic = reader.string(False, False)
        out.append((topic, [reader.int32() for _ in range(max(reader.int32(), 0))]))
    return out


def version_of(data: bytes) -> int:
    """The version a subscription or assignment was written in."""
    if len(data) < 2:
        raise SchemaError("Error reading field 'version': not enough bytes")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        raise SchemaError(f"Unsupported subscription version: {version}")
    return version


def parse_subscription(data: bytes) -> Subscription:
    version = version_of(data)
    reader = Reader(data, 2)
    try:
        topics = [reader.string(False, False) for _ in range(max(reader.int32(), 0))]
        user_data = reader.bytes_(False, True)
        read = min(version, SUBSCRIPTION_MAX_VERSION)
        owned = _topic_partitions(reader) if read >= 1 else []
        generation = reader.int32() if read >= 2 else -1
        rack_id = reader.string(False, True) if read >= 3 else None
    except Exception as exc:  # short or broken bytes
        raise SchemaError(f"Error reading the consumer protocol subscription: {exc}") from None
    return Subscription(version, topics, user_data, owned, generation, rack_id)


def parse_assignment(data: bytes) -> Assignment:
    version = version_of(data)
    reader = Reader(data, 2)
    try:
        partitions = _topic_partitions(reader)
        user_data = reader.bytes_(False, True)
    except Exception as exc:
        raise SchemaError(f"Error reading the consumer protocol assignment: {exc}") from None
    return Assignment(version, partitions, user_data)


def encode_assignment(partitions: TopicPartitions, version: int) -> bytes:
    """An assignment without user data, topics in the order given."""
    out: list = []
    w_int16(out, min(version, ASSIGNMENT_MAX_VERSION))
    _w_topic_partitions(out, partitions)
    w_bytes(out, None, False)
    return b"".join(out)


def _w_topic_partitions(out: list, partitions: TopicPartitions) -> None:
    w_int32(out, len(partitions))
    for topic, parts in partitions:
        w_string(out, topic, False)
        w_int32(out, len(parts))
        for p in parts:
            w_int32(out, p)


def encode_subscription(topics: list[str], owned: TopicPartitions = (), version: int = 1) -> bytes:
    """A subscription (tests and the downgrade use it); fields past ``version`` left out."""
    out: list = []
    w_int16(out, version)
    w_int32(out, len(topics))
    for topic in topics:
        w_string(out, topic, False)
    w_bytes(out, None, False)
    if version >= 1:
        _w_topic_partitions(out, owned)
    if version >= 2:
        w_int32(out, -1)
    if version >= 3:
        w_string(out, None, False)
    return b"".join(out)
