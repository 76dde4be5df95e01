"""DescribeLogDirs (key 35): v0-5, the log directories and the partitions in each.

Behaviour (Kafka's ``ReplicaManager.describeLogDirs``): one result per
directory of ``log.dirs``, named by its absolute path, listing the partitions
whose logs it holds, grouped by topic: a null ``topics`` asks for every
partition; otherwise only the partitions named (unknown ones are left out,
and an empty list asks for none). ``partition_size`` is the bytes of the
log's segments; ``offset_lag`` is how far the log end is behind the high
watermark, which on one node is 0. A partition being moved to another
directory (AlterReplicaLogDirs) is also listed under the destination with
``is_future_key`` true, the bytes copied so far and, as ``offset_lag``, how
far the copy's end is behind the log end offset. From v4
each result carries its volume's ``total_bytes`` and ``usable_bytes``
(``statvfs``); a directory that cannot be read answers KAFKA_STORAGE_ERROR
with no topics. No directory is cordoned (v5).

Authorization (Kafka's ``KafkaApis``): DESCRIBE on the cluster; without it the
answer has no results and, from v3, the top-level ``error_code``
CLUSTER_AUTHORIZATION_FAILED (v0-2 have no such field: just no results).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._error_answers import top_level

API_KEY = 35


@handler(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        resp.error_code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return resp
    wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
    manager = ctx.broker.topics.manager
    logs_by_dir: dict[Path, list[Any]] = defaultdict(list)
    for log_ in manager.logs():
        if wanted is None or (log_.topic, log_.partition) in wanted:
            logs_by_dir[log_.dir.parent].append((log_, log_.size_in_bytes, 0, False))
    for move in manager.moves.all():
        if wanted is None or move.key in wanted:
            lag = max(move.log.log_end_offset - move.future_end_offset, 0)
            logs_by_dir[move.dest_root].append((move.log, move.future_size, lag, True))
    Result = type(resp).DescribeLogDirsResult
    for root in manager.dirs:
        if manager.failures.is_online(root):
            resp.results.append(_result(Result, root, logs_by_dir[root]))
        else:  # its disk failed (storage.log_dir_failure): Kafka's offline log dir
            resp.results.append(Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=os.path.abspath(root)))
    return resp


def _result(Result: type, root: Path, logs: list[Any]) -> Any:
    Topic = Result.DescribeLogDirsTopic
    Part = Topic.DescribeLogDirsPartition
    try:
        space = os.statvfs(root)
    except OSError:
        return Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=os.path.abspath(root), topics=[])
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for log_, size, lag, future in sorted(logs, key=lambda l: (l[0].topic, l[0].partition)):
        by_topic[log_.topic].append(Part(partition_index=log_.partition, partition_size=size, offset_lag=lag,
                                         is_future_key=future))  # fmt: skip
    return Result(
        error_code=ErrorCode.NONE, log_dir=os.path.abspath(root),
        topics=[Topic(name=name, partitions=parts) for name, parts in by_topic.items()],
        total_bytes=space.f_blocks * space.f_frsize, usable_bytes=space.f_bavail * space.f_frsize,
    )  # fmt: skip

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top (v3+), no results
