"""ElectLeaders (key 43): v0-2; on one node every partition already has its preferred leader.

Behaviour (Kafka's controller, ``ReplicationControlManager.electLeaders``):

* each partition named gets a result: an unknown topic UNKNOWN_TOPIC_OR_PARTITION
  "No such topic as <t>", an unknown partition the same with "No such
  partition as <t>-<p>", and an existing one ELECTION_NOT_NEEDED (its one
  replica is the preferred leader and leads; the same answer for an unclean
  election, since it has a leader);
* a null ``topic_partitions`` asks for every partition: each topic is listed
  with only the partitions whose election was needed, so here with none;
* an election type other than 0 (preferred) or 1 (unclean) fails the request
  as Kafka's controller does: INVALID_REQUEST "Unknown election type <n>" at
  the top (v1+) and for each partition named.

Authorization (Kafka's ``ControllerApis``): ALTER on the cluster, checked
first; without it the request fails as a whole: CLUSTER_AUTHORIZATION_FAILED at
the top (v1+) and for each partition named, with the message of Kafka's
ClusterAuthorizationException ("Request Request(...) is not authorized.").

This is what ``kafka-leader-election.sh`` reports as "Valid replica already
elected for partitions".
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import cluster_denied_message

API_KEY = 43
PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _refuse_all(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, cluster_denied_message(ctx))
    if request.election_type not in (PREFERRED, UNCLEAN):
        return _refuse_all(ctx, request, ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}")
    resp = ctx.response()
    Result = type(resp).ReplicaElectionResult
    topics = ctx.broker.topics
    if request.topic_partitions is None:  # every partition; those not needing an election are left out
        resp.replica_election_results = [Result(topic=name, partition_result=[]) for name in sorted(topics.names())]
    else:
        resp.replica_election_results = [
            _named(Result, t, lambda p, name=t.topic: _elect(topics, name, p)) for t in request.topic_partitions
        ]
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top (v1+) and for every named partition, no message."""
    return _refuse_all(ctx, request, error, None)


def _refuse_all(ctx: RequestContext, request, code: ErrorCode, message: str | None) -> object:
    """``code`` at the top (v1+) and, with ``message``, for every partition the request names."""
    resp = ctx.response(error_code=code)
    Result = type(resp).ReplicaElectionResult
    refusal = (code, message)
    resp.replica_election_results = [_named(Result, t, lambda _p: refusal) for t in request.topic_partitions or []]
    return resp


def _named(Result: type, topic, answer) -> Any:
    Part = Result.PartitionResult
    answers = [(p, *answer(p)) for p in topic.partitions]
    parts = [Part(partition_id=p, error_code=code, error_message=message) for p, code, message in answers]
    return Result(topic=topic.topic, partition_result=parts)


def _elect(topics, name: str, partition: int) -> tuple[ErrorCode, str]:
    found = topics.get(name)
    if found is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}"
    if not 0 <= partition < found.num_partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{partition}"
    return ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED
