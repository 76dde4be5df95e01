"""ConsumerGroupHeartbeat (key 68): v0-1, the KIP-848 consumer rebalance protocol.

Behaviour: ``broker.groups.consumer_coordinator`` (join with epoch 0,
heartbeat, leave with -1 or -2, reconciliation, timers); the answer is sent
once a changed group epoch is stored in ``__consumer_offsets``. Errors carry
Kafka's message (INVALID_REQUEST for missing fields, UNSUPPORTED_ASSIGNOR,
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND,
INVALID_REGULAR_EXPRESSION).

Checks in Kafka's order (``KafkaApis.handleConsumerGroupHeartbeatRequest``,
``GroupCoordinatorService.consumerGroupHeartbeat``):

1. without ``consumer`` in ``group.coordinator.rebalance.protocols`` the
   API is not advertised and answers UNSUPPORTED_VERSION;
2. READ on the GROUP, else GROUP_AUTHORIZATION_FAILED;
3. DESCRIBE on every subscribed topic named, else TOPIC_AUTHORIZATION_FAILED
   (no message, as Kafka); a regex resolves only to topics the member may
   describe;
4. COORDINATOR_NOT_AVAILABLE while ``__consumer_offsets`` is being created;
5. the request's fields (``consumer_requests.validate``), then the group.

Version notes: v1 adds ``subscribed_topic_regex`` and requires a member id
from the client.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..groups.consumer_group import CONSUMER
from ..groups.consumer_member import as_owned
from ..groups.consumer_requests import GroupError, Heartbeat, validate
from .join_group import client_host

API_KEY = 68


def consumer_protocol_enabled(ctx: RequestContext) -> bool:
    return CONSUMER in ctx.broker.config.group_coordinator_rebalance_protocols


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    if not consumer_protocol_enabled(ctx):
        return ctx.response(error_code=ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorized(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ctx.response(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = set(request.subscribed_topic_names or ())
    if any(not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, name) for name in sorted(names)):
        return ctx.response(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if not ctx.broker.groups.store.ensure_topic():
        return ctx.response(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    owned = request.topic_partitions
    hb = Heartbeat(
        request.group_id, request.member_id, request.member_epoch, request.instance_id, request.rack_id,
        request.rebalance_timeout_ms, request.subscribed_topic_names, request.subscribed_topic_regex,
        request.server_assignor, None if owned is None else [(t.topic_id, list(t.partitions)) for t in owned],
        ctx.request.header.client_id or "", client_host(ctx), ctx.version,
    )  # fmt: skip

    def may_describe(topic: str) -> bool:
        return ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic, log_denied=False)

    try:
        validate(hb, ctx.broker.config.group_consumer_assignors)
        result = await ctx.broker.groups.consumer_heartbeat(hb, may_describe)
    except GroupError as exc:
        return ctx.response(error_code=exc.code, error_message=exc.message)
    resp = ctx.response(member_id=result.member_id, member_epoch=result.member_epoch,
                        heartbeat_interval_ms=result.heartbeat_interval_ms)  # fmt: skip
    if result.assignment is not None:
        cls = type(resp).Assignment
        resp.assignment = cls(topic_partitions=[cls.TopicPartitions(topic_id=t, partitions=ps)
                                                for t, ps in as_owned(result.assignment)])  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` alone, no message."""
    return ctx.response(error_code=error)
