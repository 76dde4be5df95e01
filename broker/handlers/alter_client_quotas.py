"""AlterClientQuotas (key 49): v0-1, setting and removing client quotas (``broker/quotas.py``).

Behaviour: each entry names an entity and its ops; the entity and every op
that sets a value are checked as Kafka's controller checks them (an empty
entity, a type given twice or unknown, an empty name, ``ip`` with another
type, a key not of that entity, a value not above 0, a fraction for a byte
rate), each failure INVALID_REQUEST with Kafka's message on that entry only.
An op with ``remove`` removes its key. The entries that pass are
stored together, unless ``validate_only``; if the store cannot be written
they get KAFKA_STORAGE_ERROR and nothing changes. A change applies from the
next request on.

Authorization (Kafka's ``ControllerApis``): ALTER_CONFIGS on the cluster,
checked first; without it nothing changes and every entry (its entity
echoed) gets CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed.".

Version notes: v1 flexible.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, handler
from ..quotas import QuotaRefused, check_op, entity_of
from ._admin_authz import CLUSTER_DENIED

API_KEY = 49


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Entry = type(resp).EntryData
    changes, passed = [], []
    denied = not ctx.authorized_cluster(AclOperation.ALTER_CONFIGS)
    for entry in request.entries:
        answer = Entry(error_code=ErrorCode.NONE, error_message=None, entity=[
            Entry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])  # fmt: skip
        if denied:
            answer.error_code, answer.error_message = CLUSTER_DENIED
        else:
            try:
                changes.append(_change(entry))
                passed.append(answer)
            except QuotaRefused as exc:
                answer.error_code, answer.error_message = ErrorCode.INVALID_REQUEST, str(exc)
        resp.entries.append(answer)
    if changes and not request.validate_only:
        try:
            ctx.broker.quotas.alter(changes)
        except OSError as exc:
            for answer in passed:
                answer.error_code, answer.error_message = ErrorCode.KAFKA_STORAGE_ERROR, f"quotas not stored: {exc}"
    return resp


def _change(entry) -> tuple:
    entity = entity_of([(e.entity_type, e.entity_name) for e in entry.entity])
    ops: dict[str, float | None] = {}
    for op in entry.ops:
        if not op.remove:
            check_op(entity, op.key, op.value)
        ops[op.key] = None if op.remove else op.value
    return entity, ops
