"""Idempotent produce over real sockets: retries are stored once, gaps and fenced epochs refused, across restarts.

Batches are built with our own encoder so the test controls producer id,
epoch and sequence exactly (a real client only retries on its own timing);
confluent-kafka and the Java client with idempotence on are covered by their
own end-to-end tests. Producer ids come from blocks saved before use: a
SIGKILL after ids of two blocks were handed out never hands one out again.
"""

from __future__ import annotations

import socket
import time

import pytest

from protocol import API_BY_KEY, ErrorCode, message_class
from protocol.records import RecordBatchBuilder

from .clients import ck_consume
from .harness import raw_call
from .test_bad_input import _create, _produce

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _batch(seq: int, n: int = 3, epoch: int = 0, pid: int = 4242) -> bytes:
    """Timestamped now: a producer's last timestamp older than producer.id.expiration.ms (1 day) would have it
    forgotten when the log is loaded, as Kafka's loadFromSnapshot forgets it."""
    b = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    now = int(time.time() * 1000)
    for i in range(n):
        b.append(b"k%d" % (seq + i), b"v%d" % (seq + i), timestamp=now + i)
    return b.build()


def _values(broker, n: int) -> list:
    return [(m.offset(), m.value()) for m in ck_consume(broker.bootstrap, "idem", n)]


def test_retries_are_stored_once_and_bad_sequences_refused(broker):
    _create(broker, "idem")
    first = _produce(broker, "idem", _batch(0))
    assert (first.error_code, first.base_offset) == (0, 0)
    again = _produce(broker, "idem", _batch(0))  # the same batch, retried
    assert (again.error_code, again.base_offset) == (0, 0)
    assert _produce(broker, "idem", _batch(3)).base_offset == 3
    assert _produce(broker, "idem", _batch(9)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _produce(broker, "idem", _batch(6, epoch=1)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _produce(broker, "idem", _batch(0, epoch=1)).base_offset == 6  # a new epoch starts at 0
    assert _produce(broker, "idem", _batch(3, epoch=0)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _values(broker, 9) == [(i, v) for i, v in enumerate([b"v0", b"v1", b"v2", b"v3", b"v4", b"v5",
                                                               b"v0", b"v1", b"v2"])]  # fmt: skip


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_producer_state_survives_a_restart(broker, stop):
    _create(broker, "idem")
    for seq in (0, 3, 6):
        assert _produce(broker, "idem", _batch(seq)).error_code == 0
    if stop == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.restart()
    retry = _produce(broker, "idem", _batch(6))
    assert (retry.error_code, retry.base_offset) == (0, 6)
    assert _produce(broker, "idem", _batch(10)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _produce(broker, "idem", _batch(9)).base_offset == 9
    assert [o for o, _v in _values(broker, 12)] == list(range(12))


def test_no_producer_id_is_handed_out_again_after_a_kill(broker):
    """1500 InitProducerId (two blocks of 1000), SIGKILL, restart: the next id is past every id handed out."""
    InitProducerId = message_class(API_BY_KEY[22], True)
    ask = InitProducerId(transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=20) as sock:
        answers = [raw_call(sock, 22, 4, ask) for _ in range(1500)]
    assert {a.error_code for a in answers} == {ErrorCode.NONE}
    handed_out = [a.producer_id for a in answers]
    assert sorted(handed_out) == list(range(1500))
    broker.kill()
    broker.restart()
    again = raw_call(broker.port, 22, 4, ask)
    assert again.error_code == ErrorCode.NONE and again.producer_id == 2000  # the third block: none reused
