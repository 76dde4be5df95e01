"""ConsumerGroupHeartbeat as the consumer coordinator sees it: the request, the answer, the errors.

``Heartbeat`` carries the request's fields (``owned`` is its
``TopicPartitions``: None when not sent) with the client's id and address;
``HeartbeatResult`` the answer (``assignment`` None when not sent).
``GroupError`` is an error answer with Kafka's message, raised anywhere in
the coordinator (``not_a_member``, ``fenced_epoch``, ``static_member`` and ``check_room`` make the common ones;
``new_member_id`` makes a member id as Kafka writes one). ``validate`` is Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``
(checked before the group is looked at), ``topic_pattern`` compiles a
``SubscribedTopicRegex``.

Kafka compiles regexes with RE2/J; we compile with ``java_regex`` (Python's
``re`` where it reads a pattern as Java does) and also refuse what RE2/J
refuses and Python accepts (lookaround, atomic groups, back references):
every refusal is INVALID_REGULAR_EXPRESSION with Kafka's message, its
reason in our words.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

import attrs

from protocol import ErrorCode

from ..java_regex import JavaRegexError, compile_java
from .consumer_member import STATIC_LEAVE_EPOCH, Assignment, ConsumerMember

GENERATED_MEMBER_ID_VERSION = 1  # KIP-1082: from v1 the client makes up its member id
_RE2_REFUSED = re.compile(r"\(\?(?:=|!|<=|<!|>)|\\[1-9]")


class GroupError(Exception):
    """An error answer: Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code, self.message = code, message


@attrs.frozen
class Heartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@attrs.frozen
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


_JAVA_TRIMMED = "".join(map(chr, range(33)))


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_REQUEST, message)


def _blank(value: str | None) -> bool:
    """Kafka's ``throwIfEmptyString`` test: empty after Java's ``trim()`` (which strips every char <= space)."""
    return value is not None and not value.strip(_JAVA_TRIMMED)


def validate(hb: Heartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's checks of a heartbeat's fields, in its order."""
    if (hb.version >= GENERATED_MEMBER_ID_VERSION or hb.member_epoch > 0 or hb.member_epoch == -1) \
            and _blank(hb.member_id or ""):  # fmt: skip
        raise _invalid("MemberId can't be empty.")
    for value, name in ((hb.group_id, "GroupId"), (hb.instance_id, "InstanceId"), (hb.rack_id, "RackId")):
        if _blank(value):
            raise _invalid(f"{name} can't be empty.")
    if hb.member_epoch == 0:
        if hb.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if hb.owned is None or hb.owned:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif hb.member_epoch == STATIC_LEAVE_EPOCH:
        if hb.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif hb.member_epoch < STATIC_LEAVE_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if hb.server_assignor is not None and hb.server_assignor not in assignors:
        raise GroupError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {hb.server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(assignors)}.")  # fmt: skip


def topic_pattern(regex: str) -> re.Pattern:
    """A ``SubscribedTopicRegex`` compiled for full matches, or INVALID_REGULAR_EXPRESSION."""
    found = _RE2_REFUSED.search(regex)
    try:
        if found is not None:
            raise JavaRegexError(f"{found.group()} is not supported by RE2/J")
        return compile_java(regex)
    except (JavaRegexError, re.error) as exc:
        raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc}.") from None


def new_member_id() -> str:
    """A member id as Kafka's ``Uuid.randomUuid().toString()`` writes one (22 url-safe base64 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def not_a_member(member_id: str, group_id: str) -> GroupError:
    return GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def static_member(group: Any, instance_id: str, member_id: str | None, unknown: str | None = None,
                  ) -> ConsumerMember:  # fmt: skip
    """The member holding ``instance_id`` (Kafka's static member checks): UNKNOWN_MEMBER_ID when none does
    (``unknown``: the message, by default "Instance id ... is unknown."), FENCED_INSTANCE_ID when it is not
    ``member_id`` (None: any member id will do)."""
    member = group.static_member(instance_id)
    if member is None:
        raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, unknown or f"Instance id {instance_id} is unknown.")
    if member_id is not None and member.member_id != member_id:
        raise GroupError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                         f"{instance_id} was fenced by member {member.member_id}.")  # fmt: skip
    return member


def check_room(group: Any, member_id: str, max_size: int) -> None:
    """GROUP_MAX_SIZE_REACHED when a member not yet in the group would take it past ``group.consumer.max.size``."""
    if len(group.members) >= max_size and member_id not in group.members:
        raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity "
                         f"of {max_size} members.")  # fmt: skip


def fenced_epoch(received: int, known: int, relation: str) -> GroupError:
    return GroupError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a {relation} member epoch "
                      f"({received}) than the one known by the group coordinator ({known}). The member must abandon "
                      "all its partitions and rejoin.")  # fmt: skip
