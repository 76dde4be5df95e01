"""The request metrics (``kafka_network_requestmetrics_*``) as Kafka's ``RequestChannel`` marks them.

A real broker takes frames through ``dispatch``; the counters are read from
its registry. Each response's error codes are counted in
``errors_total{request,error}`` as many times as it carries each (Kafka's
``updateErrorMetrics`` over the response's ``errorCounts``), NONE included;
a Fetch is counted under ``FetchConsumer`` as well as ``Fetch``; the time
histograms (tagged by request name only) show Kafka's percentiles as
``quantile`` series, are recorded once the response is out, and split a
Fetch's long poll off as remote time; a Produce
with ``acks=0`` whose failure closes the connection still counts as a
request with its errors; an ApiVersions above our range, answered with
UNSUPPORTED_VERSION, is counted at the version asked.
"""

from __future__ import annotations

import pytest
import trio

from broker.dispatch import CloseConnection, dispatch
from broker.metrics import KafkaHistogram
from broker.request_metrics import AfterSent
from prometheus_client import CollectorRegistry
from protocol import RequestHeader, encode_request
from protocol.records import RecordBatchBuilder

from ._admin_client import broker, call, collect, create_ok, fake_connection, produce, req, sub  # noqa: F401

RM = "kafka_network_requestmetrics_"


def value(broker, name: str, **labels: str) -> float | None:
    return broker.metrics.registry.get_sample_value(RM + name, labels)


def records() -> bytearray:
    b = RecordBatchBuilder()
    b.append(b"k", b"v", timestamp=1)
    return bytearray(b.build())


def produce_body(acks: int, partitions: list[int]):
    Data = sub(0, "TopicProduceData")
    parts = [Data.PartitionProduceData(index=p, records=records()) for p in partitions]
    return req(0, acks=acks, timeout_ms=1000, topic_data=[Data(name="t", partition_data=parts)])


async def test_each_error_code_of_a_response_is_counted(broker):
    await create_ok(broker, "t", partitions=2)
    resp = await call(broker, 0, 9, produce_body(1, [0, 1, 7, 8, 9]))  # 7-9: no such partitions
    assert [p.error_code for p in resp.responses[0].partition_responses] == [0, 0, 3, 3, 3]
    assert value(broker, "errors_total", request="Produce", error="NONE") == 2
    assert value(broker, "errors_total", request="Produce", error="UNKNOWN_TOPIC_OR_PARTITION") == 3


async def test_a_fetch_counts_as_fetch_and_as_fetch_consumer(broker):
    await create_ok(broker, "t")
    await produce(broker, "t", [1])
    T = sub(1, "FetchTopic")
    body = req(1, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0, session_epoch=-1,
               topics=[T(topic="t", partitions=[T.FetchPartition(partition=0, fetch_offset=0,
                                                                 partition_max_bytes=1 << 20)])])  # fmt: skip
    await call(broker, 1, 12, body)
    assert value(broker, "requests_total", request="Fetch", version="12") == 1
    assert value(broker, "requests_total", request="FetchConsumer", version="12") == 1
    assert value(broker, "totaltimems_count", request="FetchConsumer") == 1  # tagged by name only
    # ours, beside Kafka's: a bucket histogram by API and version, the request counted once
    latency = broker.metrics.registry.get_sample_value
    assert latency("minibroker_request_latency_ms_count", {"request": "Fetch", "version": "12"}) == 1
    assert latency("minibroker_request_latency_ms_count", {"request": "FetchConsumer", "version": "12"}) is None
    assert latency("minibroker_request_latency_ms_bucket", {"request": "Fetch", "version": "12", "le": "+Inf"}) == 1
    # Kafka's FetchResponse.errorCounts: the top-level code and each partition's, under the API's own name
    assert value(broker, "errors_total", request="Fetch", error="NONE") == 2
    assert value(broker, "errors_total", request="FetchConsumer", error="NONE") is None


async def test_a_find_coordinator_v4_counts_its_coordinators_only(broker):
    body = req(10, key_type=0, coordinator_keys=["g1", "g2"])
    await call(broker, 10, 4, body)
    assert value(broker, "errors_total", request="FindCoordinator", error="NONE") == 2  # not the top-level code


async def test_a_failed_acks_0_produce_closes_the_connection_and_is_counted(broker):
    await create_ok(broker, "t")
    frame = bytearray(encode_request(RequestHeader(0, 9, 1, "m"), produce_body(0, [0, 5]))[4:])
    with trio.fail_after(5), pytest.raises(CloseConnection):
        await dispatch(broker, fake_connection(), frame)
    assert value(broker, "requests_total", request="Produce", version="9") == 1
    assert value(broker, "errors_total", request="Produce", error="UNKNOWN_TOPIC_OR_PARTITION") == 1
    assert value(broker, "errors_total", request="Produce", error="NONE") == 1


async def test_an_acks_0_produce_answered_by_nothing_counts_no_errors(broker):
    await create_ok(broker, "t")
    frame = bytearray(encode_request(RequestHeader(0, 9, 1, "m"), produce_body(0, [0]))[4:])
    with trio.fail_after(5):
        await dispatch(broker, fake_connection(), frame)
    assert value(broker, "requests_total", request="Produce", version="9") == 1
    assert value(broker, "errors_total", request="Produce", error="NONE") is None


async def test_an_api_versions_above_ours_is_counted_at_the_version_asked(broker):
    frame = bytearray(encode_request(RequestHeader(18, 3, 1, "m"), req(18))[4:])
    frame[2:4] = (99).to_bytes(2, "big")  # a version from the future
    with trio.fail_after(5):
        await dispatch(broker, fake_connection(), frame)
    assert value(broker, "requests_total", request="ApiVersions", version="99") == 1
    assert value(broker, "errors_total", request="ApiVersions", error="UNSUPPORTED_VERSION") == 1


def fetch_body(max_wait_ms: int = 0, min_bytes: int = 0, offset: int = 0):
    T = sub(1, "FetchTopic")
    return req(1, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, session_id=0,
               session_epoch=-1, topics=[T(topic="t", partitions=[T.FetchPartition(partition=0, fetch_offset=offset,
                                                                                   partition_max_bytes=1 << 20)])])


async def test_times_are_recorded_once_the_response_is_out(broker):
    await create_ok(broker, "t")
    frame = bytearray(encode_request(RequestHeader(1, 12, 1, "m"), fetch_body())[4:])
    with trio.fail_after(5):
        chunks = await dispatch(broker, fake_connection(), frame)
    assert isinstance(chunks[-1], AfterSent)
    assert value(broker, "errors_total", request="Fetch", error="NONE") == 2  # counted with the answer
    assert value(broker, "totaltimems_count", request="Fetch") is None  # not sent yet
    await collect(chunks)  # sends it, as the connection would
    assert value(broker, "totaltimems_count", request="Fetch") == 1
    assert value(broker, "requests_total", request="Fetch", version="12") == 1
    for name in ("requestqueuetimems", "localtimems", "remotetimems", "throttletimems", "responsequeuetimems",
                 "responsesendtimems", "totaltimems"):
        assert value(broker, name + "_count", request="FetchConsumer") == 1
        assert value(broker, name, request="Fetch", quantile="0.99") is not None


async def test_a_long_poll_is_remote_time_not_local_time(broker):
    await create_ok(broker, "t")
    await call(broker, 1, 12, fetch_body(max_wait_ms=300, min_bytes=1))  # nothing comes: waits it all
    assert value(broker, "remotetimems_sum", request="Fetch") >= 250
    assert value(broker, "localtimems_sum", request="Fetch") < 150
    assert value(broker, "totaltimems_sum", request="Fetch") >= 250


def test_percentiles_are_yammers_of_the_recent_values():
    registry = CollectorRegistry()
    h = KafkaHistogram("x_ms", "x", ["request"], registry)
    for ms in range(1, 101):
        h.observe(("P",), ms - 0.4)  # rounded to whole ms, as Kafka records them
    get = registry.get_sample_value
    assert get("x_ms", {"request": "P", "quantile": "0.50"}) == 50.5
    assert get("x_ms", {"request": "P", "quantile": "0.99"}) == pytest.approx(99.99)
    assert get("x_ms", {"request": "P", "quantile": "0.999"}) == 100
    assert (get("x_ms_count", {"request": "P"}), get("x_ms_sum", {"request": "P"})) == (100, 5050)
    for _ in range(2000):  # only the last 1028 values make the percentiles
        h.observe(("P",), 7)
    assert get("x_ms", {"request": "P", "quantile": "0.999"}) == 7


def test_socket_server_metrics_are_named_as_the_jmx_exporter_names_them(broker):
    """Strimzi's rule for ``kafka.server<type=socket-server-metrics, listener=..>`` gives
    ``kafka_server_socket_server_metrics_connection_count`` (what its dashboards query)."""
    broker.metrics.connections.labels("PLAINTEXT").inc()
    broker.metrics.connections_created.labels("PLAINTEXT").inc()
    get = broker.metrics.registry.get_sample_value
    assert get("kafka_server_socket_server_metrics_connection_count", {"listener": "PLAINTEXT"}) == 1
    assert get("kafka_server_socket_server_metrics_connection_creation_total", {"listener": "PLAINTEXT"}) == 1
    broker.metrics.expired_connections_killed.labels("PLAINTEXT").inc()  # a gauge to the exporter: no _total
    assert get("kafka_server_socket_server_metrics_expired_connections_killed_count", {"listener": "PLAINTEXT"}) == 1


async def test_conversion_time_is_recorded_for_every_produce_and_fetch(broker):
    """Kafka's ``MessageConversionsTimeMs`` histograms (Produce and Fetch only) get every such request, 0
    when nothing was converted: a v9 Produce counts, a v2 Produce of magic-1 messages converts."""
    await create_ok(broker, "t")
    await call(broker, 0, 9, produce_body(1, [0]))
    legacy = RecordBatchBuilder(magic=1)
    legacy.append(b"k", b"v", timestamp=1)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="t", partition_data=[
        Data.PartitionProduceData(index=0, records=bytearray(legacy.build()))])])  # fmt: skip
    await call(broker, 0, 2, body)
    await call(broker, 1, 12, fetch_body())
    assert value(broker, "messageconversionstimems_count", request="Produce") == 2
    assert value(broker, "messageconversionstimems_count", request="Fetch") == 1
    assert value(broker, "messageconversionstimems_count", request="FetchConsumer") is None
    assert value(broker, "messageconversionstimems", request="Fetch", quantile="0.99") == 0
