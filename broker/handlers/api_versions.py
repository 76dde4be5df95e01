"""ApiVersions (key 18): v0-4, built from the handler registry.

Behaviour: lists every API a handler serves with the versions enabled now
(``legacy.protocol.versions.enable=false`` raises the minimum of the APIs
whose old versions Kafka 4.0 removed, ``dispatch.KAFKA_4_LOWEST``; like Kafka
4.0 we keep advertising Produce from v0 then, since librdkafka picks its
compression support from that minimum).
v3+ requests carry ``client_software_name``/``version``, which must match
Kafka's pattern or the answer is INVALID_REQUEST. A too-high version never
reaches this handler: dispatch answers it in v0 form.

Version notes: v1 adds throttle_time_ms; v3 is flexible and adds the client
software fields, and the answer carries the feature tables (``broker.features``,
KIP-584) as tagged fields; v4 is identical to v3 on the wire, and may list a
supported feature whose lowest level is 0. ConsumerGroupHeartbeat and
ConsumerGroupDescribe are left out when ``group.coordinator.rebalance.protocols``
lacks ``consumer``, as Kafka leaves them out.
"""

from __future__ import annotations

import re

from protocol import ErrorCode

from .. import features
from ..dispatch import REGISTRY, RequestContext, enabled_range, error_answer, handler
from . import consumer_group_describe, consumer_group_heartbeat
from ._error_answers import top_level

API_KEY = 18
CONSUMER_GROUP_APIS = (consumer_group_heartbeat.API_KEY, consumer_group_describe.API_KEY)  # KIP-848
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _advertised(ctx: RequestContext) -> list:
    cls = ctx.response().__class__.ApiVersion
    keys = []
    consumer_protocol = consumer_group_heartbeat.consumer_protocol_enabled(ctx)
    for key in sorted(REGISTRY):
        if key in CONSUMER_GROUP_APIS and not consumer_protocol:
            continue  # as Kafka: off unless group.coordinator.rebalance.protocols has consumer
        low, high = enabled_range(ctx.broker, REGISTRY[key])
        if key == 0:  # KAFKA-18659: Produce stays advertised from v0
            low = REGISTRY[key].min_version
        keys.append(cls(api_key=key, min_version=low, max_version=high))
    return keys


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    if ctx.version >= 3:
        name, version = request.client_software_name, request.client_software_version
        if not (_SOFTWARE.fullmatch(name or "") and _SOFTWARE.fullmatch(version or "")):
            return ctx.response(error_code=ErrorCode.INVALID_REQUEST)
        ctx.connection.client_software = (name, version)
        return _with_features(ctx, ctx.response(error_code=ErrorCode.NONE, api_keys=_advertised(ctx)))
    return ctx.response(error_code=ErrorCode.NONE, api_keys=_advertised(ctx))


def _with_features(ctx: RequestContext, resp):
    cls = type(resp)
    resp.supported_features = [cls.SupportedFeatureKey(name=name, min_version=low, max_version=high)
                               for name, low, high in features.supported(ctx.version)]  # fmt: skip
    resp.finalized_features = [cls.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
                               for name, level in features.finalized()]  # fmt: skip
    resp.finalized_features_epoch = ctx.broker.quorum.last_offset  # the metadata image's offset, as KRaft
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error``, no API listed
