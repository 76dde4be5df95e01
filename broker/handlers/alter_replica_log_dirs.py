"""AlterReplicaLogDirs (key 34): v0-2, moving partitions' logs between the directories of ``log.dirs``.

Behaviour (Kafka's ``ReplicaManager.alterReplicaLogDirs``), one result per
partition, grouped by topic; a partition named under several paths takes the
last one. In Kafka's order of checks:

* a topic whose future directory name (``<topic>-<partition>.<32 hex
  digits>-future``) would be longer than 255 characters:
  INVALID_TOPIC_EXCEPTION;
* a path that is not one of ``log.dirs`` as DescribeLogDirs names them
  (absolute): LOG_DIR_NOT_FOUND; one that cannot be read (``statvfs``
  fails, Kafka's offline log dir): KAFKA_STORAGE_ERROR;
* a move of the partition in progress to another directory is given up
  (its future copy removed);
* a partition the broker does not have: UNKNOWN_TOPIC_OR_PARTITION (on one
  node a partition is here or unknown), and the path is remembered: the
  partition is made there if it is created later (Kafka's preferred log dir);
* the directory the log is in, or the one it is being moved to: NONE, and
  nothing else happens;
* otherwise NONE, and the move runs in the background (``log_dir_moves.py``):
  DescribeLogDirs lists the copy under the destination as a future log until
  the swap, then the partition there.

Authorization (Kafka's ``KafkaApis``): ALTER on the cluster, checked first;
without it nothing moves and every partition named gets
CLUSTER_AUTHORIZATION_FAILED, in one topic result per directory and topic
as the request lists them (Kafka's error answer: not merged).
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from protocol import ErrorCode
from storage.file_names import FUTURE_SUFFIX

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import per_partition

API_KEY = 34
UNIQUE_ID_CHARS = 32  # a UUID without its dashes, as Kafka names future and deleted directories


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _denied(resp, request)
    wanted: dict[tuple[str, int], str] = {}
    for alter in request.dirs:
        for topic in alter.topics:
            for partition in topic.partitions:
                wanted[(topic.name, partition)] = alter.path
    Topic = type(resp).AlterReplicaLogDirTopicResult
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (topic_name, partition), path in wanted.items():
        code = _alter(ctx.broker, topic_name, partition, path)
        by_topic[topic_name].append(Topic.AlterReplicaLogDirPartitionResult(partition_index=partition,
                                                                           error_code=code))  # fmt: skip
    resp.results = [Topic(topic_name=name, partitions=parts) for name, parts in by_topic.items()]
    return resp


def _denied(resp, request) -> object:
    Topic = type(resp).AlterReplicaLogDirTopicResult
    Part, denied = Topic.AlterReplicaLogDirPartitionResult, ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    resp.results = [Topic(topic_name=topic.name, partitions=[Part(partition_index=p, error_code=denied)
                                                             for p in topic.partitions])
                    for alter in request.dirs for topic in alter.topics]  # fmt: skip
    return resp


def _alter(broker: Any, topic: str, partition: int, path: str) -> ErrorCode:
    if len(f"{topic}-{partition}.") + UNIQUE_ID_CHARS + len(FUTURE_SUFFIX) > 255:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    root = next((r for r in broker.topics.manager.dirs if os.path.abspath(r) == path), None)
    if root is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    log_ = broker.topics.manager.get_log(topic, partition)
    if not broker.topics.manager.failures.is_online(root) or (log_ is not None and log_.offline):
        return ErrorCode.KAFKA_STORAGE_ERROR  # a failed log dir, the destination or the partition's own
    try:
        os.statvfs(root)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return broker.log_dir_moves.request(topic, partition, root)


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every partition of every dir, topic by topic."""
    resp = ctx.response()
    asked = [({"topic_name": t.name}, t.partitions) for d in request.dirs for t in d.topics]
    resp.results = per_partition(type(resp).AlterReplicaLogDirTopicResult, asked, error)
    return resp
