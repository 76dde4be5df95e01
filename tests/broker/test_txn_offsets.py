"""Transactional offset commits (TxnOffsetCommit, KIP-98) on the group side.

TxnOffsetCommit through ``dispatch`` against a real broker (``_group_client``)
whose transaction coordinator is a fake (``FakeTxns``: its
``check_offsets_allowed`` answers what the test says), then
``GroupManager.complete_transaction`` as EndTxn would call it. Checked: the
offsets are staged (invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT with
``require_stable``) until the COMMIT marker, dropped by ABORT, written as a
transactional batch followed by a marker in ``__consumer_offsets``, replayed
after a restart (committed, aborted, still open), and Kafka's request checks.
"""

from __future__ import annotations

import attrs
import pytest

from broker.dispatch import REGISTRY
from broker.groups.store import OFFSETS_TOPIC
from protocol import ErrorCode
from protocol.records import iter_batches
from protocol.records.control import ABORT, COMMIT, marker_type

from ._admin_client import call, create_ok, req, sub
from ._group_client import (  # noqa: F401  (fixtures)
    clock, commit, fetch, group_props, groups_broker, join_new, sync, tick,
)  # fmt: skip

T = "orders"
PID, EPOCH = 7000, 3


@attrs.define
class FakeTxns:
    """Stands in for ``broker.transactions``: answers ``error`` and records what it was asked."""

    error: ErrorCode | None = None
    asked: list = attrs.field(factory=list)

    def check_offsets_allowed(self, txn_id: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode | None:
        self.asked.append((txn_id, producer_id, epoch, group_id))
        return self.error


@pytest.fixture
async def b(groups_broker):
    """The broker with a fake transaction coordinator and ``__consumer_offsets`` created."""
    groups_broker.transactions = FakeTxns()
    await create_ok(groups_broker, T, 3)
    await groups_broker.groups.store.ready()
    return groups_broker


def reopen(broker):
    """A restart on the same directory (``groups_broker.reopen`` closes whichever broker is current)."""
    again = broker.reopen()
    again.reopen, again.transactions = broker.reopen, FakeTxns()
    return again


async def txn_commit(broker, group, offsets, pid=PID, epoch=EPOCH, version=3, generation=-1, member_id="",
                     instance=None, metadata="m", txn_id="tx"):  # fmt: skip
    """``offsets``: {(topic, partition): offset}; returns {(topic, partition): error}."""
    Topic = sub(28, "TxnOffsetCommitRequestTopic")
    by_topic: dict = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(Topic.TxnOffsetCommitRequestPartition(
            partition_index=p, committed_offset=off, committed_leader_epoch=5,
            committed_metadata=metadata))  # fmt: skip
    body = req(28, transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch,
               generation_id=generation, member_id=member_id, group_instance_id=instance,
               topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])  # fmt: skip
    resp = await call(broker, 28, version, body)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def stable_fetch(broker, group, wanted=None, version=7):
    Topic = sub(9, "OffsetFetchRequestTopic")
    topics = None if wanted is None else [Topic(name=t, partition_indexes=ps) for t, ps in wanted.items()]
    resp = await call(broker, 9, version, req(9, group_id=group, topics=topics, require_stable=True))
    return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in resp.topics for p in t.partitions}


async def end(broker, commit_it, groups=("g",), pid=PID, epoch=EPOCH, partitions=()):
    await broker.groups.complete_transaction(pid, epoch, commit_it, 0, set(groups), set(partitions))


def log_batches(broker, group="g"):
    """Every batch of the group's ``__consumer_offsets`` partition, read straight from the log."""
    log_ = broker.topics.partition(OFFSETS_TOPIC, broker.groups.store.partition_of(group)).log
    data = log_.read(log_.log_start_offset, 1 << 24, min_one_message=True)
    return [] if data is None else list(iter_batches(data.read_bytes()))


@pytest.mark.parametrize("version", range(0, 5))
async def test_offsets_stay_pending_until_the_commit_marker(b, version):
    await commit(b, "g", {(T, 0): 3})
    assert await txn_commit(b, "g", {(T, 0): 10, (T, 1): 11}, version=version) == {(T, 0): 0, (T, 1): 0}
    assert b.transactions.asked == [("tx", PID, EPOCH, "g")]
    assert (await fetch(b, "g", {T: [0, 1]}))[1] == {(T, 0): (3, "m", 0), (T, 1): (-1, "", 0)}
    unstable = ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert await stable_fetch(b, "g", {T: [0, 1, 2]}) == {(T, 0): (-1, unstable), (T, 1): (-1, unstable),
                                                          (T, 2): (-1, 0)}  # fmt: skip
    await end(b, True)
    assert (await fetch(b, "g", {T: [0, 1]}))[1] == {(T, 0): (10, "m", 0), (T, 1): (11, "m", 0)}
    assert await stable_fetch(b, "g", {T: [0, 1]}) == {(T, 0): (10, 0), (T, 1): (11, 0)}
    assert b.groups.groups["g"].offsets[(T, 1)].leader_epoch == (5 if version >= 2 else -1)


async def test_the_log_holds_a_transactional_batch_then_the_marker(b):
    await txn_commit(b, "g", {(T, 0): 10})
    await end(b, True)
    await txn_commit(b, "g", {(T, 0): 20}, epoch=EPOCH + 1)
    await end(b, False, epoch=EPOCH + 1)
    data1, marker1, data2, marker2 = log_batches(b)
    assert (data1.is_transactional, data1.is_control, data1.producer_id, data1.producer_epoch) == (True, False, PID,
                                                                                                  EPOCH)  # fmt: skip
    assert (marker1.is_control, marker1.producer_id, marker_type(marker1.buffer)) == (True, PID, COMMIT)
    assert (data2.producer_epoch, marker2.producer_epoch, marker_type(marker2.buffer)) == (EPOCH + 1, EPOCH + 1, ABORT)
    assert [x.base_offset for x in (data1, marker1, data2, marker2)] == [0, 1, 2, 3]


async def test_abort_drops_the_pending_offsets(b):
    await commit(b, "g", {(T, 0): 3})
    await txn_commit(b, "g", {(T, 0): 10, (T, 2): 12})
    await end(b, False)
    assert (await fetch(b, "g", {T: [0, 2]}))[1] == {(T, 0): (3, "m", 0), (T, 2): (-1, "", 0)}
    assert await stable_fetch(b, "g", {T: [0, 2]}) == {(T, 0): (3, 0), (T, 2): (-1, 0)}
    assert b.groups.groups["g"].pending_txn == {}


async def test_markers_complete_only_their_own_producer(b):
    await txn_commit(b, "g", {(T, 0): 10}, pid=1)
    await txn_commit(b, "g", {(T, 1): 11}, pid=2)
    await end(b, True, pid=1)
    assert await stable_fetch(b, "g", {T: [0, 1]}) == {(T, 0): (10, 0), (T, 1): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    await end(b, True, pid=2)
    assert await stable_fetch(b, "g", {T: [0, 1]}) == {(T, 0): (10, 0), (T, 1): (11, 0)}


async def test_a_marker_completes_only_the_groups_of_its_partition(b):
    assert b.groups.store.partition_of("g") != b.groups.store.partition_of("h")
    await txn_commit(b, "g", {(T, 0): 10})
    await txn_commit(b, "h", {(T, 0): 20})
    await end(b, True, groups=("g",))
    assert await stable_fetch(b, "g", {T: [0]}) == {(T, 0): (10, 0)}
    assert await stable_fetch(b, "h", {T: [0]}) == {(T, 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    await end(b, False, groups=("h",))
    assert await stable_fetch(b, "h", {T: [0]}) == {(T, 0): (-1, 0)}


async def test_require_stable_in_a_v8_request_and_for_every_partition(b):
    await commit(b, "g", {(T, 0): 3, (T, 1): 4})
    await txn_commit(b, "g", {(T, 1): 14})
    assert await stable_fetch(b, "g", None) == {(T, 0): (3, 0), (T, 1): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    Group = sub(9, "OffsetFetchRequestGroup")
    body = req(9, groups=[Group(group_id="g", topics=None)], require_stable=True)
    resp = await call(b, 9, 8, body)
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in resp.groups[0].topics[0].partitions] == [
        (0, 3, 0), (1, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT)]  # fmt: skip
    plain = await call(b, 9, 8, req(9, groups=[Group(group_id="g", topics=None)]))
    assert [(p.committed_offset, p.error_code) for p in plain.groups[0].topics[0].partitions] == [(3, 0), (4, 0)]


async def test_a_newer_plain_commit_wins_over_an_older_transactional_one(b):
    await txn_commit(b, "g", {(T, 0): 10, (T, 1): 11})
    await commit(b, "g", {(T, 0): 50})  # written after the transactional record: Kafka keeps it
    await end(b, True)
    assert (await fetch(b, "g", {T: [0, 1]}))[1] == {(T, 0): (50, "m", 0), (T, 1): (11, "m", 0)}
    await commit(b, "g", {(T, 1): 60})
    await txn_commit(b, "g", {(T, 1): 70})  # a newer transactional record does win
    await end(b, True)
    assert (await fetch(b, "g", {T: [1]}))[1] == {(T, 1): (70, "m", 0)}
    again = reopen(b)
    assert (await fetch(again, "g", {T: [0, 1]}))[1] == {(T, 0): (50, "m", 0), (T, 1): (70, "m", 0)}


async def test_a_restart_replays_committed_aborted_and_open_transactions(b):
    await commit(b, "g", {(T, 0): 1, (T, 1): 1, (T, 2): 1})
    await txn_commit(b, "g", {(T, 0): 10}, pid=1)
    await txn_commit(b, "g", {(T, 1): 20}, pid=2)
    await txn_commit(b, "g", {(T, 2): 30}, pid=3)
    await txn_commit(b, "other", {(T, 0): 40}, pid=1)
    await end(b, True, groups=("g", "other"), pid=1)
    await end(b, False, pid=2)
    again = reopen(b)
    assert (await fetch(again, "g", {T: [0, 1, 2]}))[1] == {(T, 0): (10, "m", 0), (T, 1): (1, "m", 0),
                                                            (T, 2): (1, "m", 0)}  # fmt: skip
    assert (await fetch(again, "other", {T: [0]}))[1] == {(T, 0): (40, "m", 0)}
    unstable = ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert await stable_fetch(again, "g", {T: [1, 2]}) == {(T, 1): (1, 0), (T, 2): (-1, unstable)}
    assert list(again.groups.groups["g"].pending_txn) == [3]
    index = again.groups.store.partition_of("g")  # the coordinator lost the group names: it knows the partition
    await end(again, True, groups=(), pid=3, partitions=[index])
    assert (await fetch(again, "g", {T: [2]}))[1] == {(T, 2): (30, "m", 0)}
    assert (await fetch(reopen(again), "g", {T: [0, 1, 2]}))[1] == {
        (T, 0): (10, "m", 0), (T, 1): (1, "m", 0), (T, 2): (30, "m", 0)}  # fmt: skip


async def test_a_group_with_only_pending_offsets_survives_a_restart(b):
    await txn_commit(b, "fresh", {(T, 0): 5})
    again = reopen(b)
    assert await stable_fetch(again, "fresh", {T: [0]}) == {(T, 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    await end(again, True, groups=("fresh",))
    assert (await fetch(again, "fresh", {T: [0]}))[1] == {(T, 0): (5, "m", 0)}


@pytest.mark.parametrize(("answer", "version", "expected"), [
    (ErrorCode.INVALID_PRODUCER_ID_MAPPING, 3, ErrorCode.INVALID_PRODUCER_ID_MAPPING),
    (ErrorCode.INVALID_TXN_STATE, 0, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.CONCURRENT_TRANSACTIONS, 2, ErrorCode.CONCURRENT_TRANSACTIONS),
    (ErrorCode.PRODUCER_FENCED, 4, ErrorCode.INVALID_PRODUCER_EPOCH),
    (ErrorCode.TRANSACTION_ABORTABLE, 3, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.TRANSACTION_ABORTABLE, 4, ErrorCode.TRANSACTION_ABORTABLE),
])  # fmt: skip
async def test_the_transaction_coordinator_refusal_goes_on_every_partition(b, answer, version, expected):
    b.transactions.error = answer
    before = len(log_batches(b))
    got = await txn_commit(b, "g", {(T, 0): 10, (T, 1): 11, (T, 7): 1, ("nope", 0): 1}, version=version)
    assert got == {(T, 0): expected, (T, 1): expected, (T, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                   ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}  # fmt: skip
    assert len(log_batches(b)) == before and "g" not in b.groups.groups


async def test_unknown_partitions_are_answered_and_the_rest_written(b):
    got = await txn_commit(b, "g", {(T, 0): 10, (T, 3): 1, ("nope", 0): 1})
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert got == {(T, 0): 0, (T, 3): unknown, ("nope", 0): unknown}
    assert list(b.groups.groups["g"].pending_txn[PID]) == [(T, 0)]
    b.transactions.asked.clear()
    assert await txn_commit(b, "g", {("nope", 0): 1}) == {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert b.transactions.asked == []  # nothing known: the coordinator is not even asked


async def test_group_id_metadata_and_coordinator_checks(groups_broker):
    groups_broker.transactions = FakeTxns()
    await create_ok(groups_broker, T, 1)
    got = await txn_commit(groups_broker, "g", {(T, 0): 1})  # __consumer_offsets does not exist yet
    assert got == {(T, 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    await groups_broker.groups.store.ready()
    assert await txn_commit(groups_broker, "", {(T, 0): 1}) == {(T, 0): ErrorCode.INVALID_GROUP_ID}
    Topic = sub(28, "TxnOffsetCommitRequestTopic")
    parts = [Topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                   committed_metadata="x" * 4097)]  # fmt: skip
    body = req(28, transactional_id="tx", group_id="g", producer_id=PID, producer_epoch=EPOCH,
               topics=[Topic(name=T, partitions=parts)])  # fmt: skip
    resp = await call(groups_broker, 28, 3, body)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.OFFSET_METADATA_TOO_LARGE


async def test_member_and_generation_checks_from_v3(b):
    got = await txn_commit(b, "nobody", {(T, 0): 1}, generation=2, member_id="m")
    assert got == {(T, 0): ErrorCode.ILLEGAL_GENERATION}
    assert "nobody" not in b.groups.groups
    joined = await join_new(b)  # CompletingRebalance: unlike OffsetCommit, a transactional commit is accepted
    member, generation = joined.member_id, joined.generation_id
    assert await txn_commit(b, "g", {(T, 0): 1}, generation=generation, member_id=member) == {(T, 0): 0}
    await sync(b, "g", generation, member, {member: b"x"})
    cases = [
        (dict(generation=generation + 1, member_id=member), ErrorCode.ILLEGAL_GENERATION),
        (dict(generation=generation, member_id="ghost"), ErrorCode.UNKNOWN_MEMBER_ID),
        (dict(generation=-1, member_id="ghost"), ErrorCode.UNKNOWN_MEMBER_ID),
        (dict(generation=generation, member_id=member, instance="unknown"), ErrorCode.UNKNOWN_MEMBER_ID),
        (dict(generation=generation, member_id=member), ErrorCode.NONE),
        (dict(), ErrorCode.NONE),  # no member at all: allowed even in a non-empty group (v0-2 carry none)
        (dict(version=2, generation=generation + 5, member_id="ghost"), ErrorCode.NONE),  # v0-2 cannot say
    ]
    for kw, expected in cases:
        assert await txn_commit(b, "g", {(T, 0): 1}, **kw) == {(T, 0): expected}, kw


async def test_an_empty_group_takes_generation_minus_one_whatever_the_member(b):
    await commit(b, "simple", {(T, 0): 1})
    assert await txn_commit(b, "simple", {(T, 0): 2}, member_id="someone") == {(T, 0): 0}
    assert await txn_commit(b, "simple", {(T, 0): 2}, generation=0, member_id="someone") == {
        (T, 0): ErrorCode.UNKNOWN_MEMBER_ID}  # fmt: skip


async def test_a_replaced_static_member_is_fenced(b):
    first = await join_new(b, instance="i1")
    await sync(b, "g", first.generation_id, first.member_id, {first.member_id: b""}, instance="i1")
    second = await join_new(b, instance="i1")  # the same instance again: a new member id, the old one fenced
    got = await txn_commit(b, "g", {(T, 0): 1}, generation=second.generation_id, member_id=first.member_id,
                           instance="i1")  # fmt: skip
    assert got == {(T, 0): ErrorCode.FENCED_INSTANCE_ID}


async def test_tombstones_drop_pending_offsets(b):
    await commit(b, "g", {(T, 0): 3})
    await txn_commit(b, "g", {(T, 0): 10, (T, 1): 11})
    Topic = sub(47, "OffsetDeleteRequestTopic")
    body = req(47, group_id="g", topics=[Topic(name=T, partitions=[Topic.OffsetDeleteRequestPartition(
        partition_index=1)])])  # fmt: skip
    assert (await call(b, 47, 0, body)).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert await stable_fetch(b, "g", {T: [0, 1]}) == {(T, 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (T, 1): (-1, 0)}
    await end(b, True)
    assert (await fetch(b, "g", {T: [0, 1]}))[1] == {(T, 0): (10, "m", 0), (T, 1): (-1, "", 0)}
    assert (await fetch(reopen(b), "g", {T: [0, 1]}))[1] == {(T, 0): (10, "m", 0), (T, 1): (-1, "", 0)}


async def test_deleting_the_group_or_topic_drops_pending_offsets(b):
    await txn_commit(b, "gone", {(T, 0): 10})
    resp = await call(b, 42, 2, req(42, groups_names=["gone"]))
    assert resp.results[0].error_code == ErrorCode.NONE
    await end(b, True, groups=("gone",))
    assert "gone" not in b.groups.groups and "gone" not in reopen(b).groups.groups


async def test_pending_offsets_do_not_expire(b):
    retention = b.config.offsets_retention_minutes * 60_000
    await commit(b, "s", {(T, 0): 3})
    await txn_commit(b, "s", {(T, 0): 10})
    tick(b, retention + 1)
    await b.groups.expire_offsets()
    assert "s" in b.groups.groups and (T, 0) in b.groups.groups["s"].offsets
    await end(b, True, groups=("s",))
    assert (await fetch(b, "s", {T: [0]}))[1] == {(T, 0): (10, "m", 0)}


async def test_with_the_real_transaction_coordinator(groups_broker):
    """InitProducerId, AddOffsetsToTxn, TxnOffsetCommit, EndTxn: the coordinator calls ``complete_transaction``."""
    b = groups_broker
    await create_ok(b, T, 1)
    init = await call(b, 22, 3, req(22, transactional_id="tx", transaction_timeout_ms=60_000))
    assert init.error_code == ErrorCode.NONE
    ids = dict(transactional_id="tx", producer_id=init.producer_id, producer_epoch=init.producer_epoch)
    assert (await call(b, 25, 3, req(25, group_id="g", **ids), timeout=30)).error_code == ErrorCode.NONE
    got = await txn_commit(b, "g", {(T, 0): 10}, pid=init.producer_id, epoch=init.producer_epoch)
    assert got == {(T, 0): ErrorCode.NONE}
    refused = await txn_commit(b, "g", {(T, 0): 10}, pid=init.producer_id, epoch=init.producer_epoch + 1)
    assert refused == {(T, 0): ErrorCode.INVALID_PRODUCER_EPOCH}  # PRODUCER_FENCED, as Kafka's verification says
    assert await stable_fetch(b, "g", {T: [0]}) == {(T, 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    assert (await call(b, 26, 3, req(26, committed=True, **ids))).error_code == ErrorCode.NONE
    assert await stable_fetch(b, "g", {T: [0]}) == {(T, 0): (10, 0)}
    assert marker_type(log_batches(b)[-1].buffer) == COMMIT
    late = await txn_commit(b, "g", {(T, 0): 11}, pid=init.producer_id, epoch=init.producer_epoch)
    assert late == {(T, 0): ErrorCode.INVALID_TXN_STATE}  # the transaction is over


async def test_v5_adds_the_offsets_partition_itself(groups_broker):
    """KIP-890 part 2: no AddOffsetsToTxn before a v5 TxnOffsetCommit; v4 still needs it."""
    b = groups_broker
    await create_ok(b, T, 1)
    await b.groups.store.ready()
    init = await call(b, 22, 5, req(22, transactional_id="tx", transaction_timeout_ms=60_000))
    assert init.error_code == ErrorCode.NONE
    pid, epoch = init.producer_id, init.producer_epoch
    unadded = await txn_commit(b, "g", {(T, 0): 10}, pid=pid, epoch=epoch, version=4)
    assert unadded == {(T, 0): ErrorCode.INVALID_TXN_STATE}
    assert await txn_commit(b, "g", {(T, 0): 10}, pid=pid, epoch=epoch, version=5) == {(T, 0): ErrorCode.NONE}
    meta = b.transactions.txns["tx"]
    assert (meta.state.name, meta.partitions) == ("ONGOING", {(OFFSETS_TOPIC, b.groups.store.partition_of("g"))})
    assert await stable_fetch(b, "g", {T: [0]}) == {(T, 0): (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    ids = dict(transactional_id="tx", producer_id=pid, producer_epoch=epoch)
    assert (await call(b, 26, 4, req(26, committed=True, **ids))).error_code == ErrorCode.NONE
    assert await stable_fetch(b, "g", {T: [0]}) == {(T, 0): (10, 0)}


async def test_v5_refusals_of_the_transaction_coordinator(groups_broker):
    b = groups_broker
    await create_ok(b, T, 1)
    await b.groups.store.ready()
    init = await call(b, 22, 5, req(22, transactional_id="tx", transaction_timeout_ms=60_000))
    pid, epoch = init.producer_id, init.producer_epoch
    fenced = await txn_commit(b, "g", {(T, 0): 10}, pid=pid, epoch=epoch + 1, version=5)
    assert fenced == {(T, 0): ErrorCode.INVALID_PRODUCER_EPOCH}  # PRODUCER_FENCED, as Kafka's verification says
    stranger = await txn_commit(b, "g", {(T, 0): 10}, pid=pid + 1, epoch=epoch, version=5)
    assert stranger == {(T, 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert b.transactions.txns["tx"].partitions == set() and "g" not in b.groups.groups


def test_the_handler_serves_versions_0_to_5():
    h = REGISTRY[28]
    assert (h.min_version, h.max_version) == (0, 5)
