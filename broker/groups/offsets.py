"""Committed offsets: OffsetCommit's checks, OffsetFetch, expiry, and rebuilding groups at startup.

Offsets belong to a ``Group`` (``group.offsets``: ``(topic, partition)`` ->
``OffsetCommitValue``). A commit is checked as Kafka's
``ClassicGroup.validateOffsetCommit`` checks it (a dead group answers
COORDINATOR_NOT_AVAILABLE; an empty group accepts generation -1 whatever
else the commit names; a commit that names a member, an instance id or a
generation must come from a current member of that generation, holding
that instance id (``Group.validate_member``); without them, only an empty group accepts it; a group
completing a rebalance answers REBALANCE_IN_PROGRESS; a TxnOffsetCommit is
spared the last two), written to ``__consumer_offsets`` and only then
visible to OffsetFetch.

Expiry follows KIP-211 and Kafka's ``offsetExpirationCondition``: an empty
group's offsets expire ``offsets.retention.minutes`` after the later of the
commit and the moment the group became empty (Kafka counts from the latter
only); a group without a protocol type (offsets stored by "simple"
consumers) counts from each commit; a group with members only when it is a
Stable group of the consumer protocol whose subscriptions can be read, and
then only the offsets of topics no member subscribes to, from each commit;
any other group keeps its offsets. An explicit expiry from OffsetCommit v2-4
replaces the retention where offsets may expire, and only there. Expired offsets are deleted with tombstones, and an
empty group left without offsets is deleted too. Offsets staged by an open
transaction (``txn_offsets``) never expire, and their partitions keep their
committed offset too, as in Kafka.

Rebuilding groups at startup is ``replay.py``'s.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode
from protocol.primitives import INT64_MAX

from . import consumer_protocol as cp
from . import records as r
from . import txn_offsets as txn
from .consumer_group import CONSUMER
from .group import COMPLETING, DEAD, EMPTY, STABLE, Group

def commit_error(group: Group | None, member_id: str, instance_id: str | None, generation: int,
                 missing: ErrorCode = ErrorCode.ILLEGAL_GENERATION, transactional: bool = False,
                 ) -> ErrorCode | None:  # fmt: skip
    """The group-level answer to an OffsetCommit (or a TxnOffsetCommit: ``transactional``), or None when its
    partitions may be committed; ``missing`` for a group that does not exist and a generation
    (GROUP_ID_NOT_FOUND from OffsetCommit v9). Kafka's ``ClassicGroup.validateOffsetCommit``."""
    if group is None:
        return None if generation < 0 else missing
    if group.state == DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.state == EMPTY:
        return None
    if generation >= 0 or member_id or instance_id is not None:
        error = group.validate_member(member_id, instance_id) or (
            ErrorCode.ILLEGAL_GENERATION if generation != group.generation_id else None)  # fmt: skip
        if error is not None:
            return error
    elif not transactional and group.state != EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.REBALANCE_IN_PROGRESS if not transactional and group.state == COMPLETING else None


def partition_error(topics: Any, topic: str, partition: int, metadata: str | None,
                    max_size: int) -> ErrorCode | None:  # fmt: skip
    """UNKNOWN_TOPIC_OR_PARTITION, or OFFSET_METADATA_TOO_LARGE for metadata longer than ``max_size``
    (``offset.metadata.max.bytes``) measured as Kafka does, in Java chars (UTF-16 code units), not bytes."""
    if topics.partition(topic, partition) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if metadata is not None and len(metadata.encode("utf-16-le")) // 2 > max_size:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return None


def offset_value(offset: int, leader_epoch: int, metadata: str | None, now: int, retention_ms: int,
                 commit_timestamp: int = -1) -> Any:  # fmt: skip
    """The stored value of one commit. ``commit_timestamp`` is OffsetCommit v1's, -1 (Kafka's
    ``DEFAULT_TIMESTAMP``) for the broker's clock; Kafka stores any other value as sent."""
    # Kafka adds a v2-4 retention_time_ms to the clock in a Java long, so a huge one wraps negative
    # and the offset expires at once; the sum is kept at the int64 maximum here: it never expires.
    # Only -1 (Kafka's DEFAULT_RETENTION_TIME) means none: any other value, a negative one too, sets an expiry.
    expire = min(now + retention_ms, INT64_MAX) if retention_ms != -1 else -1
    stamp = now if commit_timestamp == -1 else commit_timestamp
    return r.OffsetValue(offset=offset, leader_epoch=leader_epoch, metadata=metadata or "", commit_timestamp=stamp,
                         expire_timestamp=expire)  # fmt: skip


def fetch(group: Group | None, wanted: list[tuple[str, list[int]]] | None,
          require_stable: bool = False) -> list[tuple[str, int, Any, ErrorCode]]:  # fmt: skip
    """``(topic, partition, value or None, error)`` for the partitions asked for, or every committed one.

    With ``require_stable`` a partition with offsets staged by an open transaction answers no offset and
    UNSTABLE_OFFSET_COMMIT (Kafka's ``getOffsets``).
    """
    offsets = group.offsets if group is not None else {}
    keys = sorted(offsets) if wanted is None else [(t, p) for t, parts in wanted for p in parts]
    out = []
    for key in keys:
        if require_stable and txn.has_pending(group, key):
            out.append((*key, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
        else:
            out.append((*key, offsets.get(key), ErrorCode.NONE))
    return out


def expired(group: Group, now: int, retention_ms: int) -> list[tuple[str, int]]:
    """The offsets of ``group`` that expire at ``now`` (Kafka's ``offsetExpirationCondition`` and
    ``cleanupExpiredOffsets``); none that an open transaction staged, nor one whose new commit is in the log
    waiting to be durable (Kafka's state holds that commit already, and it is fresh)."""
    since_empty, subscribed = -1, set()
    if group.protocol_type and group.state == EMPTY:
        since_empty = group.state_timestamp
    elif group.protocol_type:  # members: only a Stable consumer group whose subscriptions are known
        known = subscribed_topics(group) if group.state == STABLE else None
        if known is None:
            return []
        subscribed = known
    staged = txn.pending_keys(group)
    out = []
    for key, value in group.offsets.items():
        if key in staged or key in group.committing or key[0] in subscribed:
            continue
        if value.expire_timestamp != -1:  # an explicit retention (OffsetCommit v2-4) wins
            gone = value.expire_timestamp <= now
        else:
            gone = max(value.commit_timestamp, since_empty) + retention_ms <= now
        if gone:
            out.append(key)
    return out


def subscribed_topics(group: Group) -> set[str] | None:
    """Every topic the members subscribe to, or None when the group does not use the consumer protocol, has
    no protocol yet or a member's subscription cannot be read (Kafka's ``computeSubscribedTopics``)."""
    if group.protocol_type != CONSUMER or group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        try:
            topics.update(cp.parse_subscription(member.metadata(group.protocol_name)).topics)
        except cp.SchemaError:
            return None
    return topics
