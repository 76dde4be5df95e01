"""Throttled connections (``broker/connection.py``, ``broker/quotas.py``): when the answer goes out and how long
the connection then reads nothing, seen from the client's end of a socket pair.

The trio clock jumps over the broker's mute (``autojump_clock``), so ``trio.current_time()`` tells how long the
client waited; the quotas measure on the wall clock, which barely moves meanwhile.
"""

from __future__ import annotations

import struct
from contextlib import asynccontextmanager

import trio

from broker.connection import Connection
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request
from protocol.records import RecordBatchBuilder

from ._admin_client import broker, create_ok, req, sub  # noqa: F401  (broker: a fixture)
from .test_client_quotas import alter


@asynccontextmanager
async def _served(broker):  # noqa: F811
    """A plain connection to ``broker`` over a socket pair: the client's end."""
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, trio.SocketStream(ours), "127.0.0.1:1", "PLAINTEXT")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(connection.serve)
        async with trio.SocketStream(theirs) as stream:
            yield stream
        nursery.cancel_scope.cancel()


async def _send(stream, api_key: int, version: int, client_id: str, **fields) -> None:
    await stream.send_all(encode_request(RequestHeader(api_key, version, 7, client_id), req(api_key, **fields)))


async def _receive(stream, api_key: int, version: int):
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = await stream.receive_some(65536)
        assert chunk, "the broker closed the connection"
        data += chunk
    return decode_response(data[4:], API_BY_KEY[api_key], version)[1]


def _produce_fields(topic: str, size: int, acks: int = 1) -> dict:
    builder = RecordBatchBuilder()
    for i in range(size // 1000):
        builder.append(b"k%d" % i, b"v" * 1000, timestamp=1)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=builder.build())
    return {"acks": acks, "timeout_ms": 1000, "topic_data": [Data(name=topic, partition_data=[part])]}


async def test_every_version_is_answered_at_once_and_then_muted(broker, autojump_clock):  # noqa: F811
    """Kafka sends every answer at once and mutes the channel after it, whatever the version
    (``RequestHandlerHelper.sendResponseMaybeThrottle``): a client too old to wait by itself finds its next
    request held."""
    await create_ok(broker, "q")
    await alter(broker, [([("client-id", "old")], {"producer_byte_rate": 1_000.0})])
    with trio.fail_after(30):
        async with _served(broker) as stream:
            for version in (5, 9):  # before and after KIP-219's Produce v6
                start = trio.current_time()
                await _send(stream, 0, version, "old", **_produce_fields("q", 15_000))  # 1.5 kB/s over 10 s
                answer = await _receive(stream, 0, version)
                answered = trio.current_time()
                assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
                assert answer.throttle_time_ms >= 4_000 and answered - start < 0.5  # not held back
                await _send(stream, 3, 5, "old", topics=[])
                await _receive(stream, 3, 5)
                assert trio.current_time() - answered >= answer.throttle_time_ms / 1000 - 0.01  # muted meanwhile


async def test_a_produce_with_acks_0_is_exempt_from_the_request_quota(broker, autojump_clock):  # noqa: F811
    """Kafka records no request time for a Produce with ``acks=0`` (``KafkaApis.handleProduceRequest``): it
    never mutes the connection for it; the Metadata after is held by its own."""
    await create_ok(broker, "z")
    await alter(broker, [([("client-id", "fire")], {"request_percentage": 0.0001})])
    with trio.fail_after(30):
        async with _served(broker) as stream:
            start = trio.current_time()
            for _ in range(3):
                await _send(stream, 0, 9, "fire", **_produce_fields("z", 2_000, acks=0))
            await _send(stream, 3, 9, "fire", topics=[])
            answer = await _receive(stream, 3, 9)
            assert trio.current_time() - start < 0.5 and 0 < answer.throttle_time_ms <= 1000
    assert broker.topics.partition("z", 0).log.log_end_offset == 6  # fire and forget: all written
