"""The ACL checks of the transaction handlers, as Kafka's KafkaApis makes them.

A real broker (``groups_broker`` with its transaction coordinator, the
StandardAuthorizer and ``super.users=User:admin``) takes frames through
``dispatch`` from a connection logged in as a user: InitProducerId
(transactional: WRITE on the id; idempotent: IDEMPOTENT_WRITE on the cluster
or WRITE on some topic), AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
TxnOffsetCommit (WRITE on the id, then the group and topic checks),
WriteTxnMarkers (cluster ALTER or CLUSTER_ACTION), DescribeTransactions and
ListTransactions (DESCRIBE on each id).
"""

from __future__ import annotations

import pytest

from broker.acl_model import CLUSTER_NAME, PatternType
from protocol import ErrorCode

from ._admin_client import call, creatable, req, sub
from ._authz import STANDARD_AUTHORIZER, Op, Res, grant, user
from ._group_client import clock, groups_broker  # noqa: F401  (fixtures)

ADMIN, BOB = user("admin"), user("bob")
TXN = "tx-1"
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


@pytest.fixture
def group_props():
    return {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}


async def topics(broker, *names: str) -> None:
    body = req(19, topics=[creatable(n) for n in names], timeout_ms=1000)
    resp = await call(broker, 19, 7, body, connection=ADMIN)
    assert [t.error_code for t in resp.topics] == [ErrorCode.NONE] * len(names)


async def init(broker, txn: str | None = TXN, who=BOB, version=4) -> tuple:
    body = req(22, transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    resp = await call(broker, 22, version, body, connection=who)
    return resp.error_code, resp.producer_id, resp.producer_epoch


async def add(broker, producer: tuple, parts: dict, txn=TXN, who=BOB) -> dict:
    Topic = sub(24, "AddPartitionsToTxnTopic")
    body = req(24, transactional_id=txn, producer_id=producer[0], producer_epoch=producer[1],
               topics=[Topic(name=t, partitions=ps) for t, ps in parts.items()])  # fmt: skip
    resp = await call(broker, 24, 3, body, connection=who)
    return {(t.name, p.partition_index): p.partition_error_code for t in resp.results_by_topic
            for p in t.results_by_partition}  # fmt: skip


async def add_offsets(broker, producer: tuple, group: str, who=BOB) -> int:
    body = req(25, transactional_id=TXN, producer_id=producer[0], producer_epoch=producer[1], group_id=group)
    return (await call(broker, 25, 3, body, connection=who)).error_code


async def txn_commit(broker, producer: tuple, group: str, offsets: dict, who=BOB) -> dict:
    Topic = sub(28, "TxnOffsetCommitRequestTopic")
    Part = Topic.TxnOffsetCommitRequestPartition
    by_topic: dict = {}
    for (t, p), off in offsets.items():
        by_topic.setdefault(t, []).append(Part(partition_index=p, committed_offset=off))
    body = req(28, transactional_id=TXN, group_id=group, producer_id=producer[0], producer_epoch=producer[1],
               generation_id=-1, member_id="",
               topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()])  # fmt: skip
    resp = await call(broker, 28, 3, body, connection=who)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


async def admin_producer(broker) -> tuple[int, int]:
    error, pid, epoch = await init(broker, who=ADMIN)
    assert error == ErrorCode.NONE
    return pid, epoch


# -- InitProducerId -------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 4])
async def test_init_producer_id_of_a_transactional_producer_needs_write_on_its_id(groups_broker, version):
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TRANSACTIONAL_ID, TXN)  # not enough
    assert await init(groups_broker, version=version) == (TXN_DENIED, -1, -1)
    assert TXN not in groups_broker.transactions.txns
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    error, pid, epoch = await init(groups_broker, version=version)
    assert (error, epoch) == (ErrorCode.NONE, 0) and pid >= 0


async def test_init_producer_id_of_an_idempotent_producer(groups_broker):
    assert await init(groups_broker, None) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, -1)
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "*")  # reading is not writing
    assert (await init(groups_broker, None))[0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(groups_broker, "bob", Op.WRITE, Res.TOPIC, "logs-", PatternType.PREFIXED)  # WRITE on some topic
    assert (await init(groups_broker, None))[0] == ErrorCode.NONE
    grant(groups_broker, "carol", Op.IDEMPOTENT_WRITE, Res.CLUSTER, CLUSTER_NAME)
    assert (await init(groups_broker, None, who=user("carol")))[0] == ErrorCode.NONE


async def test_init_producer_id_is_authorized_before_its_id_and_epoch_are_checked(groups_broker):
    body = req(22, transactional_id=TXN, transaction_timeout_ms=60_000, producer_id=5, producer_epoch=-1)
    resp = await call(groups_broker, 22, 4, body, connection=BOB)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (TXN_DENIED, -1, -1)
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    resp = await call(groups_broker, 22, 4, body, connection=BOB)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)


# -- AddPartitionsToTxn, AddOffsetsToTxn, EndTxn ---------------------------------------------------


async def test_add_partitions_checks_the_id_then_each_topic(groups_broker):
    await topics(groups_broker, "a", "b")
    producer = await admin_producer(groups_broker)
    wanted = {"a": [0, 9], "b": [0], "__consumer_offsets": [0], "zz": [0]}
    assert set((await add(groups_broker, producer, wanted)).values()) == {TXN_DENIED}
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    grant(groups_broker, "bob", Op.WRITE, Res.TOPIC, "*")
    grant(groups_broker, "bob", Op.WRITE, Res.TOPIC, "__consumer_offsets")  # an internal topic stays refused
    assert await add(groups_broker, producer, {"a": [0], "b": [0], "__consumer_offsets": [0]}) == {
        ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("b", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("__consumer_offsets", 0): TOPIC_DENIED}  # fmt: skip


async def test_add_partitions_refused_topics_fail_the_whole_request(groups_broker):
    await topics(groups_broker, "a", "b")
    producer = await admin_producer(groups_broker)
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    grant(groups_broker, "bob", Op.WRITE, Res.TOPIC, "a")
    assert await add(groups_broker, producer, {"a": [0, 9], "b": [0], "zz": [0]}) == {
        ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("b", 0): TOPIC_DENIED, ("zz", 0): TOPIC_DENIED}  # fmt: skip
    assert groups_broker.transactions.txns[TXN].partitions_by_topic() == {}
    assert await add(groups_broker, producer, {"a": [0]}) == {("a", 0): ErrorCode.NONE}


async def test_add_offsets_and_end_txn(groups_broker):
    producer = await admin_producer(groups_broker)
    assert await add_offsets(groups_broker, producer, "g") == TXN_DENIED
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    assert await add_offsets(groups_broker, producer, "g") == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "g")
    assert await add_offsets(groups_broker, producer, "g") == ErrorCode.NONE
    end = req(26, transactional_id=TXN, producer_id=producer[0], producer_epoch=producer[1], committed=True)
    assert (await call(groups_broker, 26, 3, end, connection=user("carol"))).error_code == TXN_DENIED
    assert groups_broker.transactions.txns[TXN].state.kafka_name == "Ongoing"
    assert (await call(groups_broker, 26, 3, end, connection=BOB)).error_code == ErrorCode.NONE


# -- TxnOffsetCommit -------------------------------------------------------------------------


async def test_txn_offset_commit_checks_the_id_the_group_then_each_topic(groups_broker):
    await topics(groups_broker, "a", "b")
    producer = await admin_producer(groups_broker)
    assert await add_offsets(groups_broker, producer, "g", who=ADMIN) == ErrorCode.NONE
    offsets = {("a", 0): 5, ("a", 9): 1, ("b", 0): 6, ("zz", 0): 7}
    assert set((await txn_commit(groups_broker, producer, "g", offsets)).values()) == {TXN_DENIED}
    grant(groups_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    assert set((await txn_commit(groups_broker, producer, "g", offsets)).values()) == {
        ErrorCode.GROUP_AUTHORIZATION_FAILED}  # fmt: skip
    grant(groups_broker, "bob", Op.READ, Res.GROUP, "g")
    assert await txn_commit(groups_broker, producer, "g", {("b", 0): 6}) == {("b", 0): TOPIC_DENIED}
    grant(groups_broker, "bob", Op.READ, Res.TOPIC, "a")
    assert await txn_commit(groups_broker, producer, "g", offsets) == {
        ("a", 0): ErrorCode.NONE, ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("b", 0): TOPIC_DENIED,
        ("zz", 0): TOPIC_DENIED}  # fmt: skip


# -- WriteTxnMarkers -------------------------------------------------------------------------


async def markers(broker, who, *entries) -> list[tuple]:
    """``entries``: (producer id, {topic: [partitions]}); [(producer id, {(topic, p): error})] as answered."""
    Marker = sub(27, "WritableTxnMarker")
    body = req(27, markers=[Marker(
        producer_id=pid, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
        topics=[Marker.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in parts.items()])
        for pid, parts in entries])  # fmt: skip
    resp = await call(broker, 27, 1, body, connection=who)
    return [(m.producer_id, {(t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions})
            for m in resp.markers]  # fmt: skip


async def test_write_txn_markers_needs_cluster_alter_or_cluster_action(groups_broker):
    refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    entries = [(7, {"zz": [0]}), (7, {"zz": [1, 2]}), (8, {})]
    assert await markers(groups_broker, BOB, *entries) == [(7, {("zz", 1): refused, ("zz", 2): refused}), (8, {})]
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for name, op in (("bob", Op.CLUSTER_ACTION), ("carol", Op.ALTER)):
        grant(groups_broker, name, op, Res.CLUSTER, CLUSTER_NAME)
        assert await markers(groups_broker, user(name), *entries) == [
            (7, {("zz", 0): unknown, ("zz", 1): unknown, ("zz", 2): unknown})]  # fmt: skip


# -- DescribeTransactions, ListTransactions ---------------------------------------------------------


async def test_describe_transactions_per_id_with_the_topics_the_principal_may_describe(groups_broker):
    await topics(groups_broker, "a", "b")
    producer = await admin_producer(groups_broker)
    assert set((await add(groups_broker, producer, {"a": [0], "b": [0]}, who=ADMIN)).values()) == {ErrorCode.NONE}
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TRANSACTIONAL_ID, TXN)
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    resp = await call(groups_broker, 65, 0, req(65, transactional_ids=[TXN, "other"]), connection=BOB)
    found, other = resp.transaction_states
    assert (found.error_code, found.transaction_state, found.producer_id) == (ErrorCode.NONE, "Ongoing", producer[0])
    assert [(t.topic, t.partitions) for t in found.topics] == [("a", [0])]
    assert (other.transactional_id, other.error_code, other.transaction_state, other.producer_id,
            other.producer_epoch, other.topics) == ("other", TXN_DENIED, "", 0, 0, [])  # fmt: skip
    resp = await call(groups_broker, 65, 0, req(65, transactional_ids=[TXN]), connection=ADMIN)
    assert [t.topic for t in resp.transaction_states[0].topics] == ["a", "b"]


async def test_list_transactions_shows_the_ids_the_principal_may_describe(groups_broker):
    for txn in ("tx-1", "tx-2", "other"):
        assert (await init(groups_broker, txn, who=ADMIN))[0] == ErrorCode.NONE
    grant(groups_broker, "bob", Op.DESCRIBE, Res.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)
    for version in (0, 2):
        resp = await call(groups_broker, 66, version, req(66), connection=BOB)
        assert (resp.error_code, [s.transactional_id for s in resp.transaction_states]) == (
            ErrorCode.NONE, ["tx-1", "tx-2"])  # fmt: skip
    resp = await call(groups_broker, 66, 0, req(66), connection=ADMIN)
    assert [s.transactional_id for s in resp.transaction_states] == ["other", "tx-1", "tx-2"]
