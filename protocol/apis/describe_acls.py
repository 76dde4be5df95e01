"""DescribeAcls (key 29): we serve v0-3; flexible from v2.

Lists the ACLs matching a filter: resource type and name, pattern type (v1+,
KIP-290 prefixed ACLs; LITERAL before), principal, host, operation and
permission type. Codes: resource types 1 ANY, 2 TOPIC, 3 GROUP, 4 CLUSTER,
5 TRANSACTIONAL_ID, 6 DELEGATION_TOKEN, 7 USER; pattern types 1 ANY,
2 MATCH, 3 LITERAL, 4 PREFIXED; 0 is UNKNOWN in each enum.

Version notes: v1 adds the pattern type; v2 is the first flexible version;
v3 has the v2 layout (user principals, KIP-554).
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct
from ._acl_fields import acl_filter_fields

API = Api(
    29,
    "DescribeAcls",
    (0, 3),
    flexible=2,
    request=Struct(*acl_filter_fields()),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+", default=""),
        F("resources", [Struct(
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("pattern_type", INT8, v="1+", default=3),
            F("acls", [Struct(
                F("principal", STRING),
                F("host", STRING),
                F("operation", INT8),
                F("permission_type", INT8),
                name="AclDescription",
            )]),
            name="DescribeAclsResource",
        )]),
    ),
)
