"""DeleteAcls (key 31): v0-3, each filter answered SECURITY_DISABLED: there is no authorizer.

Behaviour (Kafka's ``AclApis.handleDeleteAcls`` with no authorizer): one
result per filter, in request order, each SECURITY_DISABLED with "No
Authorizer is configured." and no matching ACLs. A filter with an UNKNOWN
(0) resource type, pattern type, operation or permission type closes the
connection (``_acls.py``). v0 carries no pattern type: it is LITERAL.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler
from ._acls import CHANGE_MESSAGE, check_known

API_KEY = 31


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("DeleteAclsRequest", request.filters,
                ("resource_type_filter", "pattern_type_filter", "operation", "permission_type"))  # fmt: skip
    resp = ctx.response()
    Result = type(resp).DeleteAclsFilterResult
    resp.filter_results = [Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=CHANGE_MESSAGE,
                                  matching_acls=[]) for _ in request.filters]  # fmt: skip
    return resp
