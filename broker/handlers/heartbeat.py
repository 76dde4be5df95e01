"""Heartbeat (key 12): v0-4, a member says it is alive and learns of rebalances.

Behaviour: a current member's session restarts; the answer is NONE, or
REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member must
rejoin). Otherwise UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID
or COORDINATOR_NOT_AVAILABLE, as Kafka answers.

Authorization: READ on the GROUP first; refused, GROUP_AUTHORIZATION_FAILED
and the member's session is not touched.

Version notes: v1 throttle time; v3 ``group_instance_id``; v4 flexible.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 12


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error = ctx.broker.groups.coordinator.heartbeat(
        request.group_id, request.member_id, request.group_instance_id, request.generation_id
    )
    return ctx.response(error_code=error)

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
