"""What DescribeAcls, CreateAcls and DeleteAcls share (Kafka's ``AclApis``).

**Without an authorizer** (no ``authorizer.class.name``) Kafka answers every
ACL request with SECURITY_DISABLED (DescribeAcls once for the request,
CreateAcls per creation, DeleteAcls per filter), and its admin tools report
that ACLs are not enabled.

**With one**, DescribeAcls needs DESCRIBE on the cluster and CreateAcls and
DeleteAcls need ALTER on it; without that the whole request is answered
CLUSTER_AUTHORIZATION_FAILED. The bindings themselves are kept by
``broker/authorizer.py``.

Before any of this, parsing the request refuses a binding or filter with an
UNKNOWN resource type, pattern type, operation or permission type (0, or a
code Kafka does not know: an IllegalArgumentException while the request is
read), which closes the connection; ``check_known`` does the same.

Version 0 has no pattern type (LITERAL): PREFIXED bindings are left out of
v0 answers, which cannot name them.

A change whose save the disk refuses (``store_saves.NotStored``: a full or
failing disk, or no file descriptor left) changes nothing; ``stored`` turns
it into KAFKA_STORAGE_ERROR with a message naming the failure, for each
creation or filter it covered, as a config or quota change is answered. A
save in doubt is not answered: the broker stops (``MetadataDirFailed``).
"""

from __future__ import annotations

from typing import Any, Awaitable

from protocol import ErrorCode

from ..acl_model import AclBinding, AclFilter, AclOperation, PatternType, PermissionType, ResourceType, enum_or_unknown
from ..dispatch import CloseConnection, RequestContext
from ..store_saves import NotStored
from ._admin_authz import cluster_denied_message

DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"  # DescribeAcls
CHANGE_MESSAGE = "No Authorizer is configured."  # CreateAcls and DeleteAcls
FILTER_CODES = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")  # Describe, Delete
_ENUMS = (ResourceType, PatternType, AclOperation, PermissionType)


def check_known(name: str, entries: list[Any], fields: tuple[str, ...]) -> None:
    """Close the connection if any of ``fields`` of any entry is UNKNOWN, as Kafka's request parser does."""
    for entry in entries:
        if any(enum_or_unknown(enum, getattr(entry, f)) == 0 for enum, f in zip(_ENUMS, fields)):
            raise CloseConnection(f"{name} contains UNKNOWN elements")


def denied(ctx: RequestContext, op: AclOperation) -> str | None:
    """The CLUSTER_AUTHORIZATION_FAILED message when the principal may not do ``op`` to the cluster."""
    return None if ctx.authorized_cluster(op) else cluster_denied_message(ctx)


def each(Result: type, entries: list[Any], code: ErrorCode, message: str, **fields: Any) -> list[Any]:
    """The same error for every creation (CreateAcls) or filter (DeleteAcls)."""
    return [Result(error_code=code, error_message=message, **fields) for _ in entries]


async def stored(change: Awaitable[Any]) -> tuple[Any, tuple[ErrorCode, str | None]]:
    """What ``change`` returned and NONE; or None and KAFKA_STORAGE_ERROR with the failure's message when the
    disk refused its save (nothing changed)."""
    try:
        return await change, (ErrorCode.NONE, None)
    except NotStored as exc:
        return None, (ErrorCode.KAFKA_STORAGE_ERROR, str(exc))


def acl_filter(entry: Any) -> AclFilter:
    return AclFilter(ResourceType(entry.resource_type_filter), entry.resource_name_filter,
                     PatternType(entry.pattern_type_filter), entry.principal_filter, entry.host_filter,
                     AclOperation(entry.operation), PermissionType(entry.permission_type))  # fmt: skip


def binding(entry: Any) -> AclBinding:
    return AclBinding(ResourceType(entry.resource_type), entry.resource_name, PatternType(entry.resource_pattern_type),
                      entry.principal, entry.host, AclOperation(entry.operation),
                      PermissionType(entry.permission_type))  # fmt: skip


def visible(ctx: RequestContext, acls: list[AclBinding]) -> list[AclBinding]:
    """What the request's version can name: v0 has LITERAL bindings only."""
    return acls if ctx.version > 0 else [acl for acl in acls if acl.pattern_type == PatternType.LITERAL]
