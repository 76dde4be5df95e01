"""Client quotas on a real broker process, felt by real clients.

The quotas are set with AlterClientQuotas from our own encoder (neither Python
client has the call; the Java Admin sweep makes it with kafka-clients). Then
a confluent-kafka producer over its ``producer_byte_rate`` must be told to
wait (librdkafka's ``throttle_cb``) and still deliver every record, and a
kafka-python consumer over its ``consumer_byte_rate`` must be throttled (the
broker's ``throttle-time`` metric) and still read every record, in order.
Sizes are picked so the throttle lasts a few seconds: a burst of ``B`` bytes
within the 10 s window is throttled ``(B / (10 s * Q) - 1) * 10 s``. The
request-time and controller-mutation quotas are felt by the same clients.
"""

from __future__ import annotations

import time
import warnings

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CNewTopic

from ..broker._admin_client import req, sub
from .clients import kp_consume
from .harness import raw_call

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import NodeNotReadyError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _set_quota(port: int, client_id: str, key: str, value: float) -> None:
    Entry = sub(49, "EntryData")
    body = req(49, entries=[Entry(entity=[Entry.EntityData(entity_type="client-id", entity_name=client_id)],
                                  ops=[Entry.OpData(key=key, value=value, remove=False)])])  # fmt: skip
    resp = raw_call(port, 49, 1, body)
    assert [(e.error_code, e.error_message) for e in resp.entries] == [(0, None)]


def _metric(broker, name: str, client_id: str) -> float:
    return broker.scrape().get((name, (("client_id", client_id), ("user", ""))), 0.0)


def test_a_producer_over_its_quota_is_told_to_wait_and_delivers_everything(broker):
    _set_quota(broker.port, "quota-producer", "producer_byte_rate", 20_000)
    throttles, delivered = [], []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "quota-producer", "linger.ms": 5,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})  # fmt: skip
    for i in range(240):  # ~245 kB at once: about 2 s over a 20 kB/s quota
        producer.produce("quota-p", key=b"%d" % i, value=b"x" * 1000,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))  # fmt: skip
    assert producer.flush(60) == 0
    producer.poll(1)
    assert [err for err, _ in delivered if err is not None] == []
    assert sorted(offset for _, offset in delivered) == list(range(240))
    assert throttles and max(throttles) > 0.5  # seconds, as librdkafka reports them
    assert _metric(broker, "kafka_server_produce_throttle_time", "quota-producer") > 0


def test_a_consumer_over_its_quota_is_throttled_and_reads_everything(broker_factory):
    broker = broker_factory(**{"quota.window.num": "3"})  # a 2 s window: the test waits seconds, not tens
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
    for i in range(60):
        producer.send("quota-c", key=b"%d" % i, value=b"y" * 1000, partition=0)
    producer.flush(30)
    producer.close(5)
    _set_quota(broker.port, "quota-consumer", "consumer_byte_rate", 20_000)  # one fetch: 40 kB at most
    got = kp_consume(broker.bootstrap, "quota-c", 60, client_id="quota-consumer", consumer_timeout_ms=40_000)
    assert [(m.offset, m.key) for m in got] == [(i, b"%d" % i) for i in range(60)]
    assert _metric(broker, "kafka_server_fetch_throttle_time", "quota-consumer") > 0


def test_clients_over_their_request_percentage_are_throttled_and_lose_nothing(broker_factory):
    """1 % of a thread over a 2 s window (2 samples of 1 s): 20 ms of the event loop's time, which some tens
    of one-record Produce requests use up; each throttle is then at most one sample (1 s), as in Kafka."""
    broker = broker_factory(**{"quota.window.num": "2"})
    _set_quota(broker.port, "busy-producer", "request_percentage", 1.0)
    _set_quota(broker.port, "busy-consumer", "request_percentage", 1.0)
    throttles, delivered = [], []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "busy-producer", "linger.ms": 0,
                         "batch.num.messages": 1, "max.in.flight": 1,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})  # fmt: skip
    for i in range(80):
        producer.produce("quota-r", key=b"%d" % i, value=b"z" * 100, partition=0,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))  # fmt: skip
        producer.poll(0)
    metric, deadline, left = 0.0, time.monotonic() + 90, 80
    while left and time.monotonic() < deadline:
        left = producer.flush(0.05)
        if throttles and not metric:  # read while the throttle is in the measure's 2 s window
            metric = _metric(broker, "kafka_server_request_throttle_time", "busy-producer")
    assert left == 0
    producer.poll(1)
    assert [err for err, _ in delivered if err is not None] == []
    assert sorted(offset for _, offset in delivered) == list(range(80))
    assert throttles and 0 < max(throttles) <= 1.0  # seconds; a request throttle is bounded by the window
    assert metric > 0
    got = kp_consume(broker.bootstrap, "quota-r", 80, client_id="busy-consumer", consumer_timeout_ms=60_000)
    assert [(m.offset, m.key) for m in got] == [(i, b"%d" % i) for i in range(80)]


def test_topic_mutations_over_controller_mutation_rate_are_throttled(broker):
    """5 partitions a second: a bucket of 55 (11 windows of 1 s). kafka-python (CreateTopics v7, strict) is
    let through once below zero and then holds back for the throttle; librdkafka (v4, permissive) creates
    everything and is told how long to wait (``throttle_cb``)."""
    _set_quota(broker.port, "mut-kp", "controller_mutation_rate", 5.0)
    _set_quota(broker.port, "mut-ck", "controller_mutation_rate", 5.0)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="mut-kp")
    try:
        for name, partitions in (("m-50", 50), ("m-10", 10)):  # 55 - 60: 1 s below zero
            assert admin.create_topics([NewTopic(name, partitions, 1)])["topics"][0]["error_code"] == 0
        with pytest.raises(NodeNotReadyError, match="throttle"):  # the client waits out the throttle
            admin.create_topics([NewTopic("m-1", 1, 1)])
        time.sleep(1.2)
        assert admin.create_topics([NewTopic("m-1", 1, 1)])["topics"][0]["error_code"] == 0
    finally:
        admin.close()
    throttles = []
    confluent = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "mut-ck",
                             "throttle_cb": lambda event: throttles.append(event.throttle_time)})  # fmt: skip
    for name, partitions in (("c-60", 60), ("c-5", 5)):
        confluent.create_topics([CNewTopic(name, partitions, 1)])[name].result(30)
    confluent.poll(1)
    assert throttles and 0 < throttles[0] <= 1.0  # 55 - 60: 1 s, less the time creating 60 partitions took
    assert {t: len(m.partitions) for t, m in confluent.list_topics(timeout=10).topics.items() if t[:2] == "c-"} == {
        "c-60": 60, "c-5": 5}  # fmt: skip
