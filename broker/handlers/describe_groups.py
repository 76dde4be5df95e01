"""DescribeGroups (key 15): v0-5, a group's state, protocol and members.

Behaviour: as Kafka's classic coordinator: a stable group lists its members
with their metadata for the chosen protocol and their assignments; in any
other state members are listed without them and the protocol is empty. An
unknown group (the empty id included, as Kafka allows it here) is described
as ``Dead`` with error NONE. With ``include_authorized_operations`` (v3+) every
operation a GROUP resource supports is reported (no authorizer).

Version notes: v1 throttle time; v3 authorized operations; v4
``group_instance_id``; v5 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler

API_KEY = 15
# AclOperation codes a GROUP resource supports: READ 3, DELETE 6, DESCRIBE 8.
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8))


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    group_cls = type(resp).DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    for group_id in request.groups:
        s = ctx.broker.groups.describe(group_id)
        members = [member_cls(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                              client_host=m.client_host, member_metadata=m.metadata,
                              member_assignment=m.assignment) for m in s.members]  # fmt: skip
        described = group_cls(error_code=s.error, group_id=group_id, group_state=s.state,
                              protocol_type=s.protocol_type, protocol_data=s.protocol, members=members)  # fmt: skip
        if request.include_authorized_operations:
            described.authorized_operations = GROUP_OPERATIONS
        resp.groups.append(described)
    return resp
