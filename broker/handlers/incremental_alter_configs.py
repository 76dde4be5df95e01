"""IncrementalAlterConfigs (key 44): v0-1, changing single topic config keys.

Behaviour: each config of a TOPIC resource carries an operation applied to
the topic's current overrides, in request order (Kafka's controller rules):

* SET (0): the key's override becomes ``value``;
* DELETE (1): the override is removed (the key falls back to its default);
* APPEND (2) / SUBTRACT (3): only for LIST-typed keys (``cleanup.policy``,
  the replication throttle lists), else INVALID_CONFIG "Can't APPEND to key
  ... because its type is not LIST."; the comma-separated items of ``value``
  are added (when missing) to, or removed from, the current list: the
  override, or when there is none the key's built-in default. ``value`` is
  split as Java splits it (Kafka's ``ConfigurationControlManager``): an empty
  item between commas is kept, and so refused with the new list.

For every resource type, first (Kafka's forwarding broker,
``ConfigAdminManager.preprocess``): a key named twice in one resource is
INVALID_REQUEST, then a null value in any operation but DELETE
INVALID_REQUEST "Null value not supported for : k1, k2" (a TOPIC's too). An
unknown operation id is INVALID_REQUEST. A BROKER_LOGGER resource (8) sets
or unsets the levels of the broker's loggers at runtime
(``_broker_loggers.py``). A BROKER resource (4: this ``node.id``, or empty
for the cluster-wide default) applies the operations to that level's dynamic
broker configs (``broker/dynamic_config.py``): APPEND/SUBTRACT work on
``log.cleanup.policy`` only (onto the level's value or Kafka's default, not
``server.properties``) and are INVALID_CONFIG "Config value append is not
allowed for config key: k" elsewhere (Kafka's ``prepareIncrementalConfigs``
throws InvalidConfigurationException before the validation whose failures
become INVALID_REQUEST). A GROUP resource (32, any group name)
applies SET and DELETE to the group's configs (``broker/group_configs.py``):
APPEND/SUBTRACT are INVALID_CONFIG "Can't APPEND to key k because its type
is not LIST." (no group config is a LIST). The resulting set of overrides is
then checked and stored exactly as AlterConfigs does (``_alter``);
``validate_only`` stores nothing.

Authorization: ALTER_CONFIGS, as ``_alter`` describes: a BROKER_LOGGER
resource after its duplicate keys and null values and before its node id and
loggers are checked (Kafka's ``RuntimeLoggerManager``),
CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed."; a BROKER
resource after its change is validated (CLUSTER_AUTHORIZATION_FAILED); a
TOPIC or a GROUP after its duplicate keys and null values, before anything
else about them (TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED).

Version notes: v1 flexible.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from . import _broker_loggers as loggers
from ._admin import (DEFAULT_CONFIG, LIST_TYPE, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC,
                     synonym_parts, type_id)  # fmt: skip
from ._alter import (OK, Outcome, Refused, alter_all, broker_level, check_allowed, check_target,
                     error_answer_of, null_values, store_broker_configs_if_allowed, store_group_configs,
                     store_overrides)  # fmt: skip

API_KEY = 44
error_answer(API_KEY, throttled=False)(error_answer_of)  # Kafka's getErrorResponse sets no throttle time
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
_BROKER_LISTS = {"log.cleanup.policy": "delete"}  # the LIST-typed dynamic broker keys and their defaults


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    async def change(resource) -> Outcome:
        _check_duplicates(resource.configs)  # for every resource type, as Kafka's forwarding broker does
        _check_nulls(resource.configs)
        if resource.resource_type == RESOURCE_BROKER_LOGGER:
            allowed = ctx.authorized_cluster(AclOperation.ALTER_CONFIGS)
            try:
                loggers.alter(ctx.broker.config.node_id, resource.resource_name, resource.configs,
                              request.validate_only, allowed)  # fmt: skip
            except loggers.LoggerError as exc:
                return exc.error_code, str(exc)
            return OK
        if resource.resource_type == RESOURCE_BROKER:
            check_target(ctx, resource)
            _check_ops(resource.configs)
            return await store_broker_configs_if_allowed(ctx, broker_level(resource),
                                                         lambda current: _apply_broker(current, resource.configs),
                                                         request.validate_only)  # fmt: skip
        if resource.resource_type in (RESOURCE_TOPIC, RESOURCE_GROUP):
            check_allowed(ctx, resource)
        check_target(ctx, resource)
        _check_ops(resource.configs)
        if resource.resource_type == RESOURCE_GROUP:
            _apply_group({}, resource.configs)  # an APPEND or SUBTRACT is refused before the group name is checked
            return await store_group_configs(ctx, resource.resource_name,
                                             lambda current: _apply_group(current, resource.configs),
                                             request.validate_only)  # fmt: skip
        return await store_overrides(ctx, resource.resource_name,
                                     lambda current: _apply(ctx, current, resource.configs),
                                     request.validate_only)  # fmt: skip

    return await alter_all(ctx, request, change)


def _check_duplicates(configs: list[Any]) -> None:
    names = [c.name for c in configs]
    if len(set(names)) != len(names):  # Kafka 4's broker names no key (ConfigAdminManager.preprocess)
        raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")


def _check_ops(configs: list[Any]) -> None:
    for c in configs:
        if c.config_operation not in _OP_NAMES:
            raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown alter configs operation type {c.config_operation}")


def _check_nulls(configs: list[Any]) -> None:
    null_values([c.name for c in configs if c.config_operation != DELETE and c.value is None])


def _apply(ctx: RequestContext, current: dict[str, str], configs: list[Any]) -> dict[str, str]:
    """A topic's ``current`` overrides after the operations (list types and defaults from the broker's
    config model)."""
    overrides = dict(current)
    entries = None
    for c in configs:
        if c.config_operation == SET:
            overrides[c.name] = c.value
        elif c.config_operation == DELETE:
            overrides.pop(c.name, None)
        else:
            if entries is None:
                entries = {e.name: e for e in ctx.broker.topics.manager.describe_overrides({})}  # types, defaults
            overrides[c.name] = _list_op(c, overrides.get(c.name), entries.get(c.name))
    return overrides


def _apply_ops(current: dict[str, str], configs: list[Any], list_op) -> dict[str, str]:
    """``current`` after the operations: SET and DELETE, and APPEND / SUBTRACT through ``list_op``."""
    props = dict(current)
    for c in configs:
        if c.config_operation == SET:
            props[c.name] = c.value
        elif c.config_operation == DELETE:
            props.pop(c.name, None)
        else:
            props[c.name] = list_op(c, props)
    return props


def _apply_broker(current: dict[str, str], configs: list[Any]) -> dict[str, str]:
    """A broker level's dynamic configs after the operations (Kafka's prepareIncrementalConfigs)."""
    return _apply_ops(current, configs, _broker_list_op)


def _broker_list_op(c: Any, props: dict[str, str]) -> str:
    if c.name not in _BROKER_LISTS:
        op = _OP_NAMES[c.config_operation].lower()
        raise Refused(ErrorCode.INVALID_CONFIG, f"Config value {op} is not allowed for config key: {c.name}")
    items = (props.get(c.name) or _BROKER_LISTS[c.name]).split(",")  # as Kafka: this level's, else built-in
    changes = c.value.split(",")
    if c.config_operation == APPEND:
        return ",".join(items + [item for item in changes if item not in items])
    return ",".join(item for item in items if item not in changes)


def _apply_group(current: dict[str, str], configs: list[Any]) -> dict[str, str]:
    """A group's configs after SET and DELETE; APPEND and SUBTRACT are refused, no group config being a LIST."""
    return _apply_ops(current, configs, _group_list_op)


def _group_list_op(c: Any, props: dict[str, str]) -> str:
    op = _OP_NAMES[c.config_operation]
    raise Refused(ErrorCode.INVALID_CONFIG, f"Can't {op} to key {c.name} because its type is not LIST.")


def _list_op(c: Any, current: str | None, entry: Any) -> str:
    """APPEND or SUBTRACT ``c.value`` on a LIST key's current value."""
    op = _OP_NAMES[c.config_operation]
    if entry is None or type_id(entry.type) != LIST_TYPE:
        raise Refused(ErrorCode.INVALID_CONFIG, f"Can't {op} to key {c.name} because its type is not LIST.")
    if current is None:
        current = _default_of(entry)
    items = [item for item in (current or "").split(",") if item]
    changes = _java_split(c.value or "")
    if c.config_operation == APPEND:
        items += [item for item in dict.fromkeys(changes) if item not in items]
    else:
        items = [item for item in items if item not in changes]
    return ",".join(items)


def _java_split(text: str) -> list[str]:
    """``text.split(",")`` as Java splits it (Kafka's controller splits APPEND/SUBTRACT values so): empty
    items kept but the trailing ones."""
    if "," not in text:
        return [text]  # Java: no match, the whole text ("" too)
    items = text.split(",")
    while items and not items[-1]:
        items.pop()
    return items


def _default_of(entry: Any) -> str | None:
    """The key's built-in default (Kafka's controller appends to that, not to broker overrides)."""
    for synonym in entry.synonyms:
        _name, value, source = synonym_parts(synonym)
        if source == DEFAULT_CONFIG:
            return value
    return entry.value
