"""IncrementalAlterConfigs (key 44): v0-1, changing single topic config keys.

Behaviour: each config of a TOPIC resource carries an operation applied to
the topic's current overrides, in request order (Kafka's controller rules):

* SET (0): the key's override becomes ``value``;
* DELETE (1): the override is removed (the key falls back to its default);
* APPEND (2) / SUBTRACT (3): only for LIST-typed keys (``cleanup.policy``,
  the replication throttle lists), else INVALID_CONFIG "Can't APPEND to key
  ... because its type is not LIST."; the comma-separated items of ``value``
  are added (when missing) to, or removed from, the current list: the
  override, or when there is none the key's built-in default.

A key named twice in one resource is INVALID_REQUEST, an unknown operation
id INVALID_REQUEST. A BROKER_LOGGER resource (8) sets or unsets the levels
of the broker's loggers at runtime (``_broker_loggers.py``). The resulting set of overrides is then checked and stored
exactly as AlterConfigs does (``_alter``); ``validate_only`` stores nothing.

Version notes: v1 flexible.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..dispatch import RequestContext, handler
from . import _broker_loggers as loggers
from ._admin import DEFAULT_CONFIG, LIST_TYPE, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC, synonym_parts, type_id
from ._alter import OK, Outcome, Refused, alter_all, check_target, current_overrides, store_overrides

API_KEY = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    def change(resource) -> Outcome:
        if resource.resource_type == RESOURCE_BROKER_LOGGER:
            _check_duplicates(resource.configs)
            try:
                loggers.alter(ctx.broker.config.node_id, resource.resource_name, resource.configs,
                              request.validate_only)  # fmt: skip
            except loggers.LoggerError as exc:
                return exc.error_code, str(exc)
            return OK
        check_target(ctx, resource)
        if resource.resource_type != RESOURCE_TOPIC:
            return OK
        _check_ops(resource.configs)
        overrides = _apply(ctx, resource.resource_name, resource.configs)
        return store_overrides(ctx, resource.resource_name, overrides, request.validate_only)

    return alter_all(ctx, request, change)


def _check_duplicates(configs: list[Any]) -> None:
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys: " + ",".join(duplicates))


def _check_ops(configs: list[Any]) -> None:
    _check_duplicates(configs)
    for c in configs:
        if c.config_operation not in _OP_NAMES:
            raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown alter configs operation type {c.config_operation}")


def _apply(ctx: RequestContext, topic: str, configs: list[Any]) -> dict[str, str | None]:
    overrides: dict[str, str | None] = dict(current_overrides(ctx, topic))
    entries = None
    for c in configs:
        if c.config_operation == SET:
            overrides[c.name] = c.value
        elif c.config_operation == DELETE:
            overrides.pop(c.name, None)
        else:
            if entries is None:
                entries = {e.name: e for e in ctx.broker.topics.describe_config(topic)}
            overrides[c.name] = _list_op(c, overrides.get(c.name), entries.get(c.name))
    return overrides


def _list_op(c: Any, current: str | None, entry: Any) -> str:
    """APPEND or SUBTRACT ``c.value`` on a LIST key's current value."""
    op = _OP_NAMES[c.config_operation]
    if entry is None or type_id(entry.type) != LIST_TYPE:
        raise Refused(ErrorCode.INVALID_CONFIG, f"Can't {op} to key {c.name} because its type is not LIST.")
    if current is None:
        current = _default_of(entry)
    items = [item for item in (current or "").split(",") if item]
    changes = [item for item in (c.value or "").split(",") if item]
    if c.config_operation == APPEND:
        items += [item for item in dict.fromkeys(changes) if item not in items]
    else:
        items = [item for item in items if item not in changes]
    return ",".join(items)


def _default_of(entry: Any) -> str | None:
    """The key's built-in default (Kafka's controller appends to that, not to broker overrides)."""
    for synonym in entry.synonyms:
        _name, value, source = synonym_parts(synonym)
        if source == DEFAULT_CONFIG:
            return value
    return entry.value
