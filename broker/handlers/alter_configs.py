"""AlterConfigs (key 33): v0-2, replacing all of a topic's config overrides.

Behaviour: the legacy, non-incremental API. For every resource type, first
(Kafka's forwarding broker, ``ConfigAdminManager.preprocess``): a key named
twice is INVALID_REQUEST "Error due to duplicate config keys", then a null
value INVALID_REQUEST "Null value not supported for : k1, k2". For a TOPIC
resource the given ``configs`` become the topic's complete set of overrides:
every key not listed goes back to its broker-level or built-in default. The
new set is checked as a whole (values the storage layer refuses give
INVALID_CONFIG with the key named in ``error_message``); ``validate_only``
checks without storing. For a BROKER resource (this ``node.id``, or empty for
the cluster-wide default) the given configs become that level's complete set
of dynamic broker configs (``broker/dynamic_config.py``). For a GROUP
resource (any group name) the given configs become the group's complete set
of group configs (``broker/group_configs.py``), as Kafka 4.x's controller
takes them from this legacy API too. Resource checks (unknown topic, bad
names, broker ids, duplicates) are in ``_alter``.

Authorization: ALTER_CONFIGS, as ``_alter`` describes: for TOPIC and GROUP
after the duplicate keys and null values and before the resource is checked
(TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED), for BROKER after
the change is validated (CLUSTER_AUTHORIZATION_FAILED). Unknown resource
types are INVALID_REQUEST after the duplicate keys and null values, before
any other check.

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, error_answer, handler
from ._admin import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC
from ._alter import (OK, Outcome, Refused, alter_all, broker_level, check_allowed, check_target, error_answer_of,
                     null_values, store_broker_configs_if_allowed, store_group_configs, store_overrides)  # fmt: skip

API_KEY = 33
error_answer(API_KEY)(error_answer_of)  # the throttle time set, as Kafka's getErrorResponse sets it


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    async def change(resource) -> Outcome:
        configs = {c.name: c.value for c in resource.configs}
        if len(configs) < len(resource.configs):
            raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        null_values([name for name, value in configs.items() if value is None])
        if resource.resource_type == RESOURCE_BROKER:
            check_target(ctx, resource)
            return await store_broker_configs_if_allowed(ctx, broker_level(resource), lambda _current: configs,
                                                         request.validate_only)  # fmt: skip
        if resource.resource_type == RESOURCE_GROUP:
            check_allowed(ctx, resource)
            return await store_group_configs(ctx, resource.resource_name, lambda _current: configs,
                                             request.validate_only)  # fmt: skip
        if resource.resource_type == RESOURCE_TOPIC:
            check_allowed(ctx, resource)
        check_target(ctx, resource)
        if resource.resource_type != RESOURCE_TOPIC:
            return OK
        return await store_overrides(ctx, resource.resource_name, lambda _current: configs, request.validate_only)

    return await alter_all(ctx, request, change)
