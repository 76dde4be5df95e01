"""``__consumer_offsets`` writes that fail answer what Kafka's group coordinator answers for every request
(``CoordinatorOperationExceptionHelper.handleOperationException``, ``store.coordinator_error``): a log dir gone
offline (KAFKA_STORAGE_ERROR) is NOT_COORDINATOR, a batch over the topic's ``max.message.bytes`` (refused as
Kafka's coordinator runtime refuses it: MESSAGE_TOO_LARGE) is UNKNOWN_SERVER_ERROR. Both used to answer
COORDINATOR_NOT_AVAILABLE, and no size was checked.

A real broker with a hand-driven clock (``_group_client``): OffsetCommit, TxnOffsetCommit (its transaction
check answered by a fake coordinator), ConsumerGroupHeartbeat, OffsetDelete and DeleteGroups through
``dispatch``. The offset expiry's tombstones, not atomic in Kafka, go in batches under the limit.
"""

from __future__ import annotations

import pytest

from broker.groups.store import OFFSETS_TOPIC
from broker.internal_topic import records_batch, split_rows
from protocol import ErrorCode

from ._admin_client import call, create_ok, req, sub
from ._consumer_group_client import heartbeat
from ._group_client import clock, commit, fetch, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_txn_offsets import b  # noqa: F401  (fixture: a stand-in transaction coordinator that allows every commit)

T = "orders"
SMALL = {"message.max.bytes": "4000"}  # __consumer_offsets' max.message.bytes follows it


def take_offline(broker, group: str = "g") -> None:
    """The log dir of ``group``'s ``__consumer_offsets`` partition fails, as a failed write makes it fail."""
    partition = broker.topics.partition(OFFSETS_TOPIC, broker.groups.store.partition_of(group))
    broker.topics.manager.failures.fail_dir(partition.log.dir.parent, "injected")


async def txn_commit(broker, group: str, offsets: dict, metadata: str = "m") -> dict:
    Topic = sub(28, "TxnOffsetCommitRequestTopic")
    by_topic: dict = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(Topic.TxnOffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_leader_epoch=-1, committed_metadata=metadata))
    body = req(28, transactional_id="tx", group_id=group, producer_id=7000, producer_epoch=0, generation_id=-1,
               member_id="", group_instance_id=None, topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
    resp = await call(broker, 28, 3, body)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


OFFSETS = {(T, 0): 5, (T, 1): 6}
BIG = "x" * 2500  # two partitions' metadata: a batch over 4000 bytes


async def test_offset_commit_answers_not_coordinator_when_the_log_dir_went_offline(b):
    take_offline(b)
    assert await commit(b, "g", OFFSETS) == dict.fromkeys(OFFSETS, ErrorCode.NOT_COORDINATOR)


@pytest.mark.parametrize("group_props", [SMALL])
async def test_offset_commit_too_large_for_the_topic_answers_unknown_server_error(b):
    """Kafka's new coordinator (the snapshot's) answers UNKNOWN_SERVER_ERROR; the old GroupMetadataManager
    answered INVALID_COMMIT_OFFSET_SIZE. Nothing is committed; a small commit still is."""
    assert await commit(b, "g", OFFSETS, metadata=BIG) == dict.fromkeys(OFFSETS, ErrorCode.UNKNOWN_SERVER_ERROR)
    assert b.groups.groups["g"].offsets == {}
    assert await commit(b, "g", OFFSETS) == dict.fromkeys(OFFSETS, ErrorCode.NONE)


async def test_txn_offset_commit_answers_not_coordinator_when_the_log_dir_went_offline(b):
    take_offline(b)
    assert await txn_commit(b, "g", OFFSETS) == dict.fromkeys(OFFSETS, ErrorCode.NOT_COORDINATOR)
    assert not b.groups.groups["g"].pending_txn


@pytest.mark.parametrize("group_props", [SMALL])
async def test_txn_offset_commit_too_large_for_the_topic_answers_unknown_server_error(b):
    answers = await txn_commit(b, "g", OFFSETS, metadata=BIG)
    assert answers == dict.fromkeys(OFFSETS, ErrorCode.UNKNOWN_SERVER_ERROR)
    assert not b.groups.groups["g"].pending_txn


async def test_consumer_group_heartbeat_answers_not_coordinator_when_the_log_dir_went_offline(b):
    take_offline(b, "cg")
    assert (await heartbeat(b, "member-a", topics=[T])).error_code == ErrorCode.NOT_COORDINATOR


@pytest.mark.parametrize("group_props", [SMALL])
async def test_consumer_group_heartbeat_too_large_for_the_topic_answers_unknown_server_error(b):
    """The joining member's record carries its subscription: 200 long topic names are over 4000 bytes. The refused
    join is undone, as Kafka's coordinator reverts it: the group it would have made does not exist, so the same
    group takes member-b (the old code kept member-a and wrote it again with member-b's join, refused too)."""
    names = [f"topic-with-a-rather-long-name-{i:03}" for i in range(200)]
    assert (await heartbeat(b, "member-a", topics=names)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "cg" not in b.groups.groups
    assert (await heartbeat(b, "member-b", group="other", topics=[T])).error_code == ErrorCode.NONE
    assert (await heartbeat(b, "member-b", topics=[T])).error_code == ErrorCode.NONE
    assert sorted(b.groups.groups["cg"].members) == ["member-b"] and b.groups.groups["cg"].group_epoch == 1
    assert sorted(b.reopen().groups.groups["cg"].members) == ["member-b"]


async def test_offset_delete_and_delete_groups_answer_not_coordinator_when_the_log_dir_went_offline(b):
    assert await commit(b, "g", OFFSETS) == dict.fromkeys(OFFSETS, ErrorCode.NONE)
    take_offline(b)
    Topic = sub(47, "OffsetDeleteRequestTopic")
    body = req(47, group_id="g", topics=[Topic(name=T, partitions=[Topic.OffsetDeleteRequestPartition(
        partition_index=0)])])  # fmt: skip
    assert (await call(b, 47, 0, body)).error_code == ErrorCode.NOT_COORDINATOR
    resp = await call(b, 42, 2, req(42, groups_names=["g"]))
    assert [r.error_code for r in resp.results] == [ErrorCode.NOT_COORDINATOR]


LONG = "a-topic-whose-name-is-long-enough-to-make-each-offset-record-weigh-about-a-hundred-bytes"


@pytest.mark.parametrize("group_props", [SMALL])
async def test_expired_offsets_are_tombstoned_in_batches_under_the_limit(b):
    """60 offsets committed 20 at a time; their tombstones (~125 bytes each) are over 4000 bytes together. The
    expiry writes them as Kafka's coordinator runtime does a non-atomic write: in order, in several batches,
    each within ``max.message.bytes``. The old code wrote one batch of any size."""
    await create_ok(b, LONG, 60)
    for first in range(0, 60, 20):
        offsets = {(LONG, p): p for p in range(first, first + 20)}
        assert await commit(b, "g", offsets) == dict.fromkeys(offsets, ErrorCode.NONE)
    index = b.groups.store.partition_of("g")
    end = b.topics.partition(OFFSETS_TOPIC, index).log.log_end_offset
    b.clock.now += b.config.offsets_retention_minutes * 60_000 + 1
    await b.groups.expire_offsets()
    written = [batch for batch, _start in b.groups.store.batches(index) if batch.base_offset >= end]
    assert len(written) > 1 and all(batch.size_in_bytes <= 4000 for batch in written)
    records = [rec for batch in written for rec in batch.iter_records()]
    assert len(records) == 60 and all(rec.value is None for rec in records)
    assert [rec.offset for rec in records] == list(range(end, end + 60))
    reopened = b.reopen()
    assert "g" not in reopened.groups.groups
    assert (await fetch(reopened, "g", {LONG: [0, 59]}))[1] == {(LONG, 0): (-1, "", 0), (LONG, 59): (-1, "", 0)}


def test_a_row_over_the_limit_alone_gets_a_run_of_its_own():
    """As Kafka's ``MemoryRecordsBuilder.hasRoomFor``: an empty batch takes any record; the append then refuses
    the batch that is too large."""
    small, big = (b"k", b"v" * 100), (b"k", b"v" * 500)
    assert split_rows([small, small, big, small], 0, 300) == [[small, small], [big], [small]]
    exact = len(records_batch([small] * 3, 0)(0)[0])  # a batch exactly at the limit is within it
    assert split_rows([small] * 3, 0, exact) == [[small] * 3]
    assert split_rows([small] * 3, 0, exact - 1) == [[small] * 2, [small]]


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_non_atomic_write_stops_at_a_row_over_the_limit(b):
    """The batches before it are written; its own batch is refused (MESSAGE_TOO_LARGE, answered as
    UNKNOWN_SERVER_ERROR) and nothing after it is written, as the log refuses Kafka's runtime's batch."""
    index = b.groups.store.partition_of("g")
    end = b.topics.partition(OFFSETS_TOPIC, index).log.log_end_offset
    rows = [(b"\x00\x01first", None), (b"\x00\x01big", b"x" * 5000), (b"\x00\x01last", None)]
    assert await b.groups.store.write("g", rows, atomic=False) == ErrorCode.UNKNOWN_SERVER_ERROR
    written = [batch for batch, _start in b.groups.store.batches(index) if batch.base_offset >= end]
    assert [rec.key for batch in written for rec in batch.iter_records()] == [b"\x00\x01first"]


def rows_of_size(size: int) -> list[tuple[bytes, bytes]]:
    """One offset row whose batch (``records_batch``) is exactly ``size`` bytes."""
    row = lambda n: [(b"\x00\x01k", b"x" * n)]  # noqa: E731
    n = next(n for n in range(size) if len(records_batch(row(n), 0)(0)[0]) >= size)
    assert len(records_batch(row(n), 0)(0)[0]) == size
    return row(n)


@pytest.mark.parametrize("group_props", [SMALL])
async def test_an_atomic_write_is_limited_to_max_message_bytes_less_the_batch_header(b):
    """Kafka's runtime refuses an atomic write whose estimated batch size (header included) is over the batch
    builder's ``maxAllowedBytes()``: ``max.message.bytes`` less the 61-byte v2 batch header. The old limit was
    the whole ``max.message.bytes``, 61 bytes looser."""
    assert await b.groups.store.write("g", rows_of_size(4000 - 61)) is None
    assert await b.groups.store.write("g", rows_of_size(4000 - 60)) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert await b.groups.store.write("g", rows_of_size(4000), atomic=False) is None  # the log's own limit
