"""ACL bindings and filters: Kafka's ``AclBinding``/``AclBindingFilter`` rules, no I/O.

An ACL binding says *who* (a principal such as ``User:alice``, or ``User:*``
for everyone) *from where* (a host address, or ``*``) may or may not
(ALLOW/DENY) do *what* (an operation) to *which* resources: a resource type
and a name, matched LITERAL (the name itself, or ``*`` for every name) or
PREFIXED (every name starting with it).

Filters pick bindings for DescribeAcls and DeleteAcls (Kafka's
``ResourcePatternFilter.matches`` and ``AccessControlEntryFilter.matches``):
ANY (or a null name, principal or host) matches everything; pattern type
MATCH picks the bindings that would apply to the named resource: LITERAL
ones of that name or ``*``, and PREFIXED ones whose name starts it.

``creation_error`` is Kafka's check of a new binding (the CreateAcls handler
and the controller's ``validateNewAcl``); it returns the INVALID_REQUEST
message, or ``None``. The codes are Kafka's (``ResourceType``,
``PatternType``, ``AclOperation``, ``AclPermissionType``).

A client's host is compared as Kafka's authorizer compares it: the text of
Java's ``InetAddress.getHostAddress()`` (``java_host_address``), so an ACL
for ``0:0:0:0:0:0:0:1`` applies to a client connected from ``::1``.
"""

from __future__ import annotations

import ipaddress
from enum import IntEnum

import attrs

def ipv4_unmapped(ip: str) -> str:
    """An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``, an IPv4 client of a dual-stack socket) as its IPv4
    address, as Java makes such a peer an ``Inet4Address``; any other text as it is."""
    if ip.startswith("::ffff:"):
        try:
            mapped = ipaddress.ip_address(ip).ipv4_mapped
        except ValueError:
            return ip
        return ip if mapped is None else str(mapped)
    return ip


def java_host_address(ip: str, scope_id: int = 0) -> str:
    """``ip`` as Java's ``InetAddress.getHostAddress()`` prints a socket's peer: IPv4 as is; IPv4-mapped IPv6
    as its IPv4 address (Java makes it an ``Inet4Address``); other IPv6 in eight hex groups without leading
    zeros, uncompressed, then ``%<scope id>`` when the socket has one. Text that is no address is kept."""
    try:
        address = ipaddress.ip_address(ipv4_unmapped(ip).partition("%")[0])
    except ValueError:
        return ip
    if isinstance(address, ipaddress.IPv4Address):
        return str(address)
    text = ":".join(format(int(group, 16), "x") for group in address.exploded.split(":"))
    return f"{text}%{scope_id}" if scope_id else text


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
# The operations each resource type has (Kafka's AclEntry.supportedOperations), for authorized_operations.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),  # fmt: skip
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                           Op.ALTER, Op.DESCRIBE),  # fmt: skip
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}


@attrs.frozen
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: PermissionType

    def to_json(self) -> dict:
        return {k: (int(v) if isinstance(v, IntEnum) else v) for k, v in attrs.asdict(self).items()}

    @classmethod
    def from_json(cls, raw: dict) -> "AclBinding":
        return cls(ResourceType(raw["resource_type"]), raw["resource_name"], PatternType(raw["pattern_type"]),
                   raw["principal"], raw["host"], AclOperation(raw["operation"]),
                   PermissionType(raw["permission_type"]))  # fmt: skip


@attrs.frozen
class AclFilter:
    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: PermissionType

    def matches(self, acl: AclBinding) -> bool:
        return self._pattern_matches(acl) and self._entry_matches(acl)

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:  # a MATCH filter
            return acl.resource_name in (self.resource_name, WILDCARD)
        return self.resource_name.startswith(acl.resource_name)

    def _entry_matches(self, acl: AclBinding) -> bool:
        return (
            self.principal in (None, acl.principal)
            and self.host in (None, acl.host)
            and self.operation in (AclOperation.ANY, acl.operation)
            and self.permission_type in (PermissionType.ANY, acl.permission_type)
        )


def creation_error(acl: AclBinding) -> str | None:
    """Why Kafka refuses to create ``acl`` (INVALID_REQUEST), or None."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission_type not in (PermissionType.DENY, PermissionType.ALLOW):
        return f"Invalid permissionType {acl.permission_type.name}"
    if ":" not in acl.principal:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the principal " \
               "type from the principal name)"  # fmt: skip
    return None


def enum_or_unknown(enum: type[IntEnum], code: int) -> IntEnum:
    """Kafka's ``fromCode``: a code it does not know reads as UNKNOWN."""
    try:
        return enum(code)
    except ValueError:
        return enum(0)
