"""A handler that fails unexpectedly answers UNKNOWN_SERVER_ERROR, as Kafka's ``KafkaApis.handle`` does.

Kafka catches any Throwable out of a handler, logs "Unexpected error handling request" at ERROR with the
stack trace, and sends the request's ``getErrorResponse`` with ``Errors.forException`` of it:
UNKNOWN_SERVER_ERROR for anything that is not an ``ApiException``. Only a Produce with ``acks=0``, whose error
response is null, closes the connection instead. Before, such a failure reached the connection's catch-all
and closed the connection. Here a function a handler calls is made to raise, on a broker served in process
and talked to over TCP: the client reads the error answer, the same connection answers the next request, the
log line carries the traceback, the answer's errors are counted. Cancellation passes through untouched.
"""

from __future__ import annotations

import logging
import struct
from contextlib import asynccontextmanager

import attrs
import pytest
import trio

from broker.config import BrokerConfig
from broker.dispatch import REGISTRY, dispatch
from broker.handlers import describe_configs, list_offsets, produce
from broker.server import serve_broker
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request
from protocol.records import RecordBatchBuilder

from ._admin_client import broker, create_ok, fake_connection, req, sub  # noqa: F401
from .test_unwritable_answers import USE_MESSAGE, errors_counted

USE = ErrorCode.UNKNOWN_SERVER_ERROR
TOPIC = 2


def injected(*_args, **_kwargs):
    raise RuntimeError("injected failure")


@asynccontextmanager
async def served(tmp_path):
    """A broker served on port 0 in process, and a TCP connection to it."""
    props = {"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
             "prometheus.port": "0"}  # fmt: skip
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve_broker, BrokerConfig.from_props(props))
        stream = await trio.open_tcp_stream(*broker.bound[0])
        try:
            yield broker, stream
        finally:
            await stream.aclose()
            nursery.cancel_scope.cancel()


async def _read(stream, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = await stream.receive_some(size - len(data))
        if not chunk:
            raise EOFError(f"end of stream after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


async def exchange(stream, key: int, version: int, body, correlation_id: int = 5):
    """Send one request and read its answer, decoded."""
    await stream.send_all(encode_request(RequestHeader(key, version, correlation_id, "failing"), body))
    size = struct.unpack(">i", await _read(stream, 4))[0]
    got_id, resp = decode_response(await _read(stream, size), API_BY_KEY[key], version)
    assert got_id == correlation_id
    return resp


async def still_serves(stream) -> None:
    resp = await exchange(stream, 18, 3, req(18, client_software_name="t", client_software_version="1"), 99)
    assert resp.error_code == ErrorCode.NONE and resp.api_keys


def _describe_configs(name: str):
    Res = sub(32, "DescribeConfigsResource")
    return req(32, resources=[Res(resource_type=TOPIC, resource_name=name, configuration_keys=None)])


async def test_a_failing_describe_configs_answers_unknown_server_error_and_the_connection_serves_on(
        tmp_path, monkeypatch, caplog):  # fmt: skip
    with trio.fail_after(20):
        async with served(tmp_path) as (broker, stream):
            await create_ok(broker, "t")
            monkeypatch.setattr(describe_configs, "_entries", injected)
            with caplog.at_level(logging.ERROR, "broker.dispatch"):
                resp = await exchange(stream, 32, 4, _describe_configs("t"))
            assert [(r.resource_name, r.error_code, r.error_message, r.configs) for r in resp.results] == [
                ("t", USE, USE_MESSAGE, [])]
            await still_serves(stream)
    record = next(r for r in caplog.records if r.levelno == logging.ERROR)
    assert record.getMessage().startswith("Unexpected error handling request DescribeConfigs v4 (correlation id 5")
    assert record.getMessage().endswith("injected failure; answering UNKNOWN_SERVER_ERROR")
    assert "Traceback" in caplog.text and 'raise RuntimeError("injected failure")' in caplog.text
    assert errors_counted(broker, "DescribeConfigs", "UNKNOWN_SERVER_ERROR") == 1


async def test_a_failing_list_offsets_answers_unknown_server_error_for_every_partition(tmp_path, monkeypatch):
    with trio.fail_after(20):
        async with served(tmp_path) as (broker, stream):
            await create_ok(broker, "t", 2)
            monkeypatch.setattr(list_offsets, "_lookup", injected)
            T = sub(2, "ListOffsetsTopic")
            body = req(2, replica_id=-1, topics=[T(name="t", partitions=[
                T.ListOffsetsPartition(partition_index=i, timestamp=-1) for i in (0, 1)])])  # fmt: skip
            resp = await exchange(stream, 2, 7, body)
            parts = resp.topics[0].partitions
            assert [(p.partition_index, p.error_code, p.offset, p.timestamp) for p in parts] == [
                (0, USE, -1, -1), (1, USE, -1, -1)]
            await still_serves(stream)
            assert errors_counted(broker, "ListOffsets", "UNKNOWN_SERVER_ERROR") == 2


def _produce(acks: int):
    builder = RecordBatchBuilder()
    builder.append(b"k", b"v", timestamp=1_700_000_000_000)
    Data = sub(0, "TopicProduceData")
    return req(0, acks=acks, timeout_ms=5000, topic_data=[Data(name="t", partition_data=[
        Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip


async def test_a_failing_produce_answers_unknown_server_error_and_with_acks_0_closes(tmp_path, monkeypatch):
    with trio.fail_after(20):
        async with served(tmp_path) as (broker, stream):
            await create_ok(broker, "t")
            monkeypatch.setattr(produce, "_produce_one", injected)
            resp = await exchange(stream, 0, 9, _produce(acks=1))
            part = resp.responses[0].partition_responses[0]
            assert (resp.responses[0].name, part.index, part.error_code, part.base_offset) == ("t", 0, USE, -1)
            await still_serves(stream)
            # acks=0: Kafka's getErrorResponse is null, so the connection closes, its errors counted
            await stream.send_all(encode_request(RequestHeader(0, 9, 6, "failing"), _produce(acks=0)))
            assert await stream.receive_some(100) == b""
            assert errors_counted(broker, "Produce", "UNKNOWN_SERVER_ERROR") == 2
            assert broker.topics.partition("t", 0).log.log_end_offset == 0  # nothing appended


def _metadata_frame() -> bytearray:
    return bytearray(encode_request(RequestHeader(3, 12, 7, "failing"), req(3, topics=[]))[4:])


class Interrupt(BaseException):
    """Not an Exception: like KeyboardInterrupt or SystemExit, not the handler's failure to answer."""


async def test_a_base_exception_from_a_handler_passes_through_untouched(broker, monkeypatch, caplog):
    raised = Interrupt("stop")

    async def interrupted(ctx, request):
        raise raised

    monkeypatch.setitem(REGISTRY, 3, attrs.evolve(REGISTRY[3], fn=interrupted))
    with trio.fail_after(5), pytest.raises(Interrupt) as caught:
        await dispatch(broker, fake_connection(), _metadata_frame())
    assert caught.value is raised and not caplog.records


async def test_a_cancelled_handler_is_cancelled_not_answered(broker, monkeypatch, caplog):
    started = trio.Event()

    async def waiting(ctx, request):
        started.set()
        await trio.sleep_forever()

    monkeypatch.setitem(REGISTRY, 3, attrs.evolve(REGISTRY[3], fn=waiting))
    answers = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            async def run() -> None:
                answers.append(await dispatch(broker, fake_connection(), _metadata_frame()))

            nursery.start_soon(run)
            await started.wait()
            nursery.cancel_scope.cancel()
    assert answers == [] and not [r for r in caplog.records if r.levelno >= logging.ERROR]
