"""What AlterConfigs and IncrementalAlterConfigs share: targets, checks, applying.

Both APIs end in the same step: a topic's complete new set of overrides is
checked and (unless ``validate_only``) stored with ``TopicRegistry.set_overrides``,
after which the registry forgets the topic's cached partitions so produce and
fetch see the new effective config; for a BROKER resource, the level's
complete new set of dynamic broker configs (``store_broker_configs``); for a
GROUP resource, the group's complete new set of group configs
(``store_group_configs``, ``broker/group_configs.py``). The checks, in
Kafka's order:

1. the same resource twice in one request: INVALID_REQUEST "Each resource
   must appear at most once." for every copy, in the request's order
   (``ConfigAdminManager.preprocess``);
2. the resource's keys, for every resource type and so before any
   authorization, as Kafka's forwarding broker checks them before it forwards
   the request (``ConfigAdminManager.preprocess``): a key named twice is
   INVALID_REQUEST "Error due to duplicate config keys", then null values (in IncrementalAlterConfigs, those of
   operations other than DELETE) INVALID_REQUEST "Null value not supported
   for : k1, k2" (``null_values``);
3. the resource: a TOPIC with an empty name is INVALID_REQUEST ("Default
   topic resources are not allowed."), an illegal name INVALID_TOPIC_EXCEPTION;
   a BROKER must be this node or
   empty (the cluster-wide default); its change is a dynamic broker config
   change (``broker/dynamic_config.py``: every refusal there is
   INVALID_REQUEST); a GROUP is any group, existing or not, checked
   after its operations as Kafka's controller does: an empty name is
   INVALID_REQUEST "Default group resources are not allowed.", and every
   refusal of ``group_configs.check`` INVALID_CONFIG; other resource types
   are INVALID_REQUEST "Unknown resource type N" (IncrementalAlterConfigs
   handles BROKER_LOGGER first);
4. the new overrides: values the storage layer refuses are INVALID_CONFIG,
   with the message naming the key; only then an unknown topic is
   UNKNOWN_TOPIC_OR_PARTITION, as Kafka's controller validates the configs
   before it checks that the resource exists
   (``ConfigurationControlManager.validateAlterConfig``); IncrementalAlterConfigs'
   APPEND/SUBTRACT on a non-LIST key is refused before both, as there.

Authorization (Kafka's ``ControllerApis.authorizeAlterResource``): ALTER_CONFIGS
on the topic, the group, or the cluster (BROKER); a denial is
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED or
CLUSTER_AUTHORIZATION_FAILED with the error's default message. Kafka's
forwarding broker checks a request's shape (and validates a BROKER change)
before its controller authorizes it, and the controller authorizes before it
checks the topic or group: ``check_allowed`` is that step, and
``store_broker_configs_if_allowed`` validates a BROKER change before it.

``Outcome`` is an (error code, message) pair; ``OK`` is success.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Awaitable, Callable

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext
from ..topics import TopicError, check_topic_name
from ..store_saves import NotStored
from ..group_configs import InvalidGroupConfig
from ._admin import RESOURCE_BROKER, RESOURCE_GROUP, RESOURCE_TOPIC, broker_resource_error
from ._admin_authz import config_refusal

Outcome = tuple[ErrorCode, str | None]
OK: Outcome = (ErrorCode.NONE, None)


class Refused(Exception):
    def __init__(self, error_code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.outcome: Outcome = (error_code, message)


async def alter_all(ctx: RequestContext, request, change: Callable[[Any], Awaitable[Outcome]]) -> object:
    """Answer every resource of an alter request; ``change`` handles one resource."""
    resp = ctx.response()
    Result = type(resp).AlterConfigsResourceResponse
    keys = Counter((r.resource_type, r.resource_name) for r in request.resources)
    for resource in request.resources:
        key = (resource.resource_type, resource.resource_name)
        if keys[key] > 1:  # Kafka's ConfigAdminManager.preprocess answers every copy
            code, message = ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
        else:
            try:
                code, message = await change(resource)
            except Refused as exc:
                code, message = exc.outcome
        resp.responses.append(
            Result(error_code=code, error_message=message, resource_type=key[0], resource_name=key[1])
        )
    return resp


def error_answer_of(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse`` of both APIs: ``error`` for every resource of the request, no message."""
    resp = ctx.response()
    Result = type(resp).AlterConfigsResourceResponse
    resp.responses = [Result(error_code=error, error_message=None, resource_type=r.resource_type,
                             resource_name=r.resource_name) for r in request.resources]  # fmt: skip
    return resp


def check_target(ctx: RequestContext, resource) -> None:
    """Raise ``Refused`` unless the resource is a legal topic name or this broker (or the cluster default);
    whether the topic exists is checked after its new configs (``store_overrides``)."""
    if resource.resource_type == RESOURCE_TOPIC:
        name = resource.resource_name
        if not name:
            raise Refused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        try:
            check_topic_name(name)
        except TopicError as exc:
            raise Refused(exc.error_code, str(exc)) from None
        return
    if resource.resource_type == RESOURCE_BROKER:
        message = broker_resource_error(ctx.broker.config.node_id, resource.resource_name)
        if message:
            raise Refused(ErrorCode.INVALID_REQUEST, message)
        return
    if resource.resource_type == RESOURCE_GROUP:
        return  # any group; its name is checked with the new configs (store_group_configs)
    raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


def check_allowed(ctx: RequestContext, resource) -> None:
    """Raise ``Refused`` unless the principal may ALTER_CONFIGS the resource."""
    refusal = config_refusal(ctx, AclOperation.ALTER_CONFIGS, resource.resource_type, resource.resource_name)
    if refusal is not None:
        raise Refused(*refusal)


async def store_broker_configs_if_allowed(ctx: RequestContext, level: str,
                                          change: Callable[[dict[str, str]], dict[str, str]],
                                          validate_only: bool) -> Outcome:  # fmt: skip
    """``store_broker_configs`` for a principal allowed to ALTER_CONFIGS the cluster; for another, the
    change is validated (its refusal comes first, as the broker's before its controller's) and denied."""
    refusal = config_refusal(ctx, AclOperation.ALTER_CONFIGS, RESOURCE_BROKER, level)
    outcome = await store_broker_configs(ctx, level, change, validate_only or refusal is not None)
    return refusal if refusal is not None and outcome == OK else outcome


def broker_level(resource) -> str:
    """The dynamic config level a checked BROKER resource names: ``""`` (cluster default) or our node id."""
    return str(int(resource.resource_name)) if resource.resource_name else ""


def null_values(names: list[str]) -> None:
    """Kafka's broker-side refusal of null values, for every resource type (``ConfigAdminManager.preprocess``)."""
    if names:
        raise Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(names))


async def store_broker_configs(ctx: RequestContext, level: str, change: Callable[[dict[str, str]], dict[str, str]],
                               validate_only: bool) -> Outcome:  # fmt: skip
    """Make ``change(current)`` the complete dynamic configs of ``level`` (``dynamic_config``), unless
    validate_only."""
    from ..dynamic_config import Refused as DynamicRefused

    try:
        await ctx.broker.dynamic_config.apply(level, change, validate_only)
    except DynamicRefused as exc:
        return ErrorCode.INVALID_REQUEST, str(exc)
    except NotStored as exc:
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    return OK


async def store_group_configs(ctx: RequestContext, group: str, change: Callable[[dict[str, str]], dict[str, str]],
                              validate_only: bool) -> Outcome:  # fmt: skip
    """Check a group's complete new configs, ``change(current)``, as Kafka's controller does and, unless
    validate_only, store them."""
    if not group:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    try:
        await ctx.broker.group_configs.replace(group, change, validate_only)
    except InvalidGroupConfig as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    except NotStored as exc:
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    return OK


def current_overrides(ctx: RequestContext, topic: str) -> dict[str, str]:
    """The topic's overrides; none for a missing topic (whose new configs are still checked first)."""
    meta = ctx.broker.topics.topics().get(topic)
    return {} if meta is None else dict(meta.overrides)


async def store_overrides(ctx: RequestContext, topic: str, change: Callable[[dict[str, str]], dict[str, str]],
                          validate_only: bool) -> Outcome:  # fmt: skip
    """Work out the topic's complete new overrides, ``change(current)``, check them (no null values:
    ``null_values`` refused those), then that the topic exists, as Kafka's
    ``ConfigurationControlManager.validateAlterConfig`` orders them, and, unless validate_only, store
    them. All under ``TopicRegistry.changes``: a change starts from what the one before it left, as
    Kafka's controller runs one write event at a time (the save waits for the disk on a thread)."""
    from storage import ConfigError, StorageError

    topics = ctx.broker.topics
    try:
        async with topics.changes:
            current = current_overrides(ctx, topic)
            overrides = change(current)
            validate_overrides(ctx, overrides)
            if topics.get(topic) is None:
                return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
            if not validate_only and overrides != current:  # Kafka: a ConfigRecord only for a value that changes
                await topics.set_overrides(topic, overrides)
    except ConfigError as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    except TopicError as exc:  # deleted while the change waited for its turn
        return exc.error_code, str(exc)
    except StorageError as exc:  # not saved: the topic keeps its configs (MetadataDirFailed is none: not answered)
        return ErrorCode.KAFKA_STORAGE_ERROR, str(exc)
    return OK


def validate_overrides(ctx: RequestContext, overrides: dict[str, str]) -> None:
    """Raise the storage layer's ``ConfigError`` if these overrides are not valid."""
    ctx.broker.topics.manager.validate_overrides(overrides)
