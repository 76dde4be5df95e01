"""Kafka's idle-percent gauges from the trio loop's I/O waits (``broker/loop_idle.py``).

Kafka exports ``NetworkProcessorAvgIdlePercent`` (SocketServer), each
processor's ``IdlePercent`` and ``RequestHandlerAvgIdlePercent``
(KafkaRequestHandlerPool, a meter whose MeanRate the JMX exporter's Percent
rule exports); dashboards read them as fractions, near 1 on an idle broker
and falling under load. Here both pools are the one trio loop: the tests
serve a broker on port 0 with a short metric span (2 x 500 ms), leave it
idle, then load it with Produce requests over a socket, and read the
gauges; and check the arithmetic on a fake clock.
"""

from __future__ import annotations

import struct

import trio

from broker.config import BrokerConfig
from broker.loop_idle import LoopIdle
from broker.server import serve_broker
from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request
from protocol.records import RecordBatchBuilder

from ._admin_client import create_ok, req, sub

NETWORK = "kafka_network_socketserver_networkprocessoravgidle_percent"
PROCESSOR = "kafka_network_processor_idle_percent"
HANDLERS = "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent"


def gauges(b) -> tuple[float, float, float]:
    registry = b.metrics.registry
    return (registry.get_sample_value(NETWORK), registry.get_sample_value(PROCESSOR, {"networkProcessor": "0"}),
            registry.get_sample_value(HANDLERS))  # fmt: skip


async def produce_over_socket(address: tuple[str, int], seconds: float) -> int:
    """Send Produce v9 requests one after another for ``seconds``; the number answered."""
    builder = RecordBatchBuilder()
    for i in range(50):
        builder.append(b"k%d" % i, b"v" * 200, timestamp=1_700_000_000_000)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="load", partition_data=[
        Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip
    frame = encode_request(RequestHeader(0, 9, 1, "load"), body)
    stream = await trio.open_tcp_stream(*address)
    answered, deadline = 0, trio.current_time() + seconds
    async with stream:
        while trio.current_time() < deadline:
            await stream.send_all(frame)
            data = bytearray()
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                data += await stream.receive_some(65536)
            _cid, resp = decode_response(bytes(data[4:]), API_BY_KEY[0], 9)
            assert resp.responses[0].partition_responses[0].error_code == 0
            answered += 1
    return answered


async def test_the_idle_gauges_are_near_one_idle_and_drop_under_load(tmp_path):
    config = BrokerConfig.from_props({
        "log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "metrics.num.samples": "2", "metrics.sample.window.ms": "500", "prometheus.port": "0",
    })  # fmt: skip
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            b = await nursery.start(serve_broker, config)
            await create_ok(b, "load", 1)
            await trio.sleep(1.5)  # more than the span: the recent share is all idle time
            idle = gauges(b)
            assert all(value > 0.9 for value in idle), idle
            assert await produce_over_socket(b.bound[0], 1.5) > 10
            loaded = gauges(b)
            assert loaded[0] < 0.5 and abs(loaded[0] - loaded[1]) < 0.05, loaded  # the span holds load only
            assert loaded[2] < idle[2] - 0.2, (idle, loaded)  # the mean since the start has fallen
            nursery.cancel_scope.cancel()


def test_the_shares_over_the_span_and_since_the_start():
    now = [100.0]
    meter = LoopIdle((2, 1000), clock=lambda: now[0])  # a 2 s span, marks every 0.1 s
    assert list(meter.metric_samples()) == []  # nothing exported before the server starts it
    meter.start()

    def wait(idle_s: float, busy_s: float) -> None:
        meter.before_io_wait(1.0)
        now[0] += idle_s
        meter.after_io_wait(1.0)
        now[0] += busy_s

    for _ in range(30):  # 3 s, idle 90 %
        wait(0.09, 0.01)
    assert abs(meter.recent_ratio() - 0.9) < 0.01 and abs(meter.mean_ratio() - 0.9) < 0.01
    for _ in range(30):  # 3 s more, idle 10 %: the span holds these only
        wait(0.01, 0.09)
    assert abs(meter.recent_ratio() - 0.1) < 0.01
    assert abs(meter.mean_ratio() - 0.5) < 0.01
    meter.before_io_wait(5.0)
    now[0] += 2.0  # a wait still under way counts up to now
    assert meter.recent_ratio() > 0.95
