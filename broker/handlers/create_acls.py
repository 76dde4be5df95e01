"""CreateAcls (key 30): v0-3, each creation answered SECURITY_DISABLED: there is no authorizer.

Kafka's ``AclApis.handleCreateAcls`` with no authorizer, see ``_acls.py``:
one result per creation, in request order; nothing is stored.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler
from ._acls import check_known, refuse_each

API_KEY = 30


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("CreateAclsRequest", request.creations,
                ("resource_type", "resource_pattern_type", "operation", "permission_type"))  # fmt: skip
    resp = ctx.response()
    resp.results = refuse_each(type(resp).AclCreationResult, request.creations)
    return resp
