"""CreateAcls (key 30): v0-3, each creation answered SECURITY_DISABLED: there is no authorizer.

Behaviour (Kafka's ``AclApis.handleCreateAcls`` with no authorizer): one
result per creation, in request order, each SECURITY_DISABLED with "No
Authorizer is configured."; nothing is stored. A creation with an UNKNOWN
(0) resource type, pattern type, operation or permission type closes the
connection (``_acls.py``). v0 carries no pattern type: it is LITERAL.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler
from ._acls import CHANGE_MESSAGE, check_known

API_KEY = 30


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("CreateAclsRequest", request.creations,
                ("resource_type", "resource_pattern_type", "operation", "permission_type"))  # fmt: skip
    resp = ctx.response()
    Result = type(resp).AclCreationResult
    resp.results = [Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=CHANGE_MESSAGE)
                    for _ in request.creations]  # fmt: skip
    return resp
