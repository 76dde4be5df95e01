"""DeleteRecords moves the log start offset; the next retention pass removes the segments (Kafka's way).

Kafka's ``UnifiedLog.maybeIncrementLogStartOffset`` only raises the log start
offset; the segments wholly below it go when the log-retention task (every
``log.retention.check.interval.ms``) runs ``deleteLogStartOffsetBreachedSegments``,
renamed ``.deleted`` and removed after ``file.delete.delay.ms``. In between,
ListOffsets earliest answers the new start, a Fetch below it is
OFFSET_OUT_OF_RANGE, and the Log ``Size`` gauge still counts the old segments.
The broker here runs on a hand-driven clock (``groups_broker``) and its
duties are run with ``tick``.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import call, create_ok, delete_records, produce
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_authz_fetch import fetch_body
from .test_offset_handlers import list_one

CHECK_MS, DELAY_MS = 300_000, 60_000  # Kafka's log.retention.check.interval.ms and file.delete.delay.ms


def gauge(b, name: str, topic: str) -> float:
    return b.metrics.registry.get_sample_value(f"kafka_log_log_{name}", {"topic": topic, "partition": "0"})


async def fetch_error(b, offset: int) -> ErrorCode:
    resp = await call(b, 1, 12, fetch_body(12, {"trim": {0: offset}}))
    return resp.responses[0].partitions[0].error_code


async def test_segments_below_the_new_start_wait_for_the_retention_pass(groups_broker, clock):  # noqa: F811
    b = groups_broker
    await create_ok(b, "trim", 1, configs={"segment.bytes": "100", "retention.ms": "-1"})
    for _ in range(6):
        await produce(b, "trim", [clock.now, clock.now])  # a batch of two a segment
    log_ = b.topics.partition("trim", 0).log
    segments, size = len(log_.segments), gauge(b, "size", "trim")
    assert [s.base_offset for s in log_.segments] == [0, 2, 4, 6, 8, 10]
    b.tick()  # the first tick starts the duties' clocks

    assert await delete_records(b, "trim", {0: 7}) == {0: (ErrorCode.NONE, 7)}
    assert len(log_.segments) == segments and gauge(b, "size", "trim") == size  # nothing removed yet
    assert gauge(b, "numlogsegments", "trim") == segments and gauge(b, "logstartoffset", "trim") == 7
    assert (await list_one(b, "trim", 0, -2))[2] == 7  # earliest: the new start
    assert await fetch_error(b, 5) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert await fetch_error(b, 7) == ErrorCode.NONE
    assert not list(log_.dir.glob("*.deleted"))

    clock.now += CHECK_MS
    b.tick()  # the retention pass: segments wholly below offset 7 go, renamed .deleted
    assert [s.base_offset for s in log_.segments][:1] == [6] and gauge(b, "size", "trim") < size
    assert gauge(b, "numlogsegments", "trim") == len(log_.segments) == segments - 3
    assert len(list(log_.dir.glob("*.log.deleted"))) == 3
    clock.now += DELAY_MS
    b.tick()
    assert not list(log_.dir.glob("*.deleted"))  # removed once file.delete.delay.ms has passed
