"""What the coordinator answers: plain results the handlers turn into responses.

Requests reach the coordinator as the decoded protocol objects' fields
(``JoinRequest`` carries the ones JoinGroup needs, whatever the version: the
group, the member id and the joining member's ``MemberProfile``), so
the coordinator knows nothing of versions beyond the few rules that depend
on them (KIP-394's MEMBER_ID_REQUIRED from v4).
"""

from __future__ import annotations

import attrs

from protocol import ErrorCode

from .group import MemberProfile


@attrs.frozen
class JoinRequest:
    group_id: str
    member_id: str
    profile: MemberProfile
    require_known_member_id: bool
    skip_assignment_allowed: bool = False  # JoinGroup v9+ (KIP-814)


@attrs.frozen
class JoinResult:
    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = attrs.field(factory=list)
    skip_assignment: bool = False


@attrs.frozen
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


@attrs.frozen
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@attrs.frozen
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@attrs.frozen
class GroupSummary:
    """A group as DescribeGroups sees it; ``error`` (and Kafka's ``error_message``) set for a group it does not
    describe, ``Dead``: unknown, deleted, or not a classic group."""

    error: ErrorCode
    group_id: str
    state: str
    protocol_type: str = ""
    protocol: str = ""
    members: list[MemberSummary] = attrs.field(factory=list)
    error_message: str | None = None
