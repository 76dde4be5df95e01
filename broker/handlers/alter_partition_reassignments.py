"""AlterPartitionReassignments (key 45): v0-1; on one node the only placement is the one there is.

Behaviour (Kafka's controller, ``ReplicationControlManager.alterPartitionReassignments``),
one result per partition named:

* an unknown topic: UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named
  <t>."; an unknown partition: the same with "Unable to find partition <t>:<p>.";
* null replicas cancels the reassignment in progress; there never is one
  here, so NO_REASSIGNMENT_IN_PROGRESS;
* target replicas are checked as a manual assignment: an empty list, a
  broker that is not registered (any id but ``node.id``) or a broker named
  twice is INVALID_REPLICA_ASSIGNMENT with Kafka's message. What is left is
  ``[node.id]``, the partition's current replica: nothing to move, NONE.

Authorization (Kafka's ``ControllerApis``): ALTER on the cluster, checked
first; without it the request fails as a whole: CLUSTER_AUTHORIZATION_FAILED
at the top and for every partition named, with the message of Kafka's
ClusterAuthorizationException ("Request Request(...) is not authorized."),
and ``allow_replication_factor_change`` (v1) its default, true.

So ``kafka-reassign-partitions.sh --execute`` of a plan that keeps every
partition on this node succeeds and ``--verify`` reports it complete
(ListPartitionReassignments lists nothing in progress), and a plan that
moves a partition elsewhere is refused per partition, as a Kafka cluster
without that broker refuses it.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import cluster_denied_message

API_KEY = 45
NO_REASSIGNMENT = "No partition reassignment is in progress."


@handler(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _refuse_all(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied_message(ctx))
    resp = ctx.response(error_code=ErrorCode.NONE, error_message=None,
                        allow_replication_factor_change=request.allow_replication_factor_change)  # fmt: skip
    Topic = type(resp).ReassignableTopicResponse
    Part = Topic.ReassignablePartitionResponse
    for topic in request.topics:
        parts = []
        for target in topic.partitions:
            code, message = _alter(ctx, topic.name, target.partition_index, target.replicas)
            parts.append(Part(partition_index=target.partition_index, error_code=code, error_message=message))
        resp.responses.append(Topic(name=topic.name, partitions=parts))
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top and for every partition, no message."""
    return _refuse_all(ctx, request, error, None)


def _refuse_all(ctx: RequestContext, request, code: ErrorCode, message: str | None) -> object:
    """``code`` and ``message`` at the top and for every partition of the request."""
    resp = ctx.response(error_code=code, error_message=message)
    Topic = type(resp).ReassignableTopicResponse
    Part = Topic.ReassignablePartitionResponse
    resp.responses = [Topic(name=topic.name, partitions=[
        Part(partition_index=p.partition_index, error_code=code, error_message=message) for p in topic.partitions])
        for topic in request.topics]  # fmt: skip
    return resp


def _alter(ctx: RequestContext, name: str, partition: int, replicas: list[int] | None) -> tuple[ErrorCode, str | None]:
    found = ctx.broker.topics.get(name)
    if found is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= partition < found.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{partition}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT
    refusal = _invalid_assignment(replicas, ctx.broker.config.node_id)
    if refusal is not None:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, refusal
    return ErrorCode.NONE, None


def _invalid_assignment(replicas: list[int], node_id: int) -> str | None:
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(replicas):
        if broker_id != node_id:
            return f"The manual partition assignment includes broker {broker_id}, but no such broker is registered."
        if broker_id == previous:
            return f"The manual partition assignment includes the broker {broker_id} more than once."
        previous = broker_id
    return None
