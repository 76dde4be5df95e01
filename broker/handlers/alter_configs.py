"""AlterConfigs (key 33): v0-2, replacing all of a topic's config overrides.

Behaviour: the legacy, non-incremental API. For a TOPIC resource the given
``configs`` become the topic's complete set of overrides: every key not
listed goes back to its broker-level or built-in default. The new set is
checked as a whole (null values and values the storage layer refuses give
INVALID_CONFIG with the key named in ``error_message``); ``validate_only``
checks without storing. Resource checks (unknown topic, bad names, broker
resources, duplicates) are in ``_alter``: this broker keeps no dynamic broker
configs, so altering a BROKER resource is INVALID_REQUEST.

Version notes: v1 answers before throttling; v2 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler
from ._admin import RESOURCE_TOPIC
from ._alter import OK, Outcome, alter_all, check_target, store_overrides

API_KEY = 33


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    def change(resource) -> Outcome:
        check_target(ctx, resource)
        if resource.resource_type != RESOURCE_TOPIC:
            return OK
        overrides = {c.name: c.value for c in resource.configs}
        return store_overrides(ctx, resource.resource_name, overrides, request.validate_only)

    return alter_all(ctx, request, change)
