"""DeleteAcls (key 31): we serve v0-3; flexible from v2.

Removes the ACLs matching each filter (the filter fields of DescribeAcls);
each filter's result lists the bindings it removed.

Version notes: v1 adds the pattern type (LITERAL before); v2 is the first
flexible version; v3 has the v2 layout.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct
from ._acl_fields import acl_filter_fields

API = Api(
    31,
    "DeleteAcls",
    (0, 3),
    flexible=2,
    request=Struct(
        F("filters", [Struct(*acl_filter_fields(), name="DeleteAclsFilter")]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("filter_results", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+", default=""),
            F("matching_acls", [Struct(
                F("error_code", INT16),
                F("error_message", STRING, null="0+", default=""),
                F("resource_type", INT8),
                F("resource_name", STRING),
                F("pattern_type", INT8, v="1+", default=3),
                F("principal", STRING),
                F("host", STRING),
                F("operation", INT8),
                F("permission_type", INT8),
                name="DeleteAclsMatchingAcl",
            )]),
            name="DeleteAclsFilterResult",
        )]),
    ),
)
