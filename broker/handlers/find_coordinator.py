"""FindCoordinator (key 10): v0-4, this broker coordinates every group.

Behaviour: a group key (``key_type`` 0) gets this node's advertised
endpoint; the first lookup creates ``__consumer_offsets`` as Kafka does.
A transaction key (``key_type`` 1) gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
transactions are not served (see InitProducerId), and that error is final
for clients instead of an endless retry. Any other key type is
INVALID_REQUEST.

Version notes: v1 adds ``key_type`` and ``error_message``; v3 flexible; v4
(KIP-699) looks up many keys at once, one ``Coordinator`` entry per key.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 10
GROUP, TRANSACTION = 0, 1


def _lookup(ctx: RequestContext, key_type: int) -> tuple[ErrorCode, str | None]:
    if key_type == TRANSACTION:
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactions are not supported by this broker."
    if key_type != GROUP:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"
    ctx.broker.groups.store.ensure_topic()
    return ErrorCode.NONE, None


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    host, port = ctx.broker.advertised
    node = ctx.broker.config.node_id
    if ctx.version < 4:
        error, message = _lookup(ctx, request.key_type)
        if error != ErrorCode.NONE:
            return ctx.response(error_code=error, error_message=message, node_id=-1, host="", port=-1)
        return ctx.response(error_code=error, node_id=node, host=host, port=port)
    resp = ctx.response()
    error, message = _lookup(ctx, request.key_type)
    for key in request.coordinator_keys:
        found = error == ErrorCode.NONE
        resp.coordinators.append(type(resp).Coordinator(
            key=key, node_id=node if found else -1, host=host if found else "", port=port if found else -1,
            error_code=error, error_message=message,
        ))  # fmt: skip
    return resp
