"""JoinGroup (key 11): v0-9, joining a classic group (``broker.groups.coordinator``).

Behaviour: the request is handed to the coordinator, which parks it until
the rebalance completes (or answers at once: errors, KIP-394's
MEMBER_ID_REQUIRED from v4, a static member rejoining a stable group). The
leader gets every member's metadata for the chosen protocol; the others an
empty list.

Authorization: READ on the GROUP, checked first (Kafka's
``handleJoinGroupRequest``); refused, the answer is GROUP_AUTHORIZATION_FAILED
with generation -1, no member id, leader or members, and the protocol name
empty (null from v7), as Kafka's error response (``error_answer``, also
sent with UNKNOWN_SERVER_ERROR when the answer cannot be written: a member
id made of a client id near 0x7fff bytes), and the group is left alone.

Version notes: v0 has no rebalance timeout (the session timeout is used);
v4 requires a known member id; v5 static membership; v7 returns
``protocol_type``; v9 ``skip_assignment``.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.group import MemberProfile
from ..groups.results import JoinRequest

API_KEY = 11


def client_host(ctx: RequestContext) -> str:
    """The client's address the way Kafka shows it (``/127.0.0.1``)."""
    peer = getattr(ctx.connection, "peer", "")
    return "/" + peer.rsplit(":", 1)[0] if peer else ""


@handler(API_KEY, 0, 9)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error_answer(ctx, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    rebalance_timeout = request.rebalance_timeout_ms if ctx.version >= 1 else request.session_timeout_ms
    profile = MemberProfile(
        request.group_instance_id, ctx.request.header.client_id or "", client_host(ctx), request.session_timeout_ms,
        rebalance_timeout, request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols],
    )  # fmt: skip
    result = await ctx.broker.groups.coordinator.join(
        JoinRequest(request.group_id, request.member_id, profile, ctx.version >= 4, ctx.version >= 9))
    resp = ctx.response(
        error_code=result.error, generation_id=result.generation_id, protocol_type=result.protocol_type,
        protocol_name=result.protocol_name if ctx.version >= 7 else result.protocol_name or "",
        leader=result.leader, skip_assignment=result.skip_assignment, member_id=result.member_id,
    )  # fmt: skip
    member_cls = type(resp).JoinGroupResponseMember
    resp.members = [member_cls(member_id=m, group_instance_id=i, metadata=meta) for m, i, meta in result.members]
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: generation -1, no member id, leader or members, the protocol name empty
    (null from v7)."""
    return ctx.response(error_code=error, generation_id=-1, leader="", member_id="",
                        protocol_name=None if ctx.version >= 7 else "")  # fmt: skip
