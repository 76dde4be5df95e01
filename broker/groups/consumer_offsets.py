"""Committed offsets of KIP-848 consumer groups: Kafka's ``ConsumerGroup`` checks and expiry rule.

* OffsetCommit (``commit_error``): without a member epoch (< 0) an empty
  group takes the commit; otherwise the member must exist
  (UNKNOWN_MEMBER_ID), commit with OffsetCommit v9 or later
  (UNSUPPORTED_VERSION), and give its current member epoch
  (STALE_MEMBER_EPOCH). A classic member (KIP-848 migration) may commit
  with any version and gives its epoch as its generation
  (ILLEGAL_GENERATION). TxnOffsetCommit also takes commits naming no member
  at all, and answers ILLEGAL_GENERATION for a stale epoch, as Kafka does.
* OffsetFetch (``fetch_error``): a fetch naming no member (null id, epoch
  < 0) is always answered; otherwise the member must exist and give its
  current epoch.
* Expiry (``expired``): an offset expires ``offsets.retention.minutes``
  after its commit (or at its explicit expiry) once no member subscribes to
  its topic; offsets staged by an open transaction never expire.
"""

from __future__ import annotations

from protocol import ErrorCode

from . import txn_offsets as txn
from .consumer_group import ConsumerGroup

MIN_COMMIT_VERSION = 9  # OffsetCommit version a member of the consumer protocol must use


def commit_error(group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int, *,
                 version: int = MIN_COMMIT_VERSION, transactional: bool = False) -> ErrorCode | None:  # fmt: skip
    """The group-level answer to an OffsetCommit (``version``: its version) or, ``transactional``, a
    TxnOffsetCommit (whose version does not matter); None when its partitions may be committed."""
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and not member_id and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and not member.uses_classic and version < MIN_COMMIT_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    if epoch != member.member_epoch:
        return ErrorCode.ILLEGAL_GENERATION if transactional or member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH
    return None


def fetch_error(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorCode | None:
    if member_id is None and epoch < 0:
        return None
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if epoch != member.member_epoch:
        return ErrorCode.STALE_MEMBER_EPOCH
    return None


def expired(group: ConsumerGroup, now: int, retention_ms: int) -> list[tuple[str, int]]:
    subscribed = group.subscribed_topic_names()
    staged = txn.pending_keys(group)
    out = []
    for key, value in group.offsets.items():
        if key[0] in subscribed or key in staged:
            continue
        deadline = value.expire_timestamp if value.expire_timestamp != -1 else value.commit_timestamp + retention_ms
        if deadline <= now:
            out.append(key)
    return out
