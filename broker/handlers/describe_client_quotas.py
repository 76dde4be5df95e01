"""DescribeClientQuotas (key 48): v0-1, the quotas set (``broker/quotas.py``) that a filter matches.

Behaviour: every entity with quotas that the filter matches, with its
values: each filter component names an entity type the entity must have and
how its name must match (exact, the default entity, or any name: as Kafka's
``ClientQuotasImage`` matches it, "specified" takes the default entity too); with
``strict`` the entity may have no other types (an empty strict filter
matches nothing, as in Kafka; an empty loose one everything). The filter is
checked first, with Kafka's messages: an empty entity
type, or one given twice, is INVALID_REQUEST; a type other than ``user``,
``client-id`` and ``ip`` is UNSUPPORTED_VERSION; match type 0 (exact) needs
a match string, 1 (default) and 2 (any named) must not have one, others are
unknown; ``ip`` cannot be combined with ``user`` or ``client-id``. An error
answer has null entries; so has the one (UNKNOWN_SERVER_ERROR, no message:
``error_answer``, Kafka's ``getErrorResponse``) that replaces an answer that
cannot be written (a message quoting an entity type near 0x7fff bytes).

Authorization (Kafka's ``KafkaApis``): DESCRIBE_CONFIGS on the cluster, before
the filter is checked; without it the answer is CLUSTER_AUTHORIZATION_FAILED
"Cluster authorization failed." with null entries.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import CLUSTER_DENIED

API_KEY = 48
ENTITY_TYPES = ("user", "client-id", "ip")
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _component_error(component, seen: set[str]) -> tuple[ErrorCode, str] | None:
    kind, match = component.entity_type, component.match
    if not kind:
        return ErrorCode.INVALID_REQUEST, "Invalid empty entity type."
    if kind in seen:
        return ErrorCode.INVALID_REQUEST, f"Entity type {kind} cannot appear more than once in the filter."
    if kind not in ENTITY_TYPES:
        return ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}"
    seen.add(kind)
    if component.match_type == EXACT and match is None:
        return ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."
    if component.match_type == DEFAULT and match is not None:
        return ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
    if component.match_type == SPECIFIED and match is not None:
        return ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
    if component.match_type not in (EXACT, DEFAULT, SPECIFIED):
        return ErrorCode.INVALID_REQUEST, f"Unknown match type {component.match_type}"
    return None


def filter_error(components) -> tuple[ErrorCode, str] | None:
    seen: set[str] = set()
    for component in components:
        error = _component_error(component, seen)
        if error is not None:
            return error
    if "ip" in seen and seen & {"user", "client-id"}:
        return ErrorCode.INVALID_REQUEST, ("Invalid entity filter component combination. IP filter component "
                                           "should not be used with user or clientId filter component.")  # fmt: skip
    return None


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    error = None if ctx.authorized_cluster(AclOperation.DESCRIBE_CONFIGS) else CLUSTER_DENIED
    error = error or filter_error(request.components)
    if error is not None:
        return _refused(ctx, *error)
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, entries=[])
    Entry = type(resp).EntryData
    for entity, values in sorted(ctx.broker.quotas.quotas.items(), key=lambda item: repr(item[0])):
        if _matches(entity, request.components, request.strict):
            resp.entries.append(Entry(
                entity=[Entry.EntityData(entity_type=kind, entity_name=name) for kind, name in entity],
                values=[Entry.ValueData(key=k, value=v) for k, v in sorted(values.items())],
            ))  # fmt: skip
    return resp


def _matches(entity, components, strict: bool) -> bool:
    """Kafka's filter: each component's type must be in the entity and match its name (exact, the
    default, or any, the default included); ``strict``: the entity has no other types."""
    names = dict(entity)
    for component in components:
        if component.entity_type not in names:
            return False
        name = names[component.entity_type]
        if component.match_type == EXACT and name != component.match:
            return False
        if component.match_type == DEFAULT and name is not None:
            return False
    return not strict or len(names) == len(components)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top, no message, no entries (null)."""
    return _refused(ctx, error, None)


def _refused(ctx: RequestContext, code: ErrorCode, message: str | None) -> object:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, entries=None)
