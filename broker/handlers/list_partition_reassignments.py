"""ListPartitionReassignments (key 46): v0, never a reassignment in progress.

Behaviour (Kafka's controller, ``listPartitionReassignments``): the answer
lists only partitions being reassigned, for every topic (null ``topics``) or
the named ones that exist. A single node's partitions have their one replica
and AlterPartitionReassignments never starts a move (``alter_partition_reassignments.py``),
so the answer is always NONE
with no topics and a null message, which is what ``kafka-reassign-partitions.sh
--list`` and admin UIs read as "nothing in progress".
"""

from __future__ import annotations

from protocol import ErrorCode

from ..dispatch import RequestContext, handler

API_KEY = 46


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    return ctx.response(error_code=ErrorCode.NONE, error_message=None, topics=[])
