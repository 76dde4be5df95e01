"""``group.max.size=1`` against real clients: a broker process started with it (a compose file's
``KAFKA_GROUP_MAX_SIZE``) keeps a kafka-python member consuming, while a second member of the same
group, a confluent-kafka consumer, is refused: librdkafka reports GROUP_MAX_SIZE_REACHED as its
consumer error and the first member is not rebalanced."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError

from .groups import GROUP_CONFIG, create_topic, kp_consumer, kp_poll, produce_keys

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


def refusal(bootstrap: str, group: str, topic: str, timeout: float = 30.0) -> KafkaError | None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000})  # fmt: skip
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                return msg.error()
            assert msg is None, "the refused member was given records"
        return None
    finally:
        consumer.close()


def test_a_second_member_is_refused_while_the_first_keeps_consuming(broker_factory):
    b = broker_factory(**GROUP_CONFIG, group_max_size="1")
    create_topic(b.bootstrap, "t", 2)
    produce_keys(b.bootstrap, "t", [(0, "a0"), (1, "a1")])
    first = kp_consumer(b.bootstrap, "full", "t")
    try:
        assert sorted(k for _p, _o, k in kp_poll(first, 2)) == ["a0", "a1"]
        error = refusal(b.bootstrap, "full", "t")
        assert error is not None and error.code() == KafkaError.GROUP_MAX_SIZE_REACHED, error
        produce_keys(b.bootstrap, "t", [(0, "b0"), (1, "b1")])
        assert sorted(k for _p, _o, k in kp_poll(first, 2)) == ["b0", "b1"]
        assert len(first.assignment()) == 2
    finally:
        first.close()
