"""ListConfigResources (key 74): v0-1, the resources that have configs (KIP-1000, KIP-1142).

Behaviour: v0 (ListClientMetricsResources) lists client-metrics resources
only, and this broker has none (KIP-714 client metrics are not served). v1
lists the ``resource_types`` asked for, every type it lists when none is
asked: TOPIC (2) every topic, internal ones too; BROKER_LOGGER (8) and BROKER
(4) this node's id; GROUP (32) the groups that have group configs
(``broker/group_configs.py``, existing groups or not), by name; CLIENT_METRICS
(16), of which there are none here. Any other type makes the
whole answer UNSUPPORTED_VERSION with no resources, as in Kafka.

Authorization (Kafka's ``KafkaApis``): DESCRIBE_CONFIGS on the cluster, checked
first; without it the whole answer is CLUSTER_AUTHORIZATION_FAILED with no
resources.

Version notes: v1 resource_types, and resource_type per entry.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 74
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_LISTED = (TOPIC, BROKER_LOGGER, BROKER, CLIENT_METRICS, GROUP)


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE)
    if not ctx.authorized_cluster(AclOperation.DESCRIBE_CONFIGS):
        resp.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return resp
    if ctx.version == 0:
        return resp  # client-metrics resources: none
    wanted = set(request.resource_types) or set(_LISTED)
    if not wanted <= set(_LISTED):
        resp.error_code = ErrorCode.UNSUPPORTED_VERSION
        return resp
    Resource = type(resp).ConfigResource
    node = str(ctx.broker.config.node_id)
    names = {TOPIC: sorted(ctx.broker.topics.topics()), BROKER_LOGGER: [node], BROKER: [node],
             GROUP: ctx.broker.group_configs.names()}  # fmt: skip
    for kind in _LISTED:
        if kind in wanted:
            resp.config_resources += [Resource(resource_name=n, resource_type=kind) for n in names.get(kind, [])]
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
