"""CreateAcls (key 30): we serve v0-3; flexible from v2.

Adds ACL bindings, one result per creation in request order. The codes of
each binding are those of DescribeAcls (``describe_acls.py``).

Version notes: v1 adds the resource pattern type (LITERAL before); v2 is the
first flexible version; v3 has the v2 layout.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    30,
    "CreateAcls",
    (0, 3),
    flexible=2,
    request=Struct(
        F("creations", [Struct(
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("resource_pattern_type", INT8, v="1+", default=3),
            F("principal", STRING),
            F("host", STRING),
            F("operation", INT8),
            F("permission_type", INT8),
            name="AclCreation",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+", default=""),
            name="AclCreationResult",
        )]),
    ),
)
