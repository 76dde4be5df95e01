"""ListGroups (key 16): v0-4, every group this coordinator knows.

Behaviour: each group with its protocol type ("consumer" for consumers, ""
for groups that only store offsets); v4 adds the state and filters by
``states_filter`` (case-insensitive, as Kafka parses state names). Deleted
groups are not listed.

Version notes: v1 throttle time; v3 flexible; v4 states.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler

API_KEY = 16


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    listed = type(resp).ListedGroup
    states = request.states_filter if ctx.version >= 4 else None
    for group_id, protocol_type, state in ctx.broker.groups.list(states):
        resp.groups.append(listed(group_id=group_id, protocol_type=protocol_type, group_state=state))
    return resp
