"""SyncGroup (key 14): v0-5, the leader hands out the assignment, everybody receives theirs.

Behaviour: the coordinator parks the request until the leader's assignment
is stored in ``__consumer_offsets``, then every member gets its own part.
Errors as Kafka: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL (v5 names a protocol that is
not the group's).

Checks before the coordinator, in Kafka's order (``handleSyncGroupRequest``):
from v5 a request without ``protocol_type`` or ``protocol_name`` is
INCONSISTENT_GROUP_PROTOCOL (both are mandatory there); then READ on the
GROUP, refused with GROUP_AUTHORIZATION_FAILED and an empty assignment.

Version notes: v3 static membership; v4 flexible; v5 protocol type and name
in both directions (KIP-559).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.results import SyncRequest
from ._error_answers import top_level

API_KEY = 14


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    if ctx.version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        return ctx.response(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL, assignment=b"")
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    result = await ctx.broker.groups.coordinator.sync(SyncRequest(
        request.group_id, request.generation_id, request.member_id, request.group_instance_id,
        request.protocol_type, request.protocol_name,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
    ))  # fmt: skip
    return ctx.response(error_code=result.error, assignment=result.assignment,
                        protocol_type=result.protocol_type, protocol_name=result.protocol_name)  # fmt: skip

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` alone, an empty assignment
