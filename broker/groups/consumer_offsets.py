"""Committed offsets of KIP-848 consumer groups: Kafka's ``ConsumerGroup`` checks and expiry rule.

* OffsetCommit (``commit_error``): without a member epoch (< 0) an empty
  group takes the commit; otherwise the member must exist
  (UNKNOWN_MEMBER_ID) and commit with OffsetCommit v9 or later
  (UNSUPPORTED_VERSION). Its current member epoch commits any partition; a
  newer one is refused (STALE_MEMBER_EPOCH). An older one (KIP-1251: the
  epoch was bumped by a heartbeat whose answer the client had not read yet)
  commits only partitions the member holds (assigned or pending
  revocation) since that epoch or earlier: their assignment epoch is not
  above it. One partition that fails refuses the whole request, as Kafka's
  per-partition validator throws out of ``OffsetMetadataManager.commitOffset``
  (partitions whose metadata is too large are not checked, as there).
  A classic member (KIP-848 migration) may commit with any version, gives
  its epoch as its generation and is refused with ILLEGAL_GENERATION.
  TxnOffsetCommit also takes commits naming no member at all, checks the
  epoch the same way and answers ILLEGAL_GENERATION for a refusal, as
  Kafka's ``validateTransactionalOffsetCommit`` does.
* OffsetFetch (``fetch_error``): a fetch naming no member (null id, epoch
  < 0) is always answered; otherwise the member must exist and give its
  current epoch (no assignment epochs here, as in Kafka).
* Expiry (``expired``): an offset expires ``offsets.retention.minutes``
  after its commit (or at its explicit expiry) once no member subscribes to
  its topic; offsets staged by an open transaction never expire.
"""

from __future__ import annotations

import uuid
from typing import Iterable

from protocol import ErrorCode

from . import txn_offsets as txn
from .consumer_group import ConsumerGroup

MIN_COMMIT_VERSION = 9  # OffsetCommit version a member of the consumer protocol must use


def commit_error(group: ConsumerGroup, member_id: str, instance_id: str | None, epoch: int,
                 partitions: Iterable[tuple[uuid.UUID | None, int]] = (), *, version: int = MIN_COMMIT_VERSION,
                 transactional: bool = False) -> ErrorCode | None:  # fmt: skip
    """The answer to an OffsetCommit (``version``: its version) or, ``transactional``, a TxnOffsetCommit
    (whose version does not matter) committing ``partitions`` ((topic id, None for a topic that is gone;
    partition)); None when they may be committed."""
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and not member_id and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and not member.uses_classic and version < MIN_COMMIT_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    if epoch == member.member_epoch:
        return None
    if epoch < member.member_epoch and all(_held_since(member, t, p, epoch) for t, p in partitions):
        return None  # KIP-1251: every partition was already the member's at that epoch
    return ErrorCode.ILLEGAL_GENERATION if transactional or member.uses_classic else ErrorCode.STALE_MEMBER_EPOCH


def _held_since(member, topic_id: uuid.UUID | None, partition: int, epoch: int) -> bool:
    """Kafka's ``createAssignmentEpochValidator``: the member holds the partition, given at ``epoch`` or before."""
    since = None if topic_id is None else member.assignment_epoch(topic_id, partition)
    return since is not None and since <= epoch


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
    """The offsets of topics the group does not subscribe whose retention from their commit (or explicit expiry)
    has passed at ``now``; none staged or committing, as ``offsets.expired``."""
    subscribed = group.subscribed_topic_names()
    staged = txn.pending_keys(group)
    out = []
    for key, value in group.offsets.items():
        if key[0] in subscribed or key in staged or key in group.committing:
            continue
        deadline = value.expire_timestamp if value.expire_timestamp != -1 else value.commit_timestamp + retention_ms
        if deadline <= now:
            out.append(key)
    return out
