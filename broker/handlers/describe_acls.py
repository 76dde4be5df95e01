"""DescribeAcls (key 29): v0-3, the ACL bindings that match a filter.

Behaviour (Kafka's ``AclApis.handleDescribeAcls``, see ``_acls.py``):

* a principal without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED;
* no authorizer: SECURITY_DISABLED with "No Authorizer is configured on the
  broker" and no resources;
* otherwise the matching bindings, grouped by resource pattern (type, name,
  pattern type) in the order they were created.

A filter with an UNKNOWN resource type, pattern type, operation or
permission type closes the connection, as Kafka's request parser does. v0
carries no pattern type: it is LITERAL.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._acls import DESCRIBE_MESSAGE, FILTER_CODES, acl_filter, check_known, denied, visible

API_KEY = 29


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("DescribeAclsRequest", [request], FILTER_CODES)
    refused = denied(ctx, AclOperation.DESCRIBE)
    if refused:
        return ctx.response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=refused, resources=[])
    if ctx.broker.authorizer is None:
        return ctx.response(error_code=ErrorCode.SECURITY_DISABLED, error_message=DESCRIBE_MESSAGE, resources=[])
    resp = ctx.response(error_code=ErrorCode.NONE, error_message=None)
    Resource = type(resp).DescribeAclsResource
    groups: dict[tuple, list] = {}
    for acl in visible(ctx, ctx.broker.authorizer.describe(acl_filter(request))):
        entry = Resource.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                                        permission_type=acl.permission_type)  # fmt: skip
        groups.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(entry)
    resp.resources = [Resource(resource_type=rtype, resource_name=name, pattern_type=ptype, acls=acls)
                      for (rtype, name, ptype), acls in groups.items()]  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top, no message (``ApiError.fromThrowable``), no ACLs."""
    return ctx.response(error_code=error, error_message=None)
