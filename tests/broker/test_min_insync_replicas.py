"""``min.insync.replicas`` above the one replica a single node has: acks=all is still taken, as in Kafka 3.7+.

Kafka's ``Partition.appendRecordsToLeader`` refuses an ``acks=-1`` append
with NOT_ENOUGH_REPLICAS only when the ISR is smaller than the *effective* min
ISR, ``min(min.insync.replicas, replicas)`` (``effectiveMinIsr``, KAFKA-15583,
since 3.7.0; before it the configured value was used). One node is the only
replica and the whole ISR, so the effective min ISR is 1 and no value of the
key (topic override, broker default, dynamic change) refuses a write, nor one
of the coordinators' internal writes (offset commits, transaction state,
markers), which Kafka makes with acks=-1. A real broker (``groups_broker``,
broker default ``min.insync.replicas=3``) takes frames through ``dispatch``.
"""

from __future__ import annotations

import pytest

from broker.dispatch import NO_RESPONSE, dispatch
from protocol import ErrorCode, RequestHeader, encode_request

from ._admin_client import TOPIC, call, configs_of, create_ok, fake_connection, req, sub
from ._authz_data import records
from ._dynamic_configs import SET, incremental, ok
from ._group_client import clock, commit, fetch, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import add, end, init, latest, send

BROKER_MIN_ISR = "3"


@pytest.fixture
def group_props():
    return {"min.insync.replicas": BROKER_MIN_ISR, "transaction.state.log.min.isr": "3"}


async def produce(broker, topic: str, acks: int):
    """``(error, error_message)`` of one batch sent with ``acks``; ``None`` for acks=0 (no answer)."""
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=acks, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[
        Data.PartitionProduceData(index=0, records=records(b"v"))])])  # fmt: skip
    if acks == 0:
        frame = bytearray(encode_request(RequestHeader(0, 9, 1, "test"), body)[4:])
        assert await dispatch(broker, fake_connection(), frame) is NO_RESPONSE
        return None
    answer = (await call(broker, 0, 9, body)).responses[0].partition_responses[0]
    return answer.error_code, answer.error_message


def log_end(broker, topic: str) -> int:
    return broker.topics.partition(topic, 0).log.log_end_offset


async def test_every_acks_is_taken_with_the_broker_default_or_a_topic_override_above_one(groups_broker):
    await create_ok(groups_broker, "inherits", 1)
    await create_ok(groups_broker, "override", 1, {"min.insync.replicas": "2"})
    assert (await configs_of(groups_broker, "inherits"))["min.insync.replicas"].value == BROKER_MIN_ISR
    assert (await configs_of(groups_broker, "override"))["min.insync.replicas"].value == "2"
    for topic in ("inherits", "override"):
        assert [await produce(groups_broker, topic, acks) for acks in (-1, 1, 0)] == [(0, None), (0, None), None]
        assert log_end(groups_broker, topic) == 3


async def test_a_dynamic_change_leaves_acks_all_taken(groups_broker):
    await create_ok(groups_broker, "t", 1)
    Res = sub(44, "AlterConfigsResource")
    res = Res(resource_type=TOPIC, resource_name="t",
              configs=[Res.AlterableConfig(name="min.insync.replicas", config_operation=SET, value="5")])  # fmt: skip
    await ok((await call(groups_broker, 44, 1, req(44, resources=[res], validate_only=False))).responses[0])
    await ok(await incremental(groups_broker, "", [("min.insync.replicas", SET, "4")]))
    assert (await configs_of(groups_broker, "t"))["min.insync.replicas"].value == "5"
    assert await produce(groups_broker, "t", -1) == (ErrorCode.NONE, None)
    assert log_end(groups_broker, "t") == 1


async def test_the_coordinators_write_their_topics_with_min_isr_above_one(groups_broker):
    """``__consumer_offsets`` takes the broker default, ``__transaction_state`` ``transaction.state.log.min.isr``."""
    await create_ok(groups_broker, "t", 1)
    assert await commit(groups_broker, "g", {("t", 0): 7}) == {("t", 0): ErrorCode.NONE}
    assert (await fetch(groups_broker, "g", {"t": [0]}))[1] == {("t", 0): (7, "m", ErrorCode.NONE)}
    assert (await configs_of(groups_broker, "__consumer_offsets"))["min.insync.replicas"].value == BROKER_MIN_ISR
    error, pid, epoch = await init(groups_broker)
    assert error == ErrorCode.NONE
    assert (await configs_of(groups_broker, "__transaction_state"))["min.insync.replicas"].value == "3"
    assert await add(groups_broker, pid, epoch, {"t": [0]}) == {("t", 0): ErrorCode.NONE}
    assert await send(groups_broker, pid, epoch, 0, [b"a"]) == (ErrorCode.NONE, 0)
    assert await end(groups_broker, pid, epoch, True) == ErrorCode.NONE
    assert await latest(groups_broker, committed=True) == 2  # the record and its commit marker
