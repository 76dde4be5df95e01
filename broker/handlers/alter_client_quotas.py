"""AlterClientQuotas (key 49): v0-1, setting and removing client quotas (``broker/quotas.py``).

Behaviour: each entry names an entity (a map, as Kafka reads it: a type
given twice keeps its last name) and its ops; the entity and every op that
sets a value are checked as Kafka's controller checks them (an empty entity,
an unknown type, an empty name, ``ip`` with another type, a key not of that
entity, a value not above 0, a fraction for a byte rate), each failure
INVALID_REQUEST with Kafka's message on that entry only. An entry naming a
key twice, or an entity an earlier entry named, is INVALID_REQUEST "Ignoring
duplicate entity ClientQuotaEntity(entries={...})" (the entity as Java prints
its map) and is not applied; as in Kafka's ``ClientQuotaControlManager`` an
earlier entry of that entity still is, and each entity is answered once,
with its last answer. An op with ``remove`` removes its key. The entries
that pass are stored together, unless ``validate_only``; if the store cannot
be written they get KAFKA_STORAGE_ERROR and nothing changes. A change
applies from the next request on.

Authorization (Kafka's ``ControllerApis``): ALTER_CONFIGS on the cluster,
checked first; without it nothing changes and every entry (its entity
echoed) gets CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed.".

Version notes: v1 flexible.
"""

from __future__ import annotations

import struct

from protocol import ErrorCode
from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ..quotas import QuotaRefused, check_op, entity_of
from ._admin_authz import CLUSTER_DENIED, DEFAULT_MESSAGES

API_KEY = 49


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Entry = type(resp).EntryData
    if not ctx.authorized_cluster(AclOperation.ALTER_CONFIGS):  # every entry answered, as sent
        return _refuse_all(ctx, request, *CLUSTER_DENIED)
    answers: dict[tuple, object] = {}  # one per entity, in the order first named
    changes: dict[tuple, tuple] = {}
    for entry in request.entries:
        names = {e.entity_type: e.entity_name for e in entry.entity}
        key = tuple(sorted(names.items(), key=lambda item: item[0]))
        keys = [op.key for op in entry.ops]
        error = None
        if key in answers or len(set(keys)) < len(keys):
            error = ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {_java_entity(names)}"
        else:
            try:
                changes[key] = _change(names, entry.ops)
            except QuotaRefused as exc:
                error = ErrorCode.INVALID_REQUEST, str(exc)
        answers[key] = Entry(error_code=error[0] if error else ErrorCode.NONE, error_message=error and error[1],
                             entity=[Entry.EntityData(entity_type=k, entity_name=v) for k, v in names.items()])
    resp.entries = list(answers.values())
    if changes and not request.validate_only:
        try:
            await ctx.broker.quotas.alter(list(changes.values()))
        except OSError as exc:  # refused; one in doubt (MetadataDirFailed, no OSError) is not answered
            for key in changes:
                answer = answers[key]
                if answer.error_code == ErrorCode.NONE:
                    answer.error_code, answer.error_message = ErrorCode.KAFKA_STORAGE_ERROR, f"quotas not stored: {exc}"
    return resp


def _change(names: dict, ops) -> tuple:
    entity = entity_of(list(names.items()))
    values: dict[str, float | None] = {}
    for op in ops:
        if not op.remove:
            check_op(entity, op.key, op.value)
        values[op.key] = None if op.remove else op.value
    return entity, values


def _java_entity(names: dict) -> str:
    """Kafka's ``ClientQuotaEntity.toString``: the entity's HashMap as Java prints it, entries in bucket order."""
    size = 2
    while len(names) > size * 3 // 4:
        size *= 2

    def bucket(text: str) -> int:
        code = 0
        for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
            code = (31 * code + unit) & 0xFFFFFFFF
        return (code ^ (code >> 16)) & (size - 1)

    items = sorted(names.items(), key=lambda item: bucket(item[0]))  # stable: a bucket keeps insertion order
    return "ClientQuotaEntity(entries={" + ", ".join(f"{k}={'null' if v is None else v}" for k, v in items) + "})"


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` and its default message for every entry."""
    return _refuse_all(ctx, request, error, DEFAULT_MESSAGES.get(error))


def _refuse_all(ctx: RequestContext, request, code: ErrorCode, message: str | None) -> object:
    """Every entry answered ``code`` and ``message``, its entity as sent."""
    resp = ctx.response()
    Entry = type(resp).EntryData
    resp.entries = [Entry(error_code=code, error_message=message, entity=[
        Entry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in request.entries]  # fmt: skip
    return resp
