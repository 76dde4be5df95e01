"""DeleteAcls (key 31): v0-3, each filter answered SECURITY_DISABLED: there is no authorizer.

Kafka's ``AclApis.handleDeleteAcls`` with no authorizer, see ``_acls.py``:
one result per filter, in request order, with no matching ACLs.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler
from ._acls import FILTER_CODES, check_known, refuse_each

API_KEY = 31


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("DeleteAclsRequest", request.filters, FILTER_CODES)
    resp = ctx.response()
    resp.filter_results = refuse_each(type(resp).DeleteAclsFilterResult, request.filters, matching_acls=[])
    return resp
