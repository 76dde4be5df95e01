"""ListPartitionReassignments (key 46): v0, never a reassignment in progress.

Behaviour (Kafka's controller, ``listPartitionReassignments``): the answer
lists only partitions being reassigned, for every topic (null ``topics``) or
the named ones that exist. A single node's partitions have their one replica
and AlterPartitionReassignments never starts a move (``alter_partition_reassignments.py``),
so the answer is always NONE
with no topics and a null message, which is what ``kafka-reassign-partitions.sh
--list`` and admin UIs read as "nothing in progress".

Authorization (Kafka's ``ControllerApis``): DESCRIBE on the cluster; without it
the answer is CLUSTER_AUTHORIZATION_FAILED with the message of Kafka's
ClusterAuthorizationException ("Request Request(...) is not authorized.") and
the topics named echoed with their partition indexes (Kafka's error answer).
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import cluster_denied_message

API_KEY = 46


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    if ctx.authorized_cluster(AclOperation.DESCRIBE):
        return ctx.response(error_code=ErrorCode.NONE, error_message=None, topics=[])
    resp = ctx.response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=cluster_denied_message(ctx))
    Topic = type(resp).OngoingTopicReassignment
    resp.topics = [Topic(name=t.name, partitions=[Topic.OngoingPartitionReassignment(partition_index=p)
                                                  for p in t.partition_indexes])
                   for t in request.topics or []]  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top, no message, every partition asked listed with no
    replicas."""
    resp = ctx.response(error_code=error, error_message=None)
    Topic = type(resp).OngoingTopicReassignment
    Part = Topic.OngoingPartitionReassignment
    resp.topics = [Topic(name=t.name, partitions=[Part(partition_index=i) for i in t.partition_indexes])
                   for t in request.topics or []]  # fmt: skip
    return resp
