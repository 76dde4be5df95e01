"""DescribeAcls (key 29): v0-3, answered SECURITY_DISABLED: there is no authorizer.

Behaviour (Kafka's ``AclApis.handleDescribeAcls`` with no authorizer): the
answer is SECURITY_DISABLED with "No Authorizer is configured on the
broker" and no resources. A filter with an UNKNOWN (0) resource type,
pattern type, operation or permission type closes the connection, as
Kafka's request parser does (``_acls.py``). v0 carries no pattern type: it
is LITERAL.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler
from ._acls import DESCRIBE_MESSAGE, FILTER_CODES, check_known

API_KEY = 29


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("DescribeAclsRequest", [request], FILTER_CODES)
    return ctx.response(error_code=ErrorCode.SECURITY_DISABLED, error_message=DESCRIBE_MESSAGE, resources=[])
