"""DescribeQuorum (key 55): v0-2, the metadata quorum of a single-node combined KRaft Kafka.

What ``Admin.describeMetadataQuorum`` and ``kafka-metadata-quorum.sh
describe --status|--replication`` read. A Kafka broker forwards the request
to its controller, whose raft client answers it
(``KafkaRaftClient.handleDescribeQuorumRequest``); a node with
``process.roles=broker,controller`` alone in its quorum is the leader and the
only voter of ``__cluster_metadata`` partition 0, and this broker answers as
that node:

* ``leader_id``: this node's ``node.id``; ``leader_epoch`` and
  ``high_watermark`` from ``broker.quorum`` (``metadata_quorum.py``): the
  epoch grows by one at each start and is kept in the first log dir, as
  Kafka's election at each start of a one-node quorum bumps it; the high
  watermark is the end offset of a metadata log that takes a record per
  metadata change (topics, partitions, configs, ACLs, quotas, SCRAM
  credentials), saved too, so it never goes back.
* ``current_voters``: this node, its ``log_end_offset`` the high watermark,
  and from v1 ``last_fetch_timestamp`` and ``last_caught_up_timestamp``
  both now, as Kafka's leader reports itself. From v2 its
  ``replica_directory_id`` is the zero UUID, Kafka's ``NO_DIRECTORY_ID``:
  this broker is a static quorum (``kraft.version`` 0, ``features.py``),
  whose voters have no directory ids. No ``observers``.
* ``nodes`` (v2): this node with its controller endpoints
  (``listeners.controller_endpoints``): the address of its entry in
  ``controller.quorum.voters`` under the first of ``controller.listener.names``,
  as Kafka's static quorum reports it, else the controller listeners of
  ``listeners``. Those listeners are not bound here (nothing serves the
  controller protocol); with no ``controller.listener.names`` at all (a
  plain broker config) the node is listed with no listeners.
* The v2 error messages are "" when there is no error: Kafka's default for
  the field, not null.

Errors, in Kafka's order:

1. DESCRIBE on the CLUSTER is required (``ControllerApis``): without it the
   answer is CLUSTER_AUTHORIZATION_FAILED at the top level with that
   error's default message, "Cluster authorization failed." (Kafka's
   ``DescribeQuorumRequest.getErrorResponse``), no topics and no nodes.
2. The request must name one topic, ``__cluster_metadata``, with one
   partition, 0 (``RaftUtil.hasValidTopicPartition``). Otherwise every
   partition of every topic named is echoed with UNKNOWN_TOPIC_OR_PARTITION
   and "This server does not host this topic-partition.", with no nodes.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ..listeners import controller_endpoints
from ._admin_authz import CLUSTER_DENIED, DEFAULT_MESSAGES

API_KEY = 55
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
NOT_HOSTED = "This server does not host this topic-partition."


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return ctx.response(error_code=CLUSTER_DENIED[0], error_message=CLUSTER_DENIED[1])
    resp = ctx.response()
    if not _names_the_metadata_partition(request):
        resp.topics = _not_hosted(type(resp).TopicData, request)
        return resp
    Topic = type(resp).TopicData
    resp.topics = [Topic(topic_name=METADATA_TOPIC, partitions=[_partition(ctx, Topic.PartitionData)])]
    node_id = ctx.broker.config.node_id
    Node = type(resp).Node
    listeners = [Node.Listener(name=name, host=host, port=port)
                 for name, host, port in controller_endpoints(ctx.broker.config)]  # fmt: skip
    resp.nodes = [Node(node_id=node_id, listeners=listeners)]
    return resp


def _names_the_metadata_partition(request) -> bool:
    topics = request.topics
    return (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC
            and [p.partition_index for p in topics[0].partitions] == [METADATA_PARTITION])  # fmt: skip


def _not_hosted(Topic, request) -> list:
    Partition = Topic.PartitionData
    return [Topic(topic_name=t.topic_name, partitions=[
                Partition(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=NOT_HOSTED) for p in t.partitions])
            for t in request.topics]  # fmt: skip


def _partition(ctx: RequestContext, Partition) -> object:
    """The leader's view of the quorum: itself, the one voter, caught up now."""
    quorum, node_id, now = ctx.broker.quorum, ctx.broker.config.node_id, ctx.broker.clock()
    voter = Partition.ReplicaState(replica_id=node_id, log_end_offset=quorum.high_watermark,
                                   last_fetch_timestamp=now, last_caught_up_timestamp=now)  # fmt: skip
    return Partition(partition_index=METADATA_PARTITION, error_code=ErrorCode.NONE, leader_id=node_id,
                     leader_epoch=quorum.leader_epoch, high_watermark=quorum.high_watermark,
                     current_voters=[voter], observers=[])  # fmt: skip


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top with its message (v2+), no partitions."""
    return ctx.response(error_code=error, error_message=DEFAULT_MESSAGES.get(error))
