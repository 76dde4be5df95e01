"""CreateTopics (key 19): v0-7, creating topics on this single node.

Behaviour, per topic, in Kafka's (KRaft controller's) order of checks:

* a name given twice in one request: INVALID_REQUEST "Duplicate topic name.";
* when the other topics ask for more than ``MAX_PARTITIONS_PER_REQUEST``
  (10,000) partitions in all (``num_partitions``, -1 counting as
  ``num.partitions``, or the number of ``assignments``), every one of them
  gets POLICY_VIOLATION "Excessively large number of partitions per
  request." and nothing is created;
* an illegal name: INVALID_TOPIC_EXCEPTION; an existing one: TOPIC_ALREADY_EXISTS;
  one that differs from an existing name only by '.' versus '_' (they share
  metric names): INVALID_TOPIC_EXCEPTION "... collides with existing topic";
* ``configs``: a null value or a value the storage layer refuses is
  INVALID_CONFIG, with the message naming the key (checked before counts);
* manual ``assignments``: allowed only with ``num_partitions`` and
  ``replication_factor`` both -1 (else INVALID_REQUEST); partition indexes must
  be 0..n-1 and every replica list exactly ``[node.id]`` (this is the only
  broker), else INVALID_REPLICA_ASSIGNMENT with Kafka's message;
* otherwise ``num_partitions`` -1 means the broker's ``num.partitions`` and
  other values below 1 are INVALID_PARTITIONS; ``replication_factor`` -1 means
  ``default.replication.factor``, values below 1 and above 1 (one broker) are
  INVALID_REPLICATION_FACTOR;
* a log the storage layer cannot create (no space, no file descriptors left):
  KAFKA_STORAGE_ERROR, and the topic is not created.

``validate_only`` (v1+) runs every check and creates nothing. From v5 a
success carries the topic's ``num_partitions``, ``replication_factor`` and
its effective configs (sorted by name, as the controller sends them), from v7
its ``topic_id``.

Authorization (Kafka's ``ControllerApis.createTopics``), after the duplicate
check and before every other: ``__cluster_metadata`` is INVALID_REQUEST
"Creation of internal topic __cluster_metadata is prohibited."; CREATE on the
cluster allows every topic, else each topic needs CREATE on itself, and one
without it is TOPIC_AUTHORIZATION_FAILED "Authorization failed." (only the
topics let through count towards the request's partition bound). A topic
created (or validated) without DESCRIBE_CONFIGS on it is answered without
its configs, ``num_partitions`` and ``replication_factor`` (-1), and with
``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED (v5+).

Version notes: v1 validate_only and error_message; v2 throttle_time_ms; v4
num_partitions/replication_factor may be -1 (brokers answer the same for all
versions); v5 flexible, results carry configs; v7 topic_id. Kafka 4.0 dropped
v0-1; we keep them for old clients.
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import CLUSTER_NAME, AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..mutation_quota import THROTTLED, MutationQuota
from ..topics import TopicError, check_topic_name
from ._admin import INVALID_REPLICA_ASSIGNMENT, MAX_PARTITIONS_PER_REQUEST, null_config_error, source_id
from ._admin_authz import filter_authorized
from ._alter import validate_overrides

API_KEY = 19
METADATA_TOPIC = "__cluster_metadata"


class _Refused(Exception):
    def __init__(self, error_code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@handler(API_KEY, 0, 7)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    Result = type(resp).CreatableTopicResult
    counts: dict[str, int] = {}
    for topic in request.topics:
        counts[topic.name] = counts.get(topic.name, 0) + 1
    answered: set[str] = set()
    mutations = MutationQuota(ctx)
    creatable, describable = _authorize(ctx, [name for name, count in counts.items() if count == 1])
    asked = [t for t in request.topics if t.name in creatable]
    too_many = _partitions_asked(ctx, asked) > MAX_PARTITIONS_PER_REQUEST
    for topic in request.topics:
        if topic.name in answered:
            continue
        answered.add(topic.name)
        refusal = _refusal(topic.name, counts, creatable)
        if refusal is not None:
            resp.topics.append(_error(Result, topic.name, *refusal))
            continue
        if too_many:
            message = "Excessively large number of partitions per request."
            resp.topics.append(_error(Result, topic.name, ErrorCode.POLICY_VIOLATION, message))
            continue
        try:
            async with ctx.broker.topics.changes:
                created = await _create(ctx, Result, topic, request.validate_only, mutations, topic.name in describable)
                resp.topics.append(created)
        except _Refused as exc:
            resp.topics.append(_error(Result, topic.name, exc.error_code, exc.message))
    mutations.answer(resp)
    return resp


def _authorize(ctx: RequestContext, names: list[str]) -> tuple[set[str], set[str]]:
    """The topics (named once) the principal may create, and those whose configs it may see."""
    allowed = [name for name in names if name != METADATA_TOPIC]
    if ctx.authorized(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME, log_denied=False):
        creatable = set(allowed)
    else:
        creatable = filter_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, allowed)
    describable = filter_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, allowed, log_denied=False)
    return creatable, describable


def _refusal(name: str, counts: dict[str, int], creatable: set[str]) -> tuple[ErrorCode, str] | None:
    if counts[name] > 1:
        return ErrorCode.INVALID_REQUEST, "Duplicate topic name."
    if name == METADATA_TOPIC:
        return ErrorCode.INVALID_REQUEST, f"Creation of internal topic {METADATA_TOPIC} is prohibited."
    if name not in creatable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
    return None


def _partitions_asked(ctx: RequestContext, topics: list) -> int:
    """The partitions ``topics`` would create, counted as Kafka's controller counts them."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += ctx.broker.config.num_partitions
        else:
            total += max(topic.num_partitions, 0)
    return total


def _error(Result: type, name: str, code: ErrorCode, message: str | None) -> Any:
    return Result(name=name, error_code=code, error_message=message)


async def _create(ctx: RequestContext, Result: type, topic, validate_only: bool, mutations: MutationQuota,
                  describable: bool) -> Any:  # fmt: skip
    topics = ctx.broker.topics
    try:
        check_topic_name(topic.name)
    except TopicError as exc:
        raise _Refused(exc.error_code, str(exc)) from None
    if topics.get(topic.name) is not None:
        raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    _check_collision(ctx, topic.name)
    configs = {c.name: c.value for c in topic.configs}
    _check_configs(ctx, configs)
    if topic.assignments:
        num_partitions = _check_assignments(ctx, topic)
    else:
        num_partitions = _check_counts(ctx, topic)
    if not mutations.charge(num_partitions):
        raise _Refused(*THROTTLED)
    try:
        created = await topics.create(topic.name, num_partitions, configs, validate_only=validate_only)
    except TopicError as exc:
        raise _Refused(exc.error_code, str(exc)) from None
    result = Result(name=topic.name, topic_id=created.topic_id, error_code=ErrorCode.NONE, error_message=None)
    if ctx.version >= 5 and not describable:
        result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif ctx.version >= 5:
        result.num_partitions = num_partitions
        result.replication_factor = 1
        result.configs = _configs(ctx, Result, topic.name, configs, validate_only)
    return result


def _check_collision(ctx: RequestContext, name: str) -> None:
    """'.' and '_' map to the same metric names, so Kafka refuses names differing only there; a name with
    neither can only meet itself (refused before as TOPIC_ALREADY_EXISTS), so, as Kafka's
    ``validateNewTopicNames``, it is not compared with every topic."""
    if "." not in name and "_" not in name:
        return
    folded = name.replace(".", "_")
    for existing in ctx.broker.topics.names():
        if existing.replace(".", "_") == folded:
            raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {existing}")


def _check_configs(ctx: RequestContext, configs: dict[str, str | None]) -> None:
    """Configs are checked before partitions and replicas, as Kafka's controller does."""
    from storage import ConfigError

    message = null_config_error(name for name, value in configs.items() if value is None)
    if message:
        raise _Refused(ErrorCode.INVALID_CONFIG, message)
    try:
        validate_overrides(ctx, configs)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise _Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None


def _check_counts(ctx: RequestContext, topic) -> int:
    config = ctx.broker.config
    num_partitions = config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    if num_partitions < 1:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    factor = config.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
    if factor < 1:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if factor > 1:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {factor} time(s): The target replication factor of {factor} "
            "cannot be reached because only 1 broker(s) are registered.",
        )
    return num_partitions


def _check_assignments(ctx: RequestContext, topic) -> int:
    """Manual assignments: every partition 0..n-1 once, each on this node only."""
    if topic.replication_factor != -1:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        )
    if topic.num_partitions != -1:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    node = ctx.broker.config.node_id
    seen: set[int] = set()
    for a in topic.assignments:
        if a.partition_index in seen:
            raise _Refused(
                INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {a.partition_index}",
            )
        seen.add(a.partition_index)
        _check_replicas(a.broker_ids, node)
    if seen != set(range(len(seen))):
        raise _Refused(
            INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        )
    return len(seen)


def _check_replicas(broker_ids: list[int], node: int) -> None:
    if not broker_ids:
        raise _Refused(
            INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
        )
    for broker_id in broker_ids:
        if broker_id != node:
            raise _Refused(
                INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered.",
            )
    if len(broker_ids) > 1:
        raise _Refused(
            INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes the broker {node} more than once.",
        )


def _configs(ctx: RequestContext, Result: type, name: str, overrides: dict[str, str], validate_only: bool) -> list:
    """The topic's effective configs for a v5+ result (sensitive values hidden)."""
    entries = describe_topic(ctx, name, overrides, validate_only)
    Config = Result.CreatableTopicConfigs
    return [
        Config(
            name=e.name, value=None if e.sensitive else e.value, read_only=e.read_only,
            config_source=source_id(e.source), is_sensitive=e.sensitive,
        )  # fmt: skip
        for e in sorted(entries, key=lambda e: e.name)
    ]


def describe_topic(ctx: RequestContext, name: str, overrides: dict[str, str], validate_only: bool) -> list:
    """``describe_config`` of a topic; for validate_only, of the topic it would be."""
    topics = ctx.broker.topics
    if not validate_only:
        return topics.describe_config(name)
    return topics.manager.describe_overrides(overrides)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every topic of the request, no message."""
    resp = ctx.response()
    Result = type(resp).CreatableTopicResult
    resp.topics = [_error(Result, topic.name, error, None) for topic in request.topics]
    return resp
