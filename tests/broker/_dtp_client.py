"""Helpers of the DescribeTopicPartitions tests: build the request, read the answer as plain tuples."""

from __future__ import annotations

from ._admin_client import call, req, sub

Topic = sub(75, "TopicRequest")
Cursor = sub(75, "Cursor")


async def dtp(broker, names=(), limit: int = 2000, cursor: tuple[str, int] | None = None, who=None):
    """Send DescribeTopicPartitions v0 for ``names`` (none: all topics)."""
    body = req(75, topics=[Topic(name=n) for n in names], response_partition_limit=limit,
               cursor=None if cursor is None else Cursor(topic_name=cursor[0], partition_index=cursor[1]))  # fmt: skip
    return await call(broker, 75, 0, body, connection=who)


def page(resp) -> tuple[list[tuple], tuple | None]:
    """``([(name, error, [partition indexes]) ...], next cursor as (topic, partition) or None)``."""
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in resp.topics]
    cursor = resp.next_cursor
    return topics, None if cursor is None else (cursor.topic_name, cursor.partition_index)


async def walk(broker, names=(), limit: int = 2000, who=None) -> list[tuple]:
    """Every page, each fetched with the previous page's cursor, until one comes without: ``[page ...]``."""
    pages, cursor = [], None
    for _ in range(50):
        got = page(await dtp(broker, names, limit, cursor, who))
        pages.append(got)
        cursor = got[1]
        if cursor is None:
            return pages
    raise AssertionError(f"no last page: {pages[-3:]}")
