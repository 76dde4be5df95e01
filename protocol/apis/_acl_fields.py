"""The fields of an ACL binding filter, shared by DescribeAcls (the request) and DeleteAcls (each filter).

A null name, principal or host matches any; the pattern type arrived in v1
(LITERAL before). The codes are listed in ``describe_acls.py``.
"""

from ..schema import INT8, STRING, F


def acl_filter_fields() -> tuple:
    return (
        F("resource_type_filter", INT8),
        F("resource_name_filter", STRING, null="0+"),
        F("pattern_type_filter", INT8, v="1+", default=3),
        F("principal_filter", STRING, null="0+"),
        F("host_filter", STRING, null="0+"),
        F("operation", INT8),
        F("permission_type", INT8),
    )
