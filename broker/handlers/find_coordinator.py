"""FindCoordinator (key 10): v0-6, this broker coordinates every group.

Behaviour: a group key (``key_type`` 0) gets this node's advertised
endpoint. The first lookup starts creating ``__consumer_offsets`` (in the
background, one partition at a time, so other connections are served) and
waits for it up to ``CREATION_WAIT_S``; only past that does it answer
COORDINATOR_NOT_AVAILABLE as Kafka does while the topic is created (Kafka
answers that at once, which clients such as kafka-python's admin client do
not retry).
A transaction key (``key_type`` 1) gets this node too, once
``__transaction_state`` exists (created on the first lookup the same way).
A key whose partition of the internal topic is in a failed log dir gets
COORDINATOR_NOT_AVAILABLE: in Kafka that partition has no leader left.
A share key (``key_type`` 2, KIP-932, v6) is INVALID_REQUEST for each key,
with no message: Kafka's answer from a broker without a share coordinator
(and at any version below 6); this broker runs no share groups. Any other
key type is INVALID_REQUEST (Kafka fails such a request as a whole).

Authorization (Kafka's ``getCoordinator``), per key and before anything
else, so a refused key creates no internal topic: a group key needs
DESCRIBE on the GROUP, a transaction key DESCRIBE on the TRANSACTIONAL_ID;
refused, the key is GROUP_AUTHORIZATION_FAILED or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (before v4 the whole answer, with the
error's standard message; from v4 that key's entry, without one, the other
keys answered as usual). A share key at v6 needs CLUSTER_ACTION on the
cluster; refused, the whole request fails with CLUSTER_AUTHORIZATION_FAILED
(each key, with its message), as Kafka's thrown error does.

Messages as Kafka's: before v4 an error answer carries the error's standard
message (Kafka's error response); from v4 a key's error from the lookup
(COORDINATOR_NOT_AVAILABLE, a share key) has none, while an unknown key
type gives every key the standard INVALID_REQUEST message.

Version notes: v1 adds ``key_type`` and ``error_message``; v3 flexible; v4
(KIP-699) looks up many keys at once, one ``Coordinator`` entry per key; v5
may answer TRANSACTION_ABORTABLE (never here); v6 the share key type.
"""

from __future__ import annotations

import trio

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import DEFAULT_MESSAGES

API_KEY = 10
GROUP, TRANSACTION, SHARE = 0, 1, 2
CREATION_WAIT_S = 5.0


# Kafka's Errors.message() of the errors answered here, which its error responses carry.
_MESSAGES = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library"
                               " or the message was sent to an incompatible broker. See the broker logs for more"
                               " details.",
    **DEFAULT_MESSAGES,
}  # fmt: skip
# What a key of each type needs (DESCRIBE on this resource) and what it answers when refused.
_ACCESS = {
    GROUP: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    TRANSACTION: (ResourceType.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
}


def _denied(ctx: RequestContext, key_type: int, key: str) -> ErrorCode | None:
    """The authorization error of one key, or None (share and unknown key types are not checked here)."""
    access = _ACCESS.get(key_type)
    if access is None or ctx.authorized(AclOperation.DESCRIBE, access[0], key):
        return None
    return access[1]


async def _lookup(ctx: RequestContext, key_type: int) -> ErrorCode:
    if key_type == TRANSACTION:
        if await ctx.broker.transactions.ready() is not None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE
    if key_type == SHARE:  # Kafka's getCoordinator: no share coordinator (and before v6, never)
        return ErrorCode.INVALID_REQUEST
    if key_type != GROUP:
        return ErrorCode.INVALID_REQUEST
    with trio.move_on_after(CREATION_WAIT_S):
        await ctx.broker.groups.store.ready()
    if not ctx.broker.groups.store.ensure_topic():
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


def _offline(ctx: RequestContext, key_type: int, key: str) -> ErrorCode:
    """COORDINATOR_NOT_AVAILABLE when ``key``'s internal partition is in a failed log dir, else NONE."""
    topic = ctx.broker.groups.store if key_type == GROUP else ctx.broker.transactions.topic
    return ErrorCode.COORDINATOR_NOT_AVAILABLE if topic.offline_for(key) else ErrorCode.NONE


@handler(API_KEY, 0, 6)
async def handle(ctx: RequestContext, request) -> object:
    if ctx.version < 4:  # an error goes out as Kafka's error response, with the error's own message
        error = _denied(ctx, request.key_type, request.key) or await _lookup(ctx, request.key_type)
        error = _offline(ctx, request.key_type, request.key) if error == ErrorCode.NONE else error
        if error != ErrorCode.NONE:
            return ctx.response(error_code=error, error_message=_MESSAGES[error], node_id=-1, host="", port=-1)
        host, port = ctx.advertised
        return ctx.response(error_code=error, node_id=ctx.broker.config.node_id, host=host, port=port)
    # v4+: an unknown key type, or a share key without CLUSTER_ACTION, fails the request as a whole, and Kafka's
    # error response gives each key the error's message; getCoordinator's own answers carry none.
    if request.key_type == SHARE and ctx.version >= 6 and not ctx.authorized_cluster(AclOperation.CLUSTER_ACTION):
        return _answer(ctx, request, dict.fromkeys(request.coordinator_keys, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                       with_message=True)  # fmt: skip
    if request.key_type not in (GROUP, TRANSACTION, SHARE):
        return _answer(ctx, request, dict.fromkeys(request.coordinator_keys, ErrorCode.INVALID_REQUEST), True)
    errors = {key: _denied(ctx, request.key_type, key) for key in request.coordinator_keys}
    if None in errors.values():  # only a key the principal may describe looks the coordinator up
        error = await _lookup(ctx, request.key_type)
        errors = {key: (_offline(ctx, request.key_type, key) if error == ErrorCode.NONE else error) if e is None else e
                  for key, e in errors.items()}  # fmt: skip
    return _answer(ctx, request, errors, False)


def _answer(ctx: RequestContext, request, errors: dict[str, ErrorCode], with_message: bool) -> object:
    """The v4+ answer: one ``Coordinator`` per key asked for, in order."""
    host, port = ctx.advertised
    node = ctx.broker.config.node_id
    resp = ctx.response()
    for key in request.coordinator_keys:
        error = errors[key]
        found = error == ErrorCode.NONE
        resp.coordinators.append(type(resp).Coordinator(
            key=key, node_id=node if found else -1, host=host if found else "", port=port if found else -1,
            error_code=error, error_message=_MESSAGES[error] if with_message else None,
        ))  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` with its message and no node (-1, "", -1): before v4 at the
    top, from v4 for every key asked."""
    message = _MESSAGES.get(error)
    if ctx.version < 4:
        return ctx.response(error_code=error, error_message=message, node_id=-1, host="", port=-1)
    resp = ctx.response()
    resp.coordinators = [type(resp).Coordinator(key=key, node_id=-1, host="", port=-1, error_code=error,
                                                error_message=message) for key in request.coordinator_keys]  # fmt: skip
    return resp
