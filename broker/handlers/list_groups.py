"""ListGroups (key 16): v0-5, every group this coordinator knows.

Behaviour: each group with its protocol type ("consumer" for consumers and
KIP-848 consumer groups, "" for groups that only store offsets); v4 adds the
state (a consumer group's: Empty, Assigning, Reconciling, Stable) and filters
by ``states_filter`` (case-insensitive, as Kafka parses state names). Deleted
groups are not listed. v5 reports ``group_type`` ("classic" or "consumer")
and filters by ``types_filter`` as Kafka's ``GroupType.parse`` does: names
are matched case-insensitively, a name that is no group type matches no
group, and an empty filter matches every group.

Authorization (Kafka's ``handleListGroupsRequest``): a principal that may
DESCRIBE the cluster sees every group; any other sees only the groups it may
DESCRIBE, the rest left out without an error (neither check logs a denial).

Version notes: v1 throttle time; v3 flexible; v4 states; v5 types (KIP-848).
"""

from __future__ import annotations

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 16


def lists_type(types_filter: list[str], group_type: str) -> bool:
    """Whether a v5 ``types_filter`` admits groups of ``group_type`` (empty admits all)."""
    return not types_filter or any(t.lower() == group_type for t in types_filter)  # not trimmed, as Kafka


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    every_group = ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False)
    listed = type(resp).ListedGroup
    states = request.states_filter if ctx.version >= 4 else None
    for group_id, protocol_type, state, group_type in ctx.broker.groups.list(states):
        if ctx.version >= 5 and not lists_type(request.types_filter, group_type):
            continue
        if not every_group and not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, group_id,
                                                  log_denied=False):  # fmt: skip
            continue
        resp.groups.append(listed(group_id=group_id, protocol_type=protocol_type, group_state=state,
                                  group_type=group_type))  # fmt: skip
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
