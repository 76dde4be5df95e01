"""LeaveGroup (key 13): v0-5, members leave and the group rebalances without them.

Behaviour: each leaving member is removed (a static member may be named by
its ``group_instance_id`` alone); the group then prepares a rebalance.
Per member: UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID; for the group:
INVALID_GROUP_ID or COORDINATOR_NOT_AVAILABLE.

Authorization: READ on the GROUP first; refused, the whole request is
GROUP_AUTHORIZATION_FAILED at the top level with no member listed (every
version), and nobody leaves.

Version notes: v0-2 name one ``member_id`` and carry its error at the top
level (as Kafka's response does); v3 batches members (KIP-345); v4
flexible; v5 a ``reason``.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 13


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.version < 3:
        leaving = [(request.member_id, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    error, errors = await ctx.broker.groups.coordinator.leave(request.group_id, leaving)
    if ctx.version < 3:
        return ctx.response(error_code=error if error != ErrorCode.NONE or not errors else errors[0])
    resp = ctx.response(error_code=error)
    member_cls = type(resp).MemberResponse
    resp.members = [member_cls(member_id=m, group_instance_id=i, error_code=e) for (m, i), e in zip(leaving, errors)]
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
