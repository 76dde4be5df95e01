"""DescribeConfigs (key 32): v0-4, topic, broker and group configs with their sources.

Behaviour, per resource (Kafka's ``ConfigHelper``):

* TOPIC (2): an illegal name is INVALID_TOPIC_EXCEPTION, an unknown topic
  UNKNOWN_TOPIC_OR_PARTITION with no configs; otherwise every topic config
  from the storage layer's ``describe_config``: its effective value, source
  (1 topic override, 2/3 dynamic broker config of this node / of the cluster,
  4 ``server.properties``, 5 default) and synonyms, the
  chain of places the value could come from, most specific first, as Kafka's
  ``ConfigHelper`` lists them (``_config_synonyms.py``: with only
  ``log.retention.hours`` set, ``retention.ms`` has none and is DEFAULT_CONFIG).
* BROKER (4): the resource name must be this ``node.id`` (every broker key,
  ``broker_configs``, with dynamic values and sources) or empty (the
  cluster-wide dynamic defaults only, ``default_configs``); anything else is
  INVALID_REQUEST with Kafka's message. Keys Kafka cannot change at runtime
  are read-only.
* BROKER_LOGGER (8): the broker's loggers and their levels
  (``_broker_loggers.py``), for this ``node.id`` only;
* CLIENT_METRICS (16): a subscription's configs, none for every name as
  KIP-714 client metrics are not served (Kafka's answer for a subscription
  that does not exist); an empty name is INVALID_REQUEST "Client metrics
  subscription name must not be empty";
* GROUP (32): the group configs of any group, existing or not
  (``broker/group_configs.py``), each with source DYNAMIC_GROUP_CONFIG (8)
  or DEFAULT_CONFIG (5) and itself as its one synonym; an empty name is
  INVALID_REQUEST "Group name must not be empty";
* any other type: INVALID_REQUEST "Unsupported resource type".

``configuration_keys`` null or empty means every key, else only those named.
Synonyms are sent only when ``include_synonyms`` (v1+) is set, documentation
only when ``include_documentation`` (v3+) is set.

Authorization (Kafka's ``ConfigHelper``), per resource and before any other
check: DESCRIBE_CONFIGS on the topic for TOPIC (else TOPIC_AUTHORIZATION_FAILED),
on the group for GROUP (GROUP_AUTHORIZATION_FAILED), on the cluster for
BROKER, BROKER_LOGGER and CLIENT_METRICS (CLUSTER_AUTHORIZATION_FAILED); a
denied resource is answered with that error, its default message ("Topic
authorization failed.", ...) and no configs, after the allowed ones, as
Kafka lists them. ALTER_CONFIGS implies DESCRIBE_CONFIGS.

Version notes: v0 has ``is_default`` instead of ``config_source``: true
exactly when the source is DEFAULT_CONFIG (how Kafka's broker filled it); v1
config_source, synonyms and include_synonyms; v2 answers before throttling;
v3 config_type, documentation; v4 flexible.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ..topics import TopicError, check_topic_name
from . import _broker_loggers as loggers
from ._admin import (
    DEFAULT_CONFIG,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    broker_resource_error,
    source_id,
    synonym_parts,
    type_id,
)
from ._admin_authz import DEFAULT_MESSAGES, RESOURCE_CLIENT_METRICS, config_refusal
from ._broker_configs import broker_configs, default_configs
from ._config_synonyms import topic_entries

API_KEY = 32


@handler(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Result = type(resp).DescribeConfigsResult
    denied = []
    for resource in request.resources:
        result = Result(resource_type=resource.resource_type, resource_name=resource.resource_name)
        refusal = config_refusal(ctx, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name)
        if refusal is not None:
            result.error_code, result.error_message = refusal
            denied.append(result)
            continue
        try:
            entries = _entries(ctx, resource)
        except TopicError as exc:
            result.error_code, result.error_message = exc.error_code, str(exc)
        else:
            result.error_message = None
            if entries is None:
                result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                keys = resource.configuration_keys
                wanted = [e for e in entries if not keys or e.name in keys]
                result.configs = [_entry(ctx, request, Result, e) for e in wanted]
        resp.results.append(result)
    resp.results += denied
    return resp


def _entries(ctx: RequestContext, resource) -> list | None:
    """The config entries of a resource; None for an unknown topic; raises TopicError."""
    if resource.resource_type == RESOURCE_TOPIC:
        check_topic_name(resource.resource_name)
        if ctx.broker.topics.get(resource.resource_name) is None:
            return None
        return topic_entries(ctx.broker, list(ctx.broker.topics.describe_config(resource.resource_name)))
    if resource.resource_type == RESOURCE_BROKER:
        message = broker_resource_error(ctx.broker.config.node_id, resource.resource_name)
        if message:
            raise TopicError(ErrorCode.INVALID_REQUEST, message)
        if not resource.resource_name:
            return default_configs(ctx.broker)  # the cluster-wide dynamic defaults
        return broker_configs(ctx.broker)
    if resource.resource_type == RESOURCE_BROKER_LOGGER:
        try:
            return loggers.describe_entries(ctx.broker.config.node_id, resource.resource_name)
        except loggers.LoggerError as exc:
            raise TopicError(exc.error_code, str(exc)) from None
    if resource.resource_type == RESOURCE_CLIENT_METRICS:  # no subscription can exist: none are served
        if not resource.resource_name:
            raise TopicError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        return []
    if resource.resource_type == RESOURCE_GROUP:
        if not resource.resource_name:
            raise TopicError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        return ctx.broker.group_configs.describe(resource.resource_name)
    raise TopicError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource.resource_type}")


def _entry(ctx: RequestContext, request, Result: type, e: Any) -> Any:
    Entry = Result.DescribeConfigsResourceResult
    source = source_id(e.source)
    out = Entry(
        name=e.name, value=None if e.sensitive else e.value, read_only=e.read_only,
        config_source=source, is_default=source == DEFAULT_CONFIG, is_sensitive=e.sensitive,
    )  # fmt: skip
    if ctx.version >= 1 and request.include_synonyms:
        Synonym = Entry.DescribeConfigsSynonym
        for synonym in e.synonyms:
            name, value, synonym_source = synonym_parts(synonym)
            out.synonyms.append(Synonym(name=name, value=None if e.sensitive else value, source=synonym_source))
    if ctx.version >= 3:
        out.config_type = type_id(e.type)
        out.documentation = e.doc if request.include_documentation else None
    return out


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` and its default message for every resource, no configs."""
    resp = ctx.response()
    Result = type(resp).DescribeConfigsResult
    resp.results = [Result(error_code=error, error_message=DEFAULT_MESSAGES.get(error), resource_type=r.resource_type,
                           resource_name=r.resource_name) for r in request.resources]  # fmt: skip
    return resp
