"""WriteTxnMarkers (key 27) through the handler: ending a hanging transaction as ``kafka-transactions.sh abort`` does.

A real broker (``groups_broker``) runs with
``transaction.partition.verification.enable=false``, so Produce takes a
transactional batch its transaction coordinator has no record of: a hanging
transaction, which holds the last stable offset at its first offset for good.
WriteTxnMarkers with the producer id, epoch and coordinator epoch
DescribeProducers shows ends it: an ABORT moves the LSO past its marker and
read_committed Fetch lists the transaction as aborted (also after a restart),
a COMMIT makes its records readable. Refused, with nothing written: a marker
epoch below the producer's (INVALID_PRODUCER_EPOCH), a coordinator epoch below
the one of the producer's last marker (TRANSACTION_COORDINATOR_FENCED), an
unknown topic or partition (UNKNOWN_TOPIC_OR_PARTITION, the other partitions
still written). A ``__consumer_offsets`` partition goes to the group
coordinator: the producer's TxnOffsetCommit offsets become the group's
committed offsets, or are dropped. v2 markers (KIP-1228) of transaction
version 0 or 1 are v1 markers; of version 2 they need an epoch above the
producer's, except the retry of the one that ended its transaction. Last, the
v0 and v1 layouts byte for byte.
"""

from __future__ import annotations

import struct

import pytest

from broker.groups.store import OFFSETS_TOPIC
from broker.transactions.markers import write as write_markers
from broker.transactions.state import TxnMetadata
from protocol import API_BY_NAME, ErrorCode, message_class
from protocol.codec import decode_body, encode_body
from protocol.records.batches import iter_batches

from ._admin_client import call, create_ok, delete_topic, produce, req, sub
from ._group_client import clock, fetch as offset_fetch, groups_broker  # noqa: F401  (fixtures)
from .test_config_handlers import SET, incremental
from .test_transactions import fetch, latest, send
from .test_txn_offsets import txn_commit

PID, EPOCH = 4242, 3
GHOST = "ghost"  # the transactional id of the hanging producer: the coordinator has never heard of it
WRITE_TXN_MARKERS = API_BY_NAME["WriteTxnMarkers"]


@pytest.fixture
def group_props():
    return {"transaction.partition.verification.enable": "false"}


async def markers(broker, *entries, version=1, transaction_version=0):
    """``entries``: (producer id, epoch, commit, coordinator epoch, {topic: [partitions]}) each;
    returns [(producer id, {(topic, partition): error})] in the response's order."""
    Marker = sub(27, "WritableTxnMarker")
    body = req(27, markers=[
        Marker(producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator,
               transaction_version=transaction_version, topics=[Marker.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in parts.items()])
        for pid, epoch, commit, coordinator, parts in entries
    ])  # fmt: skip
    resp = await call(broker, 27, version, body)
    return [(m.producer_id, {(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions})
            for m in resp.markers]  # fmt: skip


async def abort(broker, epoch=EPOCH, coordinator=0, pid=PID, commit=False, version=1, topic="t", tv=0):
    """One marker to ``topic``-0 (of transaction version ``tv`` from v2); its error."""
    entry = (pid, epoch, commit, coordinator, {topic: [0]})
    [(_, errors)] = await markers(broker, entry, version=version, transaction_version=tv)
    return errors[(topic, 0)]


async def producer_state(broker, topic="t"):
    """DescribeProducers of ``topic``-0: (epoch, coordinator epoch, current transaction's first offset) by id."""
    body = req(61, topics=[sub(61, "TopicRequest")(name=topic, partition_indexes=[0])])
    states = (await call(broker, 61, 0, body)).topics[0].partitions[0].active_producers
    return {s.producer_id: (s.producer_epoch, s.coordinator_epoch, s.current_txn_start_offset) for s in states}


async def hang(broker):
    """``t``-0: a plain record ``x`` at 0, then the ghost producer's open transaction ``a``, ``b`` at 1-2."""
    await create_ok(broker, "t", 1)
    await produce(broker, "t", [1_760_000_000_000])
    assert await send(broker, PID, EPOCH, 0, [b"a", b"b"], txn=GHOST) == (ErrorCode.NONE, 1)
    assert GHOST not in broker.transactions.txns
    assert await producer_state(broker) == {PID: (EPOCH, -1, 1)}  # what kafka-transactions.sh find-hanging sees


def log_end(broker, topic="t"):
    return broker.topics.partition(topic, 0).log.log_end_offset


async def test_an_abort_marker_ends_a_hanging_transaction(groups_broker):
    await hang(groups_broker)
    assert await fetch(groups_broker, committed=True) == ([b"v0"], 3, 1, [])
    assert await abort(groups_broker) == ErrorCode.NONE
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 4, 4, [(PID, 1)])
    assert (await latest(groups_broker, True), await latest(groups_broker, False)) == (4, 4)
    assert await producer_state(groups_broker) == {PID: (EPOCH, 0, -1)}
    assert await abort(groups_broker) == ErrorCode.NONE  # a retry: one more marker, nothing open to end
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 5, 5, [(PID, 1)])
    broker = groups_broker.reopen()  # the marker and the aborted transaction's index entry are on disk
    assert await fetch(broker, committed=True) == ([b"v0", b"a", b"b"], 5, 5, [(PID, 1)])
    assert await producer_state(broker) == {PID: (EPOCH, 0, -1)}


async def test_a_commit_marker_makes_the_transaction_readable(groups_broker):
    await hang(groups_broker)
    assert await abort(groups_broker, commit=True, version=0) == ErrorCode.NONE
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 4, 4, [])


async def test_a_marker_below_the_producers_epoch_is_refused(groups_broker):
    await hang(groups_broker)
    assert await abort(groups_broker, epoch=EPOCH - 1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert await abort(groups_broker, epoch=EPOCH - 1, coordinator=-5) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log_end(groups_broker) == 3
    assert (await fetch(groups_broker, committed=True))[2] == 1  # still open
    assert await abort(groups_broker, epoch=EPOCH + 1) == ErrorCode.NONE  # a higher epoch fences the producer
    assert await producer_state(groups_broker) == {PID: (EPOCH + 1, 0, -1)}
    assert (await send(groups_broker, PID, EPOCH, 2, [b"c"], txn=GHOST))[0] == ErrorCode.INVALID_PRODUCER_EPOCH


@pytest.mark.parametrize("tv", [0, 1])
async def test_v2_markers_before_transaction_version_2_are_v1_markers(groups_broker, tv):
    await hang(groups_broker)
    assert await abort(groups_broker, epoch=EPOCH - 1, version=2, tv=tv) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert await abort(groups_broker, version=2, tv=tv) == ErrorCode.NONE  # the producer's own epoch
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 4, 4, [(PID, 1)])


async def test_a_transaction_version_2_marker_needs_a_bumped_epoch(groups_broker):
    """KIP-1228: a TV2 coordinator bumps the epoch before its markers; the same epoch ends no open transaction."""
    await hang(groups_broker)
    assert await abort(groups_broker, version=2, tv=2) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert await abort(groups_broker, epoch=EPOCH, version=1, tv=2) == ErrorCode.NONE  # v1 carries no version
    assert log_end(groups_broker) == 4


async def test_a_transaction_version_2_marker_with_a_bumped_epoch_and_its_retry(groups_broker):
    await hang(groups_broker)
    assert await abort(groups_broker, epoch=EPOCH + 1, version=2, tv=2) == ErrorCode.NONE
    assert await producer_state(groups_broker) == {PID: (EPOCH + 1, 0, -1)}
    assert await abort(groups_broker, epoch=EPOCH + 1, version=2, tv=2) == ErrorCode.NONE  # the retry (KAFKA-19999)
    assert log_end(groups_broker) == 5  # written again, ending nothing
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 5, 5, [(PID, 1)])
    assert await abort(groups_broker, epoch=EPOCH, version=2, tv=2) == ErrorCode.INVALID_PRODUCER_EPOCH


async def test_a_marker_of_an_older_coordinator_is_fenced(groups_broker):
    await hang(groups_broker)
    assert await abort(groups_broker, coordinator=5) == ErrorCode.NONE
    assert await send(groups_broker, PID, EPOCH, 2, [b"c"], txn=GHOST) == (ErrorCode.NONE, 4)
    assert await abort(groups_broker, coordinator=4, commit=True) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log_end(groups_broker) == 5
    assert await producer_state(groups_broker) == {PID: (EPOCH, 5, 4)}
    assert await abort(groups_broker, coordinator=5, commit=True) == ErrorCode.NONE
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b", b"c"], 6, 6, [(PID, 1)])


async def test_unknown_partitions_are_answered_and_the_others_written(groups_broker):
    await hang(groups_broker)
    answer = await markers(groups_broker,
                           (PID, EPOCH, False, 0, {"t": [0, 7, 0], "nope": [0]}),
                           (99, 0, True, 0, {}),  # no partition: no entry, as in Kafka
                           (77, 1, True, 0, {"t": [0], "nope": [1]}))  # fmt: skip
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answer == [(PID, {("t", 0): ErrorCode.NONE, ("t", 7): unknown, ("nope", 0): unknown}),
                      (77, {("t", 0): ErrorCode.NONE, ("nope", 1): unknown})]  # fmt: skip
    assert log_end(groups_broker) == 5  # one marker each: t-0 named twice is written once
    assert await fetch(groups_broker, committed=True) == ([b"v0", b"a", b"b"], 5, 5, [(PID, 1)])
    assert await producer_state(groups_broker) == {PID: (EPOCH, 0, -1), 77: (1, 0, -1)}
    assert await markers(groups_broker) == []


async def test_a_consumer_offsets_partition_completes_the_pending_offsets(groups_broker):
    await create_ok(groups_broker, "orders", 3)
    await groups_broker.groups.store.ready()
    index = groups_broker.groups.store.partition_of("g")
    tp = {OFFSETS_TOPIC: [index]}
    assert await txn_commit(groups_broker, "g", {("orders", 0): 10}, pid=PID, epoch=EPOCH) == {("orders", 0): 0}
    assert await offset_fetch(groups_broker, "g") == (ErrorCode.NONE, {})  # pending: not yet the group's
    stale = await markers(groups_broker, (PID, EPOCH - 1, True, 0, tp))
    assert stale == [(PID, {(OFFSETS_TOPIC, index): ErrorCode.INVALID_PRODUCER_EPOCH})]
    assert await markers(groups_broker, (PID, EPOCH, True, 0, tp)) == [(PID, {(OFFSETS_TOPIC, index): 0})]
    assert (await offset_fetch(groups_broker, "g"))[1] == {("orders", 0): (10, "m", 0)}
    assert await txn_commit(groups_broker, "g", {("orders", 0): 20}, pid=PID, epoch=EPOCH) == {("orders", 0): 0}
    assert await markers(groups_broker, (PID, EPOCH, False, 0, tp), version=0) == [(PID, {(OFFSETS_TOPIC, index): 0})]
    assert groups_broker.groups.groups["g"].pending_txn == {}
    assert (await offset_fetch(groups_broker, "g"))[1] == {("orders", 0): (10, "m", 0)}
    broker = groups_broker.reopen()  # the markers are in __consumer_offsets: the replay agrees
    assert (await offset_fetch(broker, "g"))[1] == {("orders", 0): (10, "m", 0)}


def leader_epochs(broker, topic, partition):
    """The ``partition_leader_epoch`` of every batch in the partition's log, in order."""
    log = broker.topics.partition(topic, partition).log
    piece = log.read(log.log_start_offset, 1 << 20, min_one_message=True)
    return [b.partition_leader_epoch for b in iter_batches(piece.read_bytes())]


async def test_the_broker_stamps_its_own_batches_with_the_leader_epoch(groups_broker):
    """As Kafka's ``appendAsLeader``: markers, and ``__consumer_offsets`` records, carry epoch 0, not -1 (the Java
    consumer takes its position's epoch from every batch, a control batch too, and commits it)."""
    await hang(groups_broker)
    await groups_broker.groups.store.ready()
    index = groups_broker.groups.store.partition_of("g")
    assert await txn_commit(groups_broker, "g", {("t", 0): 1}, pid=PID, epoch=EPOCH) == {("t", 0): 0}
    parts = {"t": [0], OFFSETS_TOPIC: [index]}
    assert await markers(groups_broker, (PID, EPOCH, True, 0, parts)) == [(PID, {("t", 0): 0, (OFFSETS_TOPIC, index): 0})]
    assert leader_epochs(groups_broker, "t", 0) == [0, 0, 0]  # the plain record, the transaction, its marker
    assert leader_epochs(groups_broker, OFFSETS_TOPIC, index) == [0, 0]  # the pending offset, its marker


# ---------------------------------------------------------------- the layouts


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _cs(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()


def _request():
    cls = message_class(WRITE_TXN_MARKERS, True)
    Topic = cls.WritableTxnMarker.WritableTxnMarkerTopic
    return cls(markers=[cls.WritableTxnMarker(producer_id=7, producer_epoch=3, transaction_result=False,
                                              topics=[Topic(name="t", partition_indexes=[0, 2])],
                                              coordinator_epoch=5)])  # fmt: skip


def _response():
    cls = message_class(WRITE_TXN_MARKERS, False)
    Topic = cls.WritableTxnMarkerResult.WritableTxnMarkerTopicResult
    part = Topic.WritableTxnMarkerPartitionResult
    topic = Topic(name="t", partitions=[part(partition_index=0, error_code=0), part(partition_index=2, error_code=52)])
    return cls(markers=[cls.WritableTxnMarkerResult(producer_id=7, topics=[topic])])


@pytest.mark.parametrize("version", [0, 1])
def test_the_v0_and_v1_layouts(version):
    if version == 0:  # int32 array lengths, int16 string lengths
        request = (struct.pack(">i", 1) + struct.pack(">qh?", 7, 3, False) + struct.pack(">i", 1) + _s("t")
                   + struct.pack(">iii", 2, 0, 2) + struct.pack(">i", 5))  # fmt: skip
        response = (struct.pack(">i", 1) + struct.pack(">q", 7) + struct.pack(">i", 1) + _s("t")
                    + struct.pack(">i", 2) + struct.pack(">ih", 0, 0) + struct.pack(">ih", 2, 52))  # fmt: skip
    else:  # flexible: compact arrays and strings (length + 1), a tag section after each struct
        request = (b"\x02" + struct.pack(">qh?", 7, 3, False) + b"\x02" + _cs("t") + b"\x03"
                   + struct.pack(">ii", 0, 2) + b"\x00" + struct.pack(">i", 5) + b"\x00" + b"\x00")  # fmt: skip
        response = (b"\x02" + struct.pack(">q", 7) + b"\x02" + _cs("t") + b"\x03" + struct.pack(">ih", 0, 0)
                    + b"\x00" + struct.pack(">ih", 2, 52) + b"\x00" + b"\x00" + b"\x00" + b"\x00")  # fmt: skip
    assert encode_body(WRITE_TXN_MARKERS, version, _request(), True) == request
    assert decode_body(WRITE_TXN_MARKERS, version, request, True) == _request()
    assert encode_body(WRITE_TXN_MARKERS, version, _response(), False) == response
    assert decode_body(WRITE_TXN_MARKERS, version, response, False) == _response()
    assert WRITE_TXN_MARKERS.request_header_version(version) == 1 + version
    assert WRITE_TXN_MARKERS.response_header_version(version) == version


async def test_a_consumer_offsets_marker_in_an_offline_log_dir_answers_kafka_storage_error(groups_broker):
    """The append's error, as Kafka's KafkaApis answers the group coordinator's failed ``completeTransaction``
    (it was NOT_LEADER_OR_FOLLOWER); the pending offsets stay pending."""
    await create_ok(groups_broker, "orders", 3)
    await groups_broker.groups.store.ready()
    index = groups_broker.groups.store.partition_of("g")
    assert await txn_commit(groups_broker, "g", {("orders", 0): 10}, pid=PID, epoch=EPOCH) == {("orders", 0): 0}
    partition = groups_broker.topics.partition(OFFSETS_TOPIC, index)
    groups_broker.topics.manager.failures.fail_dir(partition.log.dir.parent, "injected")
    answer = await markers(groups_broker, (PID, EPOCH, True, 0, {OFFSETS_TOPIC: [index]}))
    assert answer == [(PID, {(OFFSETS_TOPIC, index): ErrorCode.KAFKA_STORAGE_ERROR})]
    assert PID in groups_broker.groups.groups["g"].pending_txn


DURABLE = {"transaction.partition.verification.enable": "false", "log.flush.durable.enable": "true"}


def _dir_fails_before_the_round(broker, topic="t"):
    """``broker.wait_durable`` first takes ``topic``-0's log dir offline: the group commit forgets its log, so
    the round succeeds without fsyncing what was appended to it."""
    log, real_wait = broker.topics.partition(topic, 0).log, broker.wait_durable

    async def wait() -> None:
        broker.topics.manager.failures.fail_dir(log.dir.parent, "injected")
        await real_wait()

    broker.wait_durable = wait


@pytest.mark.parametrize("group_props", [DURABLE])
async def test_a_marker_whose_log_dir_fails_before_it_is_durable_answers_kafka_storage_error(groups_broker):
    """Durable mode: the marker is appended, then its dir fails before a group-commit round takes its log. Kafka
    answers an acks=-1 append whose partition went offline while it waited KAFKA_STORAGE_ERROR
    (``DelayedProduce.tryComplete``, ``getPartitionOrError``), which the transaction coordinator retries
    (``TransactionMarkerRequestCompletionHandler``). It was NONE: a marker never fsynced reported written."""
    await hang(groups_broker)
    _dir_fails_before_the_round(groups_broker)
    assert await abort(groups_broker) == ErrorCode.KAFKA_STORAGE_ERROR


@pytest.mark.parametrize("group_props", [DURABLE])
async def test_the_coordinators_own_marker_whose_log_dir_fails_before_it_is_durable_is_not_written(groups_broker):
    """The same for the markers our coordinator writes in-process: ``markers.write`` says False, so the
    transaction stays prepared and its markers are retried, as Kafka's coordinator retries a
    KAFKA_STORAGE_ERROR. It said True: the transaction would complete with a marker lost at the restart."""
    await hang(groups_broker)
    _dir_fails_before_the_round(groups_broker)
    meta = TxnMetadata(GHOST, PID, EPOCH, 60_000, partitions={("t", 0)})
    assert await write_markers(groups_broker, meta, False, set()) is False


def _deleted_before_the_round(broker, topic="t", recreated=False):
    """``broker.wait_durable`` first deletes ``topic`` (DeleteTopics), and creates it again if ``recreated``:
    the round runs without the log the marker went to."""
    real_wait = broker.wait_durable

    async def wait() -> None:
        broker.wait_durable = real_wait
        await delete_topic(broker, topic)
        if recreated:
            await create_ok(broker, topic, 1)
        await real_wait()

    broker.wait_durable = wait


@pytest.mark.parametrize("recreated", [False, True], ids=["deleted", "deleted and created again"])
@pytest.mark.parametrize("group_props", [DURABLE])
async def test_a_marker_whose_partition_is_deleted_before_it_is_durable_answers_unknown_topic_or_partition(
        groups_broker, recreated):  # fmt: skip
    """Durable mode: the marker is appended, then its topic is deleted while the answer waits for the round.
    Kafka appends markers with acks -1; its purgatory finds no partition (``DelayedProduce.tryComplete``,
    ``ReplicaManager.getPartitionOrError``): UNKNOWN_TOPIC_OR_PARTITION. It was NONE. So it is when a topic
    of that name was created again meanwhile: Kafka completes the waiting append when it removes the
    partition, and the new partition does not hold the marker (it was answered NONE)."""
    await hang(groups_broker)
    _deleted_before_the_round(groups_broker, recreated=recreated)
    assert await abort(groups_broker) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = groups_broker.topics.partition("t", 0)
    assert partition.log.log_end_offset == 0 if recreated else partition is None


@pytest.mark.parametrize("group_props", [DURABLE])
async def test_the_coordinators_own_marker_whose_partition_is_deleted_before_it_is_durable_is_skipped(groups_broker):
    """The same for our coordinator's in-process markers: a deleted partition is skipped, as Kafka's coordinator
    retries the UNKNOWN_TOPIC_OR_PARTITION and then, finding no leader for it, drops it from the transaction
    (``TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue``): ``markers.write`` says True."""
    await hang(groups_broker)
    _deleted_before_the_round(groups_broker)
    meta = TxnMetadata(GHOST, PID, EPOCH, 60_000, partitions={("t", 0)})
    assert await write_markers(groups_broker, meta, False, set()) is True
    assert groups_broker.topics.partition("t", 0) is None


@pytest.mark.parametrize("group_props", [DURABLE])
async def test_a_marker_whose_topic_s_config_changes_before_it_is_durable_answers_none(groups_broker):
    """Durable mode: the topic's config is altered while the marker's answer waits for the round (a new
    cached Partition, the same log). The marker is in that log: NONE, from the handler and for our
    coordinator's own markers. Both were UNKNOWN_TOPIC_OR_PARTITION, taken for a topic created again."""
    await hang(groups_broker)
    _config_altered_before_the_round(groups_broker)
    assert await abort(groups_broker) == ErrorCode.NONE
    meta = TxnMetadata(GHOST, PID, EPOCH, 60_000, partitions={("t", 0)})
    _config_altered_before_the_round(groups_broker)
    assert await write_markers(groups_broker, meta, False, set()) is True
    assert log_end(groups_broker) == 5  # x, a, b, the handler's ABORT, the coordinator's


def _config_altered_before_the_round(broker, topic="t"):
    real_wait = broker.wait_durable

    async def wait() -> None:
        broker.wait_durable = real_wait
        assert (await incremental(broker, topic, [("retention.ms", SET, "600000")])).error_code == ErrorCode.NONE
        await real_wait()

    broker.wait_durable = wait


@pytest.mark.parametrize("group_props", [DURABLE])
async def test_two_producers_markers_to_a_partition_created_again_between_them_answer_each_its_own_log(
        groups_broker):  # fmt: skip
    """One request: the ghost's ABORT to ``t``-0 and to a ``__consumer_offsets`` partition, then producer 77's
    ABORT to ``t``-0. While the group coordinator writes the offsets marker, ``t`` is deleted and created
    again, so 77's marker goes to the new log. Kafka appends each marker on its own (one acks -1
    ``appendRecords`` per marker, ``KafkaApis.handleWriteTxnMarkersRequest``): the ghost's partition was
    removed, UNKNOWN_TOPIC_OR_PARTITION; 77's is there, NONE. Before, the two were checked against one
    partition (the last written), so the ghost's marker was answered NONE for a log that is gone."""
    await hang(groups_broker)
    await groups_broker.groups.store.ready()
    groups, real = groups_broker.groups, groups_broker.groups.complete_transaction

    async def recreated_first(*args, **kwargs) -> None:
        groups.complete_transaction = real
        await delete_topic(groups_broker, "t")
        await create_ok(groups_broker, "t", 1)
        await real(*args, **kwargs)

    groups.complete_transaction = recreated_first
    answer = await markers(groups_broker, (PID, EPOCH, False, 0, {"t": [0], OFFSETS_TOPIC: [0]}),
                           (77, 0, False, 0, {"t": [0]}))  # fmt: skip
    assert answer == [(PID, {("t", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (OFFSETS_TOPIC, 0): ErrorCode.NONE}),
                      (77, {("t", 0): ErrorCode.NONE})]  # fmt: skip
    assert groups.complete_transaction is real and log_end(groups_broker) == 1  # 77's marker alone
