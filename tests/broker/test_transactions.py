"""The transaction coordinator through the handlers: InitProducerId, AddPartitionsToTxn, Produce, EndTxn.

A real broker (``groups_broker``: real storage, a hand-driven clock,
``__transaction_state`` with 3 partitions) takes frames through ``dispatch``.
Each test follows what Kafka answers a transactional producer, and what a
read_committed consumer then sees: the last stable offset held at the first
open transaction, markers ending it, aborted transactions listed by Fetch.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode
from protocol.records import RecordBatchBuilder, iter_batches

from ._admin_client import call, create_ok, req, sub
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)

TS = 1_760_000_000_000
TS_NOW = 1_700_000_000_000  # the FakeClock's start
TXN = "tx-1"


async def init(broker, txn=TXN, version=4, timeout_ms=60_000, pid=-1, epoch=-1):
    body = req(22, transactional_id=txn, transaction_timeout_ms=timeout_ms, producer_id=pid, producer_epoch=epoch)
    resp = await call(broker, 22, version, body)
    return resp.error_code, resp.producer_id, resp.producer_epoch


async def add(broker, pid, epoch, parts, txn=TXN, version=3):
    Topic = sub(24, "AddPartitionsToTxnTopic")
    topics = [Topic(name=t, partitions=ps) for t, ps in parts.items()]
    resp = await call(broker, 24, version, req(24, transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                                                topics=topics))  # fmt: skip
    return {(t.name, p.partition_index): p.partition_error_code for t in resp.results_by_topic
            for p in t.results_by_partition}  # fmt: skip


async def end(broker, pid, epoch, commit, txn=TXN, version=3):
    body = req(26, transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=commit)
    return (await call(broker, 26, version, body)).error_code


async def send(broker, pid, epoch, seq, values, topic="t", txn=TXN, transactional=True):
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)
    for i, v in enumerate(values):
        b.append(b"k%d" % i, v, timestamp=TS + i)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=b.build())
    body = req(0, transactional_id=txn, acks=-1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    answer = (await call(broker, 0, 9, body)).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


async def fetch(broker, committed, topic="t", offset=0):
    T = sub(1, "FetchTopic")
    part = T.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1 if committed else 0,
               topics=[T(topic=topic, partitions=[part])])  # fmt: skip
    p = (await call(broker, 1, 11, body)).responses[0].partitions[0]
    values = [r.value for b in iter_batches(memoryview(p.records or b"")) if not b.is_control for r in b.iter_records()]
    aborted = None if p.aborted_transactions is None else [(a.producer_id, a.first_offset)
                                                            for a in p.aborted_transactions]  # fmt: skip
    return values, p.high_watermark, p.last_stable_offset, aborted


async def latest(broker, committed, topic="t"):
    T = sub(2, "ListOffsetsTopic")
    body = req(2, replica_id=-1, isolation_level=1 if committed else 0,
               topics=[T(name=topic, partitions=[T.ListOffsetsPartition(partition_index=0,
                                                                        timestamp=-1)])])  # fmt: skip
    return (await call(broker, 2, 5, body)).topics[0].partitions[0].offset


async def open_txn(broker, values=(b"a", b"b")):
    await create_ok(broker, "t", 1)
    error, pid, epoch = await init(broker)
    assert error == ErrorCode.NONE
    assert await add(broker, pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
    assert await send(broker, pid, epoch, 0, list(values)) == (ErrorCode.NONE, 0)
    return pid, epoch


@pytest.mark.parametrize("version", [4, 5])
async def test_init_gives_a_producer_id_and_each_call_bumps_its_epoch(groups_broker, version):
    error, pid, epoch = await init(groups_broker, version=version)
    assert (error, epoch) == (ErrorCode.NONE, 0) and pid >= 0
    assert await init(groups_broker, version=version) == (ErrorCode.NONE, pid, 1)
    assert await init(groups_broker, version=version, pid=pid, epoch=1) == (ErrorCode.NONE, pid, 2)  # KIP-360 bump
    assert await init(groups_broker, version=version, pid=pid, epoch=1) == (ErrorCode.NONE, pid, 2)  # its retry
    assert (await init(groups_broker, version=version, pid=pid, epoch=0))[0] == ErrorCode.PRODUCER_FENCED
    assert (await init(groups_broker, version=3, pid=pid, epoch=0))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    other = await init(groups_broker, txn="tx-2")
    assert other[0] == ErrorCode.NONE and other[1] != pid


async def test_init_refuses_bad_timeouts_and_the_empty_id(groups_broker):
    assert (await init(groups_broker, timeout_ms=900_001))[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert (await init(groups_broker, timeout_ms=0))[0] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert (await init(groups_broker, txn=""))[0] == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("txn", [TXN, None, ""])
async def test_init_refuses_an_id_without_its_epoch_or_an_epoch_without_its_id(groups_broker, txn):
    """Kafka's handleInitProducerIdRequest: INVALID_REQUEST before the coordinator sees the request."""
    invalid = (ErrorCode.INVALID_REQUEST, -1, -1)
    assert await init(groups_broker, txn=txn, version=3, pid=7, epoch=-1) == invalid
    assert await init(groups_broker, txn=txn, version=5, pid=-1, epoch=0) == invalid
    assert await init(groups_broker, txn=txn, timeout_ms=0, pid=-1, epoch=3) == invalid  # before the timeout check
    assert TXN not in groups_broker.transactions.txns  # nothing allocated
    if txn:
        error, _pid, epoch = await init(groups_broker, txn=txn)
        assert (error, epoch) == (ErrorCode.NONE, 0)


@pytest.mark.parametrize("version", [3, 5])
async def test_an_idempotent_producer_sending_its_id_and_epoch_gets_a_new_id(groups_broker, version):
    """Kafka's coordinator gives a producer without a transactional id a new id, epoch 0, whatever it sends."""
    error, pid, epoch = await init(groups_broker, txn=None, version=version)
    assert (error, epoch) == (ErrorCode.NONE, 0)
    again = await init(groups_broker, txn=None, version=version, pid=pid, epoch=epoch)
    assert again[0] == ErrorCode.NONE and again[1] != pid and again[2] == 0


async def test_add_partitions_checks_the_producer_and_the_partitions(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    t0 = ("t", 0)
    assert await add(groups_broker, pid, epoch, {"t": [0]}, txn="nope") == {t0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert await add(groups_broker, pid + 1, epoch, {"t": [0]}) == {t0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert await add(groups_broker, pid, epoch + 1, {"t": [0]}) == {t0: ErrorCode.PRODUCER_FENCED}
    assert await add(groups_broker, pid, epoch + 1, {"t": [0]}, version=1) == {t0: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert await add(groups_broker, pid, epoch, {"t": [0, 7], "__consumer_offsets": [0]}) == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}  # fmt: skip
    assert groups_broker.transactions.txns[TXN].partitions == set()  # nothing was added


async def test_transactional_produce_needs_the_partition_in_the_transaction(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    assert (await send(groups_broker, pid, epoch, 0, [b"x"]))[0] == ErrorCode.INVALID_TXN_STATE
    no_id = await send(groups_broker, pid, epoch, 0, [b"x"], txn=None)
    assert no_id[0] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    await add(groups_broker, pid, epoch, {"t": [0]})
    assert (await send(groups_broker, pid, epoch + 5, 0, [b"x"]))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert await send(groups_broker, pid, epoch, 0, [b"x"]) == (ErrorCode.NONE, 0)


async def test_an_open_transaction_holds_the_last_stable_offset_until_commit(groups_broker):
    pid, epoch = await open_txn(groups_broker)
    assert await fetch(groups_broker, committed=True) == ([], 2, 0, [])  # Kafka: a read_committed read sends a list
    assert (await fetch(groups_broker, committed=False))[:3] == ([b"a", b"b"], 2, 0)
    assert (await latest(groups_broker, True), await latest(groups_broker, False)) == (0, 2)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE
    assert await fetch(groups_broker, committed=True) == ([b"a", b"b"], 3, 3, [])
    assert await latest(groups_broker, True) == 3
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE  # a retry
    assert await end(groups_broker, pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
    assert groups_broker.topics.partition("t", 0).log.log_end_offset == 3  # one marker, not two


async def test_an_aborted_transaction_is_listed_for_read_committed_fetches(groups_broker):
    pid, epoch = await open_txn(groups_broker)
    assert await end(groups_broker, pid, epoch, False) == ErrorCode.NONE
    assert await fetch(groups_broker, committed=True) == ([b"a", b"b"], 3, 3, [(pid, 0)])
    assert await add(groups_broker, pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
    assert await send(groups_broker, pid, epoch, 2, [b"c"]) == (ErrorCode.NONE, 3)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE
    values, _hw, lso, aborted = await fetch(groups_broker, committed=True, offset=3)
    assert (values, lso, aborted) == ([b"c"], 5, [])


async def test_end_in_the_wrong_state_or_by_a_stale_producer(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.INVALID_TXN_STATE  # nothing open
    assert await end(groups_broker, pid, epoch, True, txn="nope") == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert await end(groups_broker, pid, epoch + 3, True) == ErrorCode.PRODUCER_FENCED
    assert await end(groups_broker, pid, epoch + 3, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH


async def test_a_new_instance_aborts_the_open_transaction_and_fences_the_old_one(groups_broker):
    pid, epoch = await open_txn(groups_broker)
    assert await init(groups_broker) == (ErrorCode.NONE, pid, epoch + 2)
    assert await fetch(groups_broker, committed=True) == ([b"a", b"b"], 3, 3, [(pid, 0)])
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    assert (await send(groups_broker, pid, epoch, 2, [b"z"]))[0] == ErrorCode.INVALID_PRODUCER_EPOCH


async def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(groups_broker):
    await create_ok(groups_broker, "t", 1)
    _, pid, epoch = await init(groups_broker, timeout_ms=5000)
    await add(groups_broker, pid, epoch, {"t": [0]})
    await send(groups_broker, pid, epoch, 0, [b"a"])
    groups_broker.clock.now += 5000
    await groups_broker.transactions.abort_timed_out()
    assert (await fetch(groups_broker, committed=True))[2] == 0  # not yet: the timeout is not passed
    groups_broker.clock.now += 1
    await groups_broker.transactions.abort_timed_out()
    assert await fetch(groups_broker, committed=True) == ([b"a"], 2, 2, [(pid, 0)])
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.PRODUCER_FENCED


async def test_state_survives_a_restart_and_a_prepared_commit_is_finished(groups_broker, monkeypatch):
    from broker.transactions import markers

    pid, epoch = await open_txn(groups_broker)
    real_write = markers.write

    async def refuse(*args):
        return False

    monkeypatch.setattr(markers, "write", refuse)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE  # the decision is durable
    assert (await fetch(groups_broker, committed=True))[2] == 0  # but no marker yet
    monkeypatch.setattr(markers, "write", real_write)
    broker = groups_broker.reopen()
    broker.transactions.load()
    assert broker.transactions.txns[TXN].state.name == "PREPARE_COMMIT"
    await broker.transactions.retry_prepared()
    assert await fetch(broker, committed=True) == ([b"a", b"b"], 3, 3, [])
    assert await init(broker) == (ErrorCode.NONE, pid, epoch + 1)


async def test_idle_transactional_ids_expire(groups_broker):
    await init(groups_broker)
    groups_broker.clock.now += 604_800_001
    await groups_broker.transactions.expire_ids()
    assert TXN not in groups_broker.transactions.txns
    broker = groups_broker.reopen()
    broker.transactions.load()
    assert TXN not in broker.transactions.txns


async def test_describe_producers_shows_the_open_transaction(groups_broker):
    pid, epoch = await open_txn(groups_broker)

    async def state():
        body = req(61, topics=[sub(61, "TopicRequest")(name="t", partition_indexes=[0])])
        s = (await call(groups_broker, 61, 0, body)).topics[0].partitions[0].active_producers[0]
        return s.producer_id, s.producer_epoch, s.current_txn_start_offset, s.coordinator_epoch

    assert await state() == (pid, epoch, 0, -1)
    await end(groups_broker, pid, epoch, True)
    assert await state() == (pid, epoch, -1, 0)


async def test_describe_and_list_transactions(groups_broker):
    pid, epoch = await open_txn(groups_broker)
    await init(groups_broker, txn="tx-idle")
    resp = await call(groups_broker, 65, 0, req(65, transactional_ids=[TXN, "nope", ""]))
    found, unknown, empty = resp.transaction_states
    assert (found.error_code, found.transaction_state, found.transaction_timeout_ms, found.producer_id,
            found.producer_epoch, found.transaction_start_time_ms) == (0, "Ongoing", 60_000, pid, epoch, TS_NOW)
    assert [(t.topic, t.partitions) for t in found.topics] == [("t", [0])]
    assert (unknown.error_code, empty.error_code) == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, ErrorCode.INVALID_REQUEST)

    async def listed(version=1, **filters):
        resp = await call(groups_broker, 66, version, req(66, **filters))
        return resp.unknown_state_filters, [(s.transactional_id, s.transaction_state) for s in resp.transaction_states]

    assert await listed() == ([], [(TXN, "Ongoing"), ("tx-idle", "Empty")])
    assert await listed(state_filters=["Ongoing", "Bogus"]) == (["Bogus"], [(TXN, "Ongoing")])
    assert await listed(producer_id_filters=[pid]) == ([], [(TXN, "Ongoing")])
    groups_broker.clock.now += 1000
    assert await listed(state_filters=["Ongoing"], duration_filter=999) == ([], [(TXN, "Ongoing")])
    assert await listed(state_filters=["Ongoing"], duration_filter=1000) == ([], [])
    assert await listed(version=0, state_filters=["Ongoing"], duration_filter=1000) == ([], [(TXN, "Ongoing")])


async def test_list_transactions_v2_filters_by_a_java_pattern(groups_broker):
    """KIP-1152: the whole id must match (Java's ``matches``); null or empty is no filter."""
    for txn in ("tx-1", "tx-22", "other", "TX-3"):
        assert (await init(groups_broker, txn=txn))[0] == ErrorCode.NONE

    async def listed(pattern, version=2):
        resp = await call(groups_broker, 66, version, req(66, transactional_id_pattern=pattern))
        return resp.error_code, [s.transactional_id for s in resp.transaction_states]

    assert await listed(None) == await listed("") == (ErrorCode.NONE, ["TX-3", "other", "tx-1", "tx-22"])
    assert await listed("tx-\\d") == (ErrorCode.NONE, ["tx-1"])  # not tx-22: the whole id must match
    assert await listed("tx.*") == (ErrorCode.NONE, ["tx-1", "tx-22"])
    assert await listed("(?i)tx-.*") == (ErrorCode.NONE, ["TX-3", "tx-1", "tx-22"])
    assert await listed("tx-(") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    assert await listed("(?P<n>tx)-1") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])  # Python-only syntax
    assert await listed("tx-(", version=1) == (ErrorCode.NONE, ["TX-3", "other", "tx-1", "tx-22"])  # no field


async def test_requests_for_unknown_ids_leave_no_state_behind(groups_broker):
    await create_ok(groups_broker, "t", 1)
    for i in range(20):
        assert await end(groups_broker, 1, 0, True, txn=f"ghost-{i}") == ErrorCode.INVALID_PRODUCER_ID_MAPPING
        added = await add(groups_broker, 1, 0, {"t": [0]}, txn=f"ghost-{i}")
        assert added == {("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    assert (await init(groups_broker))[0] == ErrorCode.NONE
    assert set(groups_broker.transactions._locks) <= {TXN}
    assert set(groups_broker.transactions.txns) == {TXN}


async def test_old_fetch_versions_see_the_data_without_the_markers(groups_broker):
    """Fetch v0-3 (message formats 0/1) cannot carry markers: they are left out, and a fetch from a marker's
    offset reads on to the next record, as Kafka's down-conversion does (read_uncommitted: aborted data too)."""
    pid, epoch = await open_txn(groups_broker)  # 0 a, 1 b
    assert await end(groups_broker, pid, epoch, False) == ErrorCode.NONE  # 2 ABORT
    await add(groups_broker, pid, epoch, {"t": [0]})
    assert await send(groups_broker, pid, epoch, 2, [b"c"]) == (ErrorCode.NONE, 3)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE  # 4 COMMIT
    T = sub(1, "FetchTopic")
    for version, magic in ((0, 0), (2, 1), (3, 1)):
        for offset, expected in ((0, [(0, b"a"), (1, b"b"), (3, b"c")]), (2, [(3, b"c")]), (4, [])):
            part = T.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
            body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                       topics=[T(topic="t", partitions=[part])])  # fmt: skip
            p = (await call(groups_broker, 1, version, body)).responses[0].partitions[0]
            batches = list(iter_batches(memoryview(p.records or b"")))
            assert {b.magic for b in batches} <= {magic}
            assert [(r.offset, r.value) for b in batches for r in b.iter_records()] == expected, (version, offset)
