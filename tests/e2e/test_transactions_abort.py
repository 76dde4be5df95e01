"""A hanging transaction ended with the Java client's ``Admin.abortTransaction`` (kafka-clients 4.3.0, 3.9.1).

The broker runs with ``transaction.partition.verification.enable=false``, so
a raw transactional Produce (our own encoder, transactional id ``ghost``,
which the transaction coordinator never hears of) opens a transaction that
nobody will end: the last stable offset stays at its first offset, as after a
coordinator lost a transaction in Kafka. ``tests/e2e/java/AbortCheck.java``
then does what ``kafka-transactions.sh abort --start-offset`` does
(DescribeProducers, then WriteTxnMarkers to the partition leader) and checks
the refusals of a stale producer epoch and a stale coordinator epoch. It runs with
kafka-clients 4.3.0 and with 3.9.1 (Flink 2.0's), whose abortTransaction sends
WriteTxnMarkers v1 where 4.3.0 sends v2 (the broker's request metrics by
version; both DescribeProducers v0).
"""

from __future__ import annotations

import subprocess

import pytest

from protocol import API_BY_KEY, ErrorCode, message_class
from protocol.records import RecordBatchBuilder

from .test_bad_input import _connect, _create, _produce, _roundtrip
from ..java_jars import CLIENT_VERSIONS, compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]
PID, EPOCH = 9001, 4
TS = 1_795_000_000_000


def _txn_produce(broker, topic: str, values: list[bytes]) -> tuple[int, int]:
    """A transactional batch of the ghost producer through Produce v9; (error, base offset)."""
    b = RecordBatchBuilder(producer_id=PID, producer_epoch=EPOCH, base_sequence=0, is_transactional=True)
    for i, v in enumerate(values):
        b.append(b"k%d" % i, v, timestamp=TS + i)
    req = message_class(API_BY_KEY[0], True)
    part = req.TopicProduceData.PartitionProduceData(index=0, records=b.build())
    body = req(transactional_id="ghost", acks=-1, timeout_ms=5000,
               topic_data=[req.TopicProduceData(name=topic, partition_data=[part])])  # fmt: skip
    with _connect(broker) as s:
        _, resp = _roundtrip(s, 0, 9, body)
    answer = resp.responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


@pytest.fixture(scope="session", params=CLIENT_VERSIONS)
def abort_check_classpath(request) -> str:
    return compile_java("AbortCheck.java", client=request.param)


def test_java_admin_aborts_a_hanging_transaction(broker_factory, abort_check_classpath):
    """Log: plain ``x`` 0; the ghost's ``a``, ``b`` 1-2 (LSO 1, high watermark 3); its ABORT marker 3."""
    broker = broker_factory(transaction_partition_verification_enable="false")
    topic = "hanging"
    _create(broker, topic)
    plain = RecordBatchBuilder()
    plain.append(b"k", b"x", timestamp=TS)
    assert _produce(broker, topic, plain.build()).error_code == ErrorCode.NONE
    assert _txn_produce(broker, topic, [b"a", b"b"]) == (ErrorCode.NONE, 1)
    result = subprocess.run(["java", "-cp", abort_check_classpath, "AbortCheck", broker.bootstrap, topic, "1"],
                            capture_output=True, text=True, timeout=200)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert lines == [
        ["#hanging", str(PID), str(EPOCH), "OptionalInt.empty", "OptionalLong[1]"],
        ["#latest", "1", "3"],
        ["#stale-epoch", "InvalidProducerEpochException"],
        ["#abort", "ok"],
        ["#stale-coordinator", "TransactionCoordinatorFencedException"],
        ["#after", str(PID), str(EPOCH), "OptionalInt[0]", "OptionalLong.empty"],
        ["#latest", "4", "4"],
        ["rc", "0", "x"],
        ["#position", "4", "4"],
    ]
