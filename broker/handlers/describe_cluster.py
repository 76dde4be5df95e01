"""DescribeCluster (key 60): v0-2, the one-node cluster as the Admin client sees it.

Behaviour: this broker (``node.id``, advertised host and port, ``broker.rack``) is
the only broker; the cluster id is the storage layer's; the controller id is
this node (a broker endpoint reports some live broker there, and there is
only one). With ``include_cluster_authorized_operations`` the answer carries
the operations on the CLUSTER resource the principal is allowed, as the bit
field Kafka sends (every one it supports without an authorizer), or 0 when it
may not DESCRIBE the cluster (Kafka's ``computeDescribeClusterResponse``;
that check is made, and a denial logged, only when the field is asked for);
otherwise INT32_MIN. Nothing else is authorized: any principal may describe
the cluster.

Version notes: v1 ``endpoint_type``: 1 (brokers) is what a broker serves; 2
(controllers) gets MISMATCHED_ENDPOINT_TYPE with Kafka's message. v2
(KIP-1073) ``include_fenced_brokers`` asks for fenced brokers too, each
broker carrying ``is_fenced``: this broker, registered with itself as
controller, is never fenced, so the answer is the same either way and its
``is_fenced`` false.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ._admin import NO_OPERATIONS

API_KEY = 60
ENDPOINT_BROKERS = 1
_ENDPOINT_NAMES = {1: "BROKER", 2: "CONTROLLER"}



@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    broker = ctx.broker
    if ctx.version >= 1 and request.endpoint_type != ENDPOINT_BROKERS:
        wanted = _ENDPOINT_NAMES.get(request.endpoint_type, "UNKNOWN")
        return ctx.response(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message=f"The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type {wanted}",
        )
    resp = ctx.response(cluster_id=broker.cluster_id, controller_id=broker.config.node_id)
    host, port = ctx.advertised
    resp.brokers.append(type(resp).DescribeClusterBroker(broker_id=broker.config.node_id, host=host, port=port,
                                                         rack=broker.config.broker_rack, is_fenced=False))
    resp.endpoint_type = ENDPOINT_BROKERS
    if not request.include_cluster_authorized_operations:
        resp.cluster_authorized_operations = NO_OPERATIONS
    elif ctx.authorized_cluster(AclOperation.DESCRIBE):
        resp.cluster_authorized_operations = ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
    else:
        resp.cluster_authorized_operations = 0
    return resp


@error_answer(API_KEY, throttled=False)  # Kafka's getErrorResponse sets no throttle time
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top, no message, no cluster id or brokers."""
    return ctx.response(error_code=error, error_message=None)
