"""OffsetCommit (key 8): v0-8, committed offsets stored in ``__consumer_offsets``.

Behaviour: ``GroupManager.commit`` checks the group and member as Kafka does
(see ``broker.groups.offsets``), then each partition: unknown ones get
UNKNOWN_TOPIC_OR_PARTITION, metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE.
The rest are written as one batch and answered once it is durable.

Version notes: v0 has no generation or member (a "simple" commit); v1's
per-partition commit timestamp is accepted and ignored (the broker's time is
used, as Kafka does since KIP-211); v2-4 ``retention_time_ms`` sets an
explicit expiry; v6 leader epoch; v7 ``group_instance_id``; v8 flexible.
"""

from __future__ import annotations

from ..dispatch import RequestContext, handler

API_KEY = 8


@handler(API_KEY, 0, 8)
async def handle(ctx: RequestContext, request) -> object:
    wanted = [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
              for t in request.topics for p in t.partitions]  # fmt: skip
    generation = request.generation_id_or_member_epoch if ctx.version >= 1 else -1
    errors = iter(await ctx.broker.groups.commit(
        request.group_id, request.member_id, request.group_instance_id, generation,
        request.retention_time_ms if 2 <= ctx.version <= 4 else -1, wanted,
    ))  # fmt: skip
    resp = ctx.response()
    topic_cls = type(resp).OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    for t in request.topics:
        parts = [part_cls(partition_index=p.partition_index, error_code=next(errors)) for p in t.partitions]
        resp.topics.append(topic_cls(name=t.name, partitions=parts))
    return resp
