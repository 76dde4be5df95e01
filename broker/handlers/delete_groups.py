"""DeleteGroups (key 42): v0-2, deleting empty groups and their offsets.

Behaviour: a group with members answers NON_EMPTY_GROUP, an unknown one
GROUP_ID_NOT_FOUND (the empty id is a group name like any other here, as in
Kafka); an empty group's offsets
and metadata are deleted with tombstones in ``__consumer_offsets`` (the
cleaner then removes them for good).

Version notes: v1 identical; v2 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler

API_KEY = 42


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    result_cls = type(resp).DeletableGroupResult
    for group_id in request.groups_names:
        error = await ctx.broker.groups.delete(group_id)
        resp.results.append(result_cls(group_id=group_id, error_code=error))
    return resp
