"""Helpers of the data-path authorization tests: topics made by the super user, records, Produce."""

from __future__ import annotations

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder

from ._admin_client import call, creatable, req, sub
from ._authz import user

ADMIN = user("admin")


async def make_topics(broker, *names: str, partitions: int = 1) -> dict:
    """Create topics as the super user; their ids by name."""
    body = req(19, topics=[creatable(n, partitions) for n in names], timeout_ms=1000)
    resp = await call(broker, 19, 7, body, connection=ADMIN)
    assert [t.error_code for t in resp.topics] == [ErrorCode.NONE] * len(names)
    return {t.name: t.topic_id for t in resp.topics}


def records(*values: bytes, pid: int = -1, epoch: int = -1, seq: int = -1, transactional: bool = False) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)
    for i, v in enumerate(values):
        b.append(b"k", v, timestamp=1_700_000_000_000 + i)
    return b.build()


async def produce(broker, who, topics: dict, version: int = 9, acks: int = -1, txn: str | None = None) -> dict:
    """Send ``{topic (or id): {partition: records}}``; ``{(topic, partition): error}``."""
    Data = sub(0, "TopicProduceData")
    by_id = version >= 13
    data = [Data(**({"topic_id": t} if by_id else {"name": t}),
                 partition_data=[Data.PartitionProduceData(index=i, records=r) for i, r in parts.items()])
            for t, parts in topics.items()]  # fmt: skip
    body = req(0, transactional_id=txn, acks=acks, timeout_ms=1000, topic_data=data)
    resp = await call(broker, 0, version, body, connection=who)
    return {(t.topic_id if by_id else t.name, p.index): p.error_code for t in resp.responses
            for p in t.partition_responses}  # fmt: skip
