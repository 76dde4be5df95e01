"""The BrokerTopicMetrics of the broker's own appends that are refused (``__transaction_state``,
``__consumer_offsets``), as Kafka marks them.

Kafka's transaction coordinator appends through ``ReplicaManager.appendRecords``: ``appendToLocalLog``
counts a produce request before trying, and the log (``UnifiedLog.analyzeAndValidateRecords``) counts a
batch over ``max.message.bytes`` as rejected bytes; neither that nor a storage error is a failed produce
request (errors it expects). The group coordinator's runtime refuses an atomic write too large for a batch
before anything reaches the log: nothing is counted. A non-atomic write's batch that is alone over the
limit does reach the log, and is counted as the transaction coordinator's. The old code counted none of
the refusals over the limit. A real broker (``groups_broker``) through ``dispatch``; counters read from its
registry.
"""

from __future__ import annotations

import pytest

from broker.groups.store import OFFSETS_TOPIC
from broker.internal_topic import records_batch
from broker.transactions.coordinator import TXN_TOPIC
from protocol import ErrorCode

from ._admin_client import create_ok
from ._consumer_group_client import heartbeat
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_topic_metrics import counted
from .test_transactions import add, init
from .test_txn_store_errors import LONG, take_offline

NAMES = ("totalproducerequests", "failedproducerequests", "bytesrejected")
SMALL = {"message.max.bytes": "400"}


def counts(broker, topic: str) -> dict[str, float | None]:
    return {name: counted(broker, name, topic) for name in NAMES}


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_transaction_record_too_large_is_a_produce_request_with_its_bytes_rejected(groups_broker):
    b = groups_broker
    for name in (LONG, LONG + "u"):
        await create_ok(b, name, 1)
    error, pid, epoch = await init(b)
    assert error == ErrorCode.NONE
    before = counts(b, TXN_TOPIC)
    assert before["bytesrejected"] is None
    refused = []
    real = b.transactions.topic.append_reporting

    async def spy(index, build, *args, **kwargs):
        refused.append(len(build(0)[0]))
        return await real(index, build, *args, **kwargs)

    b.transactions.topic.append_reporting = spy
    answers = await add(b, pid, epoch, {LONG: [0], LONG + "u": [0]})
    assert set(answers.values()) == {ErrorCode.UNKNOWN_SERVER_ERROR}
    assert counts(b, TXN_TOPIC) == {"totalproducerequests": before["totalproducerequests"] + 1,
                                    "failedproducerequests": None, "bytesrejected": refused[0]}  # fmt: skip
    assert counted(b, "bytesrejected", "") == refused[0] > 400  # the all-topics series too


async def test_a_transaction_record_met_by_a_storage_error_is_a_produce_request_only(groups_broker):
    b = groups_broker
    await b.transactions.topic.ready()
    await b.transactions.producer_ids.allocate()  # a block in use: no block is saved once the dir is offline
    take_offline(b)
    assert (await init(b))[0] == ErrorCode.NOT_COORDINATOR
    assert counts(b, TXN_TOPIC) == {"totalproducerequests": 1, "failedproducerequests": None, "bytesrejected": None}
    assert counted(b, "totalproducerequests", "") == 1


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_group_write_refused_by_the_coordinator_runtime_counts_nowhere(groups_broker):
    """A joining member whose subscription is over the limit: Kafka's runtime refuses the atomic write."""
    b = groups_broker
    await b.groups.store.ready()
    names = [f"topic-with-a-rather-long-name-{i:03}" for i in range(20)]
    assert (await heartbeat(b, "m", topics=names)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert counts(b, OFFSETS_TOPIC) == dict.fromkeys(NAMES)


@pytest.mark.parametrize("group_props", [SMALL])
async def test_a_non_atomic_batch_over_the_limit_is_refused_by_the_log(groups_broker):
    b = groups_broker
    await b.groups.store.ready()
    row = (b"\x00\x01big", b"x" * 500)
    assert await b.groups.store.write("g", [row], atomic=False) == ErrorCode.UNKNOWN_SERVER_ERROR
    size = len(records_batch([row], b.clock())(0)[0])
    assert counts(b, OFFSETS_TOPIC) == {"totalproducerequests": 1, "failedproducerequests": None,
                                        "bytesrejected": size}  # fmt: skip
