"""DeleteAcls (key 31): v0-3, removing the ACL bindings that match each filter.

Behaviour (Kafka's ``AclApis.handleDeleteAcls`` and the controller's
``AclControlManager.deleteAcls``, see ``_acls.py``): one result per filter,
in request order, listing the bindings it removed (a binding matched by two
filters is listed under both). A principal without ALTER on the cluster gets
CLUSTER_AUTHORIZATION_FAILED for every filter; without an authorizer every
filter gets SECURITY_DISABLED. The remaining bindings are saved before the
answer goes out; if the disk refuses that save, nothing is removed and every
filter gets KAFKA_STORAGE_ERROR naming the failure, no bindings listed
(``_acls.stored``).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._acls import CHANGE_MESSAGE, FILTER_CODES, acl_filter, check_known, denied, each, stored, visible

API_KEY = 31


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("DeleteAclsRequest", request.filters, FILTER_CODES)
    resp = ctx.response()
    Result = type(resp).DeleteAclsFilterResult
    refused = denied(ctx, AclOperation.ALTER)
    if refused or ctx.broker.authorizer is None:
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if refused else ErrorCode.SECURITY_DISABLED
        resp.filter_results = each(Result, request.filters, code, refused or CHANGE_MESSAGE, matching_acls=[])
        return resp
    removed, (code, message) = await stored(ctx.broker.authorizer.delete([acl_filter(f) for f in request.filters]))
    if removed is None:
        resp.filter_results = each(Result, request.filters, code, message, matching_acls=[])
        return resp
    Matching = Result.DeleteAclsMatchingAcl
    resp.filter_results = [
        Result(error_code=ErrorCode.NONE, error_message=None, matching_acls=[
            Matching(error_code=ErrorCode.NONE, error_message=None, resource_type=a.resource_type,
                     resource_name=a.resource_name, pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                     operation=a.operation, permission_type=a.permission_type)
            for a in visible(ctx, acls)])
        for acls in removed
    ]  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every filter, no message, no ACLs matched."""
    resp = ctx.response()
    Result = type(resp).DeleteAclsFilterResult
    resp.filter_results = [Result(error_code=error, error_message=None) for _ in request.filters]
    return resp
