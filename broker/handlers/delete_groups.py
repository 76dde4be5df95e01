"""DeleteGroups (key 42): v0-2, deleting empty groups and their offsets.

Behaviour: a group with members answers NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND (the empty id is a group name like any other here, as in
Kafka); an empty group's offsets
and metadata are deleted with tombstones in ``__consumer_offsets`` (the
cleaner then removes them for good).

Authorization, per group: DELETE on the GROUP; a refused group is
GROUP_AUTHORIZATION_FAILED and left as it is. A group named twice is
answered once, as Kafka deletes the distinct names. Answers keep the order
of the request.

Version notes: v1 identical; v2 flexible.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler

API_KEY = 42


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    result_cls = type(resp).DeletableGroupResult
    for group_id in dict.fromkeys(request.groups_names):
        if ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, group_id):
            error = await ctx.broker.groups.delete(group_id)
        else:
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        resp.results.append(result_cls(group_id=group_id, error_code=error))
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every group named, a repeated one repeated."""
    resp = ctx.response()
    resp.results = [type(resp).DeletableGroupResult(group_id=g, error_code=error) for g in request.groups_names]
    return resp
