"""What DescribeAcls, CreateAcls and DeleteAcls share: the broker has no authorizer.

Kafka without ``authorizer.class.name`` answers every ACL request with
SECURITY_DISABLED (DescribeAcls once for the request, CreateAcls per
creation, DeleteAcls per filter), and its admin tools report that ACLs are
not enabled. Before that, parsing the request refuses a binding or filter
with an UNKNOWN (0) resource type, pattern type, operation or permission type
(an IllegalArgumentException while the request is read), which closes the
connection; ``check_known`` does the same.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..dispatch import CloseConnection

DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"  # DescribeAcls
CHANGE_MESSAGE = "No Authorizer is configured."  # CreateAcls and DeleteAcls
UNKNOWN = 0
FILTER_CODES = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")  # Describe, Delete


def check_known(name: str, entries: list[Any], fields: tuple[str, ...]) -> None:
    """Close the connection if any of ``fields`` of any entry is UNKNOWN, as Kafka's request parser does."""
    for entry in entries:
        if any(getattr(entry, field) == UNKNOWN for field in fields):
            raise CloseConnection(f"{name} contains UNKNOWN elements")


def refuse_each(Result: type, entries: list[Any], **fields: Any) -> list[Any]:
    """One SECURITY_DISABLED result per creation (CreateAcls) or filter (DeleteAcls)."""
    return [Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=CHANGE_MESSAGE, **fields) for _ in entries]
