"""A broker whose disk refuses a write, seen by a real client (confluent-kafka), then restarted.

The broker process runs under ``prlimit --fsize`` (a per-file size limit: a
write past it fails with EFBIG, as a full disk fails with ENOSPC; Python
ignores SIGXFSZ). The append that meets it takes the only log dir offline
and the broker exits with status 1, as Kafka halts once all its log dirs
have failed; restarted without the limit, it recovers the log and every
record the client saw acknowledged is there, in order, at its offset.
"""

from __future__ import annotations

import shutil

import pytest
from confluent_kafka import Producer

from .clients import ck_consume
from .harness import BrokerProcess, LimitedBroker

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180),
              pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")]  # fmt: skip
FILE_LIMIT = 1 << 20


def _produce_until_refused(bootstrap: str, n: int) -> dict[int, bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "message.timeout.ms": 8000,
                         "enable.idempotence": False, "max.in.flight.requests.per.connection": 1})  # fmt: skip
    acknowledged: dict[int, bytes] = {}

    def delivered(err, msg) -> None:
        if err is None:
            acknowledged[msg.offset()] = msg.value()

    for i in range(n):
        producer.produce("full", value=b"%06d" % i + b"x" * 1000, partition=0, on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    return acknowledged


def test_a_refused_write_stops_the_broker_and_a_restart_keeps_every_acknowledged_record(tmp_path):
    limited = LimitedBroker(tmp_path / "data", FILE_LIMIT, {"log.segment.bytes": str(8 * FILE_LIMIT),
                                                "log.index.size.max.bytes": "65536"}).start()  # fmt: skip
    try:
        acknowledged = _produce_until_refused(limited.bootstrap, 2000)
        assert limited.proc is not None and limited.proc.wait(30) == 1
    finally:
        limited.kill()
    assert "because all log dirs in" in limited.log_text()
    assert 100 < len(acknowledged) < 2000 and sorted(acknowledged) == list(range(len(acknowledged)))
    again = BrokerProcess(tmp_path / "data").start()
    try:
        got = {m.offset(): m.value() for m in ck_consume(again.bootstrap, "full", len(acknowledged), timeout=60)}
        assert {o: v for o, v in got.items() if o in acknowledged} == acknowledged
    finally:
        again.kill()
