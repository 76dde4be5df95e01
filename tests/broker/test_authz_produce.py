"""Produce under the ACL authorizer, as Kafka's ``handleProduceRequest`` authorizes it.

Topics need WRITE (per topic, TOPIC_AUTHORIZATION_FAILED for the
partitions of the others, existing or not); a transactional batch needs WRITE
on the request's TRANSACTIONAL_ID or the whole request fails
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs no more
than WRITE on the topic (KIP-679).
"""

from __future__ import annotations

import uuid

import pytest

from broker.acl_model import PatternType
from broker.dispatch import NO_RESPONSE, CloseConnection, dispatch
from protocol import ErrorCode, RequestHeader, encode_request

from ._admin_client import call, req, sub
from ._authz import Op, Res, authz_broker, deny, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import ADMIN, make_topics, produce, records

TXN = "tx-bob"
TAF, TXN_TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def log_end(broker, topic: str, partition: int = 0) -> int:
    return broker.topics.partition(topic, partition).log.log_end_offset


async def test_each_topic_needs_write_existing_or_not(authz_broker):
    await make_topics(authz_broker, "t", "other")
    bob = user("bob")
    asked = {"t": {0: records(b"a")}, "other": {0: records(b"b")}, "missing": {0: records(b"c")}}
    assert await produce(authz_broker, bob, asked) == {("t", 0): TAF, ("other", 0): TAF, ("missing", 0): TAF}
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t")
    assert await produce(authz_broker, bob, asked) == {
        ("t", 0): ErrorCode.NONE, ("other", 0): TAF, ("missing", 0): TAF}  # fmt: skip
    assert (log_end(authz_broker, "t"), log_end(authz_broker, "other")) == (1, 0)
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "*")  # the literal wildcard: every topic
    assert (await produce(authz_broker, bob, {"missing": {0: records(b"c")}}))[("missing", 0)] == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # fmt: skip


async def test_read_describe_or_another_principal_or_host_is_not_write(authz_broker):
    await make_topics(authz_broker, "t")
    for op in (Op.READ, Op.DESCRIBE, Op.CREATE):
        grant(authz_broker, "bob", op, Res.TOPIC, "t")
    grant(authz_broker, "alice", Op.WRITE, Res.TOPIC, "t")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t", host="10.0.0.9")
    assert await produce(authz_broker, user("bob"), {"t": {0: records(b"a")}}) == {("t", 0): TAF}
    assert await produce(authz_broker, user("alice"), {"t": {0: records(b"a")}}) == {("t", 0): ErrorCode.NONE}
    assert await produce(authz_broker, user("bob", "10.0.0.9"), {"t": {0: records(b"a")}}) == {
        ("t", 0): ErrorCode.NONE}  # fmt: skip


async def test_prefixed_allow_and_a_literal_deny(authz_broker):
    await make_topics(authz_broker, "logs-a", "logs-secret", "metrics")
    grant(authz_broker, "User:*", Op.WRITE, Res.TOPIC, "logs-", PatternType.PREFIXED)
    deny(authz_broker, "bob", Op.WRITE, Res.TOPIC, "logs-secret")
    asked = {name: {0: records(b"x")} for name in ("logs-a", "logs-secret", "metrics")}
    assert await produce(authz_broker, user("bob"), asked) == {
        ("logs-a", 0): ErrorCode.NONE, ("logs-secret", 0): TAF, ("metrics", 0): TAF}  # fmt: skip
    assert (await produce(authz_broker, user("carol"), asked))[("logs-secret", 0)] == ErrorCode.NONE


async def test_acks_0_refused_closes_the_connection(authz_broker):
    await make_topics(authz_broker, "t")
    with pytest.raises(CloseConnection):
        await produce(authz_broker, user("bob"), {"t": {0: records(b"a")}}, acks=0)
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t")
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=0, timeout_ms=1000, topic_data=[Data(name="t", partition_data=[
        Data.PartitionProduceData(index=0, records=records(b"a"))])])  # fmt: skip
    frame = bytearray(encode_request(RequestHeader(0, 9, 1, "test"), body)[4:])
    assert await dispatch(authz_broker, user("bob"), frame) is NO_RESPONSE
    assert log_end(authz_broker, "t") == 1


async def test_v13_an_unknown_id_is_unknown_topic_id_before_authorization(authz_broker):
    ids = await make_topics(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t")
    nobody = uuid.uuid4()
    asked = {ids["t"]: {0: records(b"a")}, ids["u"]: {0: records(b"b")}, nobody: {0: records(b"c")}}
    assert await produce(authz_broker, user("bob"), asked, version=13) == {
        (ids["t"], 0): ErrorCode.NONE, (ids["u"], 0): TAF, (nobody, 0): ErrorCode.UNKNOWN_TOPIC_ID}  # fmt: skip


async def init_producer(broker, txn: str | None) -> tuple[int, int]:
    """A producer id and epoch from InitProducerId, asked as the super user."""
    resp = await call(broker, 22, 4, req(22, transactional_id=txn, transaction_timeout_ms=60_000, producer_id=-1,
                                         producer_epoch=-1), connection=ADMIN)  # fmt: skip
    assert resp.error_code == ErrorCode.NONE
    return resp.producer_id, resp.producer_epoch


async def add_to_txn(broker, pid: int, epoch: int, parts: dict) -> None:
    Topic = sub(24, "AddPartitionsToTxnTopic")
    body = req(24, transactional_id=TXN, producer_id=pid, producer_epoch=epoch,
               topics=[Topic(name=t, partitions=ps) for t, ps in parts.items()])  # fmt: skip
    resp = await call(broker, 24, 3, body, connection=ADMIN)
    assert {p.partition_error_code for t in resp.results_by_topic for p in t.results_by_partition} == {0}


async def test_a_transactional_batch_needs_write_on_the_transactional_id_for_the_whole_request(authz_broker):
    await make_topics(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "*")
    bob = user("bob")
    pid, epoch = await init_producer(authz_broker, TXN)
    txn_batch = records(b"a", pid=pid, epoch=epoch, seq=0, transactional=True)
    asked = {"t": {0: txn_batch}, "u": {0: records(b"plain")}, "missing": {0: records(b"c")}}
    assert await produce(authz_broker, bob, asked, txn=TXN) == {
        ("t", 0): TXN_TAF, ("u", 0): TXN_TAF, ("missing", 0): TXN_TAF}  # fmt: skip
    assert log_end(authz_broker, "u") == 0  # nothing written at all
    with pytest.raises(CloseConnection):
        await produce(authz_broker, bob, asked, txn=TXN, acks=0)
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TRANSACTIONAL_ID, TXN)  # not enough
    assert (await produce(authz_broker, bob, {"t": {0: txn_batch}}, txn=TXN))[("t", 0)] == TXN_TAF
    grant(authz_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)
    await add_to_txn(authz_broker, pid, epoch, {"t": [0]})
    assert await produce(authz_broker, bob, {"t": {0: txn_batch}}, txn=TXN) == {("t", 0): ErrorCode.NONE}


async def test_a_transactional_batch_without_a_transactional_id_fails_even_for_a_super_user(authz_broker):
    await make_topics(authz_broker, "t", "u")
    pid, epoch = await init_producer(authz_broker, TXN)
    asked = {"t": {0: records(b"a", pid=pid, epoch=epoch, seq=0, transactional=True)}, "u": {0: records(b"b")}}
    assert await produce(authz_broker, ADMIN, asked) == {("t", 0): TXN_TAF, ("u", 0): TXN_TAF}


async def test_an_idempotent_producer_needs_only_write_on_the_topic(authz_broker):
    await make_topics(authz_broker, "t")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t")  # no IDEMPOTENT_WRITE on the cluster
    pid, epoch = await init_producer(authz_broker, None)
    batch = records(b"a", b"b", pid=pid, epoch=epoch, seq=0)
    assert await produce(authz_broker, user("bob"), {"t": {0: batch}}) == {("t", 0): ErrorCode.NONE}
    assert await produce(authz_broker, user("eve"), {"t": {0: batch}}) == {("t", 0): TAF}


async def test_v12_adds_only_the_writable_partitions_to_the_transaction(authz_broker):
    await make_topics(authz_broker, "t", "u")
    grant(authz_broker, "bob", Op.WRITE, Res.TOPIC, "t")
    grant(authz_broker, "bob", Op.WRITE, Res.TRANSACTIONAL_ID, TXN)
    pid, epoch = await init_producer(authz_broker, TXN)
    batch = records(b"a", pid=pid, epoch=epoch, seq=0, transactional=True)
    asked = {"t": {0: batch}, "u": {0: records(b"b", pid=pid, epoch=epoch, seq=0, transactional=True)}}
    assert await produce(authz_broker, user("bob"), asked, version=12, txn=TXN) == {
        ("t", 0): ErrorCode.NONE, ("u", 0): TAF}  # fmt: skip
    assert authz_broker.transactions.txns[TXN].partitions == {("t", 0)}
