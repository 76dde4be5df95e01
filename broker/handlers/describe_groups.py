"""DescribeGroups (key 15): v0-6, a group's state, protocol and members.

Behaviour: as Kafka's classic coordinator: a stable group lists its members
with their metadata for the chosen protocol and their assignments; in any
other state members are listed without them and the protocol is empty. An
unknown or deleted group (the empty id included, as Kafka allows it here) is
described as ``Dead``: with error NONE up to v5, and from v6 (KIP-1043) with
GROUP_ID_NOT_FOUND and the message "Group <id> not found.", the other fields
left empty as Kafka leaves them. A KIP-848 consumer group is no classic
group: it is described as ``Dead`` too, from v6 with "Group <id> is not a
classic group.", as Kafka 4 answers (the group layer's ``GroupSummary``
carries that error and message; before v6 only ``Dead`` is sent). With
``include_authorized_operations`` (v3+) a group answered without error
reports the operations the principal may do to it (``RequestContext.authorized_operations``: every operation a GROUP
resource supports when there is no authorizer); one answered with an error
keeps the INT32_MIN default, as Kafka only fills in groups without error.

Authorization, per group: DESCRIBE on the GROUP; a refused group is
answered GROUP_AUTHORIZATION_FAILED with an empty state, protocol type and
protocol, no members and no message (Kafka's ``groupError``), and is not
looked at; the others as above. Answers keep the order of the request. An
answer that cannot be written (a member id over 0x7fff bytes, made of a long
client id) is replaced by every group's ``groupError`` with
UNKNOWN_SERVER_ERROR (``error_answer``, Kafka's ``getErrorResponse``).

Version notes: v1 throttle time; v3 authorized operations; v4
``group_instance_id``; v5 flexible; v6 ``error_message`` and
GROUP_ID_NOT_FOUND for a missing group.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.group import DEAD

API_KEY = 15


@handler(API_KEY, 0, 6)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    group_cls = type(resp).DescribedGroup
    for group_id in request.groups:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            resp.groups.append(_group_error(group_cls, group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        s = ctx.broker.groups.describe(group_id)
        if ctx.version >= 6 and s.state == DEAD:  # the group layer's error and message
            described = group_cls(error_code=s.error, error_message=s.error_message, group_id=group_id,
                                  group_state=DEAD)  # fmt: skip
        elif s.state == DEAD:  # unknown, deleted, or a consumer group: no error before v6
            described = group_cls(error_code=ErrorCode.NONE, group_id=group_id, group_state=DEAD)
        else:
            described = _described(group_cls, s)
        if request.include_authorized_operations and described.error_code == ErrorCode.NONE:
            described.authorized_operations = ctx.authorized_operations(ResourceType.GROUP, group_id)
        resp.groups.append(described)
    return resp


def _group_error(group_cls, group_id: str, error: ErrorCode) -> object:
    """Kafka's ``groupError``: ``error``, an empty state, protocol type and protocol, no members."""
    return group_cls(error_code=error, group_id=group_id, group_state="", protocol_type="", protocol_data="")


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: each requested group as ``_group_error``."""
    resp = ctx.response()
    resp.groups = [_group_error(type(resp).DescribedGroup, group_id, error) for group_id in request.groups]
    return resp


def _described(group_cls, s) -> object:
    """The answer for a group summary ``s`` (a ``GroupSummary``), its error included."""
    member_cls = group_cls.DescribedGroupMember
    members = [member_cls(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                          client_host=m.client_host, member_metadata=m.metadata,
                          member_assignment=m.assignment) for m in s.members]  # fmt: skip
    return group_cls(error_code=s.error, group_id=s.group_id, group_state=s.state, protocol_type=s.protocol_type,
                     protocol_data=s.protocol, members=members)  # fmt: skip
