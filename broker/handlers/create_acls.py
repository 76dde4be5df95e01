"""CreateAcls (key 30): v0-3, adding ACL bindings; one result per creation, in request order.

Behaviour (Kafka's ``AclApis.handleCreateAcls`` and the controller's
``AclControlManager.createAcls``, see ``_acls.py``):

* a principal without ALTER on the cluster: every creation
  CLUSTER_AUTHORIZATION_FAILED; no authorizer: every creation
  SECURITY_DISABLED;
* a binding Kafka refuses (a CLUSTER resource not named ``kafka-cluster``,
  an empty name, resource type ANY, pattern type ANY or MATCH, operation
  ANY, permission ANY, a principal without ``Type:``) gets INVALID_REQUEST
  with Kafka's message, and the others are still created;
* creating a binding that exists already succeeds and changes nothing.

The bindings are saved (``__acls.json``) before the answer goes out. If the
disk refuses the save, none is made and every creation Kafka did not refuse
gets KAFKA_STORAGE_ERROR naming the failure (``_acls.stored``).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, creation_error
from ..dispatch import RequestContext, error_answer, handler
from ._acls import CHANGE_MESSAGE, binding, check_known, denied, each, stored

API_KEY = 30


@handler(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request) -> object:
    check_known("CreateAclsRequest", request.creations,
                ("resource_type", "resource_pattern_type", "operation", "permission_type"))  # fmt: skip
    resp = ctx.response()
    Result = type(resp).AclCreationResult
    refused = denied(ctx, AclOperation.ALTER)
    if refused or ctx.broker.authorizer is None:
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED if refused else ErrorCode.SECURITY_DISABLED
        resp.results = each(Result, request.creations, code, refused or CHANGE_MESSAGE)
        return resp
    acls = [binding(c) for c in request.creations]
    errors = [creation_error(acl) for acl in acls]
    _, (code, message) = await stored(ctx.broker.authorizer.create([a for a, e in zip(acls, errors) if e is None]))
    resp.results = [Result(error_code=ErrorCode.INVALID_REQUEST, error_message=error) if error
                    else Result(error_code=code, error_message=message) for error in errors]  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every creation, no message."""
    resp = ctx.response()
    resp.results = [type(resp).AclCreationResult(error_code=error, error_message=None) for _ in request.creations]
    return resp
