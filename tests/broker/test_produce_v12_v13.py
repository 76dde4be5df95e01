"""Produce v12 (KIP-890 part 2: the broker adds a transactional produce's partitions to the transaction) and
v13 (KIP-516: topics by id), in-process.

Kafka decides by the request version alone, not by the finalized ``transaction.version``: from v12 its
ReplicaManager sends the transaction coordinator an AddPartitionsToTxn for the partitions a transactional
batch goes to, and answers the coordinator's refusal on those partitions (a fenced epoch as
INVALID_PRODUCER_EPOCH); v11 only verifies. v13 names topics by id: an id of no topic here is
UNKNOWN_TOPIC_ID for each of its partitions, and the answer names topics by id.
"""

from __future__ import annotations

import uuid

import pytest

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder

from ._admin_client import call, create_ok, req, sub
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import TXN, end, fetch, init

TS = 1_760_000_000_000


def _records(values, pid=-1, epoch=-1, seq=-1, transactional=False) -> bytes:
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)
    for i, v in enumerate(values):
        b.append(None, v, timestamp=TS + i)
    return b.build()


async def _produce(broker, version, topics: dict, txn=None, acks=-1) -> list[tuple]:
    """``topics``: ``{name or id: {partition: records}}``; (name or id, partition, error, base offset) answered."""
    Data = sub(0, "TopicProduceData")
    data = [Data(**({"topic_id": key} if isinstance(key, uuid.UUID) else {"name": key}),
                 partition_data=[Data.PartitionProduceData(index=i, records=r) for i, r in parts.items()])
            for key, parts in topics.items()]  # fmt: skip
    resp = await call(broker, 0, version, req(0, transactional_id=txn, acks=acks, timeout_ms=1000, topic_data=data))
    return [(t.topic_id if version >= 13 else t.name, p.index, p.error_code, p.base_offset)
            for t in resp.responses for p in t.partition_responses]  # fmt: skip


@pytest.mark.parametrize("version", [11, 12])
async def test_v12_plain_produce_is_v11(groups_broker, version):
    await create_ok(groups_broker, "t", 2)
    answer = await _produce(groups_broker, version, {"t": {1: _records([b"a", b"b"])}, "nope": {0: _records([b"c"])}})
    assert answer == [("t", 1, ErrorCode.NONE, 0), ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]


async def test_v11_refuses_a_partition_outside_the_transaction(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    batch = _records([b"a"], pid, epoch, 0, transactional=True)
    assert await _produce(groups_broker, 11, {"t": {0: batch}}, txn=TXN) == [("t", 0, ErrorCode.INVALID_TXN_STATE, -1)]


async def test_v12_adds_the_partitions_to_the_transaction(groups_broker):
    await create_ok(groups_broker, "t", 2)
    _, pid, epoch = await init(groups_broker)
    batches = {0: _records([b"a"], pid, epoch, 0, True), 1: _records([b"b", b"c"], pid, epoch, 0, True)}
    assert await _produce(groups_broker, 12, {"t": batches}, txn=TXN) == [
        ("t", 0, ErrorCode.NONE, 0), ("t", 1, ErrorCode.NONE, 0)]  # fmt: skip
    meta = groups_broker.transactions.txns[TXN]
    assert (meta.state.name, meta.partitions) == ("ONGOING", {("t", 0), ("t", 1)})
    assert (await fetch(groups_broker, committed=True))[0] == []  # held by the open transaction
    assert await end(groups_broker, pid, epoch, commit=True) == ErrorCode.NONE
    assert (await fetch(groups_broker, committed=True))[0] == [b"a"]


async def test_v12_does_so_even_without_partition_verification(groups_broker, monkeypatch):
    await create_ok(groups_broker, "t", 1)
    monkeypatch.setattr(groups_broker.config, "transaction_partition_verification_enable", False)
    _, pid, epoch = await init(groups_broker)
    batch = _records([b"a"], pid, epoch, 0, True)
    assert await _produce(groups_broker, 12, {"t": {0: batch}}, txn=TXN) == [("t", 0, ErrorCode.NONE, 0)]
    assert groups_broker.transactions.txns[TXN].partitions == {("t", 0)}


async def test_v12_a_fenced_producer_is_refused_and_nothing_is_added(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    _, _, newer = await init(groups_broker)
    stale = _records([b"a"], pid, epoch, 0, True)
    assert await _produce(groups_broker, 12, {"t": {0: stale}}, txn=TXN) == [
        ("t", 0, ErrorCode.INVALID_PRODUCER_EPOCH, -1)]  # fmt: skip
    unknown = _records([b"a"], pid + 100, newer, 0, True)
    assert await _produce(groups_broker, 12, {"t": {0: unknown}}, txn=TXN) == [
        ("t", 0, ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1)]  # fmt: skip
    assert groups_broker.transactions.txns[TXN].partitions == set()


async def test_v12_adds_before_looking_at_acks_and_skips_unknown_partitions(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    batch = _records([b"a"], pid, epoch, 0, True)
    answer = await _produce(groups_broker, 12, {"t": {0: batch, 5: batch}}, txn=TXN, acks=2)
    assert answer == [("t", 0, ErrorCode.INVALID_REQUIRED_ACKS, -1), ("t", 5, ErrorCode.INVALID_REQUIRED_ACKS, -1)]
    assert groups_broker.transactions.txns[TXN].partitions == {("t", 0)}


async def test_v12_adds_an_internal_partition_that_the_append_then_refuses(groups_broker):
    """Kafka adds first and refuses internal topics only when appending."""
    await create_ok(groups_broker, "t", 1)
    await groups_broker.groups.store.ready()
    _, pid, epoch = await init(groups_broker)
    batch = _records([b"a"], pid, epoch, 0, True)
    answer = await _produce(groups_broker, 12, {"__consumer_offsets": {0: batch}}, txn=TXN)
    assert answer == [("__consumer_offsets", 0, ErrorCode.INVALID_TOPIC_EXCEPTION, -1)]
    assert groups_broker.transactions.txns[TXN].partitions == {("__consumer_offsets", 0)}


async def test_v13_names_topics_by_id(groups_broker):
    tid = (await create_ok(groups_broker, "t", 2)).topic_id
    stranger = uuid.uuid4()
    answer = await _produce(groups_broker, 13, {tid: {0: _records([b"a"]), 7: _records([b"b"])},
                                                stranger: {0: _records([b"c"])}})  # fmt: skip
    assert answer == [(tid, 0, ErrorCode.NONE, 0), (tid, 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
                      (stranger, 0, ErrorCode.UNKNOWN_TOPIC_ID, -1)]  # fmt: skip
    assert (await fetch(groups_broker, committed=False))[0] == [b"a"]


async def test_v13_a_transactional_produce_by_id(groups_broker):
    tid = (await create_ok(groups_broker, "t", 1)).topic_id
    _, pid, epoch = await init(groups_broker)
    batch = _records([b"a"], pid, epoch, 0, True)
    assert await _produce(groups_broker, 13, {tid: {0: batch}}, txn=TXN) == [(tid, 0, ErrorCode.NONE, 0)]
    assert groups_broker.transactions.txns[TXN].partitions == {("t", 0)}
