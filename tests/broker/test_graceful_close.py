"""A stopping broker closes its connections so that clients read every answer it wrote.

Closing a socket whose receive buffer still holds bytes the broker has not
read (a request a client pipelined) makes the kernel send a reset instead of
an end of stream. A client that then writes its next request (as a Java
producer with requests in flight does between two reads) fails with
ECONNRESET and drops the answers it had not read yet: an idempotent producer
then resends batches that were appended, and gets duplicates or
OUT_OF_ORDER_SEQUENCE_NUMBER after the restart. These tests serve a broker
on port 0 in process, talk to it over a plain socket with our protocol
encoder, stop it by cancelling its scope (as SIGTERM does) and check what
the client can still read:

* the answers written before the stop, then a clean end of stream, while the
  client keeps sending (what it sends after the stop is not appended); over
  TLS too, where close_notify comes before the end of stream;
* the answer of a Produce whose handling was under way at the stop (it was
  appended, so it must be answered);
* a client that reads nothing does not hold the stop beyond the grace
  period, and still gets an end of stream rather than a reset;
* a connection closed for a request Kafka refuses (not at a stop) ends the
  same way: the answers before it, then an end of stream, not a reset;
* a request waiting at the stop answers at once instead of being cut at the
  end of the grace: a long-polling Fetch with what there is, a parked
  JoinGroup or SyncGroup NOT_COORDINATOR (Kafka's ``onUnloaded``), so the
  client looks for the coordinator again.
"""

from __future__ import annotations

import socket
import ssl
import struct
from contextlib import asynccontextmanager

import pytest
import trio

from broker.config import BrokerConfig
from broker import closing
from broker.server import serve_broker
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request
from protocol.records import RecordBatchBuilder

from tests.tls_pki import make_pki

from ._admin_client import create_ok, req, sub
from ._group_client import join_new, protocols

RECORDS = 4  # per batch
GRACE_SECONDS = 3.0  # the stop's grace in these tests: room for a client thread slowed down on 2 busy cores


@pytest.fixture(autouse=True)
def _longer_grace(monkeypatch):
    monkeypatch.setattr(closing, "STOP_GRACE_SECONDS", GRACE_SECONDS)
TCP_ESTABLISHED = 1  # tcpi_state of Linux's TCP_INFO


@asynccontextmanager
async def _served(tmp_path, **extra: str):
    """A broker served on port 0; yields it, the scope whose cancel stops it, and an event set once stopped."""
    props = {"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
             "prometheus.port": "0", **extra}  # fmt: skip
    config = BrokerConfig.from_props(props)
    scope, stopped = trio.CancelScope(), trio.Event()

    async def run(task_status=trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await serve_broker(config, task_status=task_status)
        stopped.set()

    async with trio.open_nursery() as nursery:
        broker = await nursery.start(run)
        yield broker, scope, stopped


def _produce(correlation_id: int, acks: int = 1) -> bytes:
    builder = RecordBatchBuilder()
    for i in range(RECORDS):
        builder.append(b"k%d" % i, b"v" * 100, timestamp=1_700_000_000_000)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=acks, timeout_ms=5000, topic_data=[Data(name="t", partition_data=[
        Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip
    return encode_request(RequestHeader(0, 9, correlation_id, "graceful"), body)


def _api_versions(correlation_id: int) -> bytes:
    return encode_request(RequestHeader(18, 0, correlation_id, "stuck"), req(18))


def _connect(address, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer is not None:  # before connecting: the window is agreed on at the handshake
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect(address)
    return sock


def _tcp_state(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]


async def _until(condition, timeout: float = 5) -> None:
    with trio.fail_after(timeout):
        while not condition():
            await trio.sleep(0.01)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError(f"end of stream after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def _read_produce_answer(sock: socket.socket) -> tuple[int, int, int]:
    """One Produce v9 answer: (correlation id, error code, base offset)."""
    size = struct.unpack(">i", _read_exactly(sock, 4))[0]
    correlation_id, resp = decode_response(_read_exactly(sock, size), API_BY_KEY[0], 9)
    part = resp.responses[0].partition_responses[0]
    return correlation_id, part.error_code, part.base_offset


def _read_while_sending(sock: socket.socket, answers: int) -> tuple[list, str]:
    """Read ``answers`` answers, sending one more Produce after each as a client with requests in flight does;
    then what follows them: ``"end of stream"``, ``"more bytes"``, or the error met on the way."""
    got: list = []
    try:
        for i in range(answers):
            got.append(_read_produce_answer(sock))
            sock.sendall(_produce(100 + i))
        return got, "end of stream" if sock.recv(1) == b"" else "more bytes"
    except (OSError, EOFError) as exc:
        return got, repr(exc)
    finally:
        sock.close()


def _drain_to_the_end(sock: socket.socket) -> str:
    """Read everything the broker sent; how the stream ended."""
    try:
        while sock.recv(1 << 16):
            pass
        return "end of stream"
    except OSError as exc:
        return repr(exc)
    finally:
        sock.close()


async def test_the_answers_written_before_a_stop_are_read_to_a_clean_end_of_stream(tmp_path):
    with trio.fail_after(20):
        async with _served(tmp_path) as (broker, scope, stopped):
            await create_ok(broker, "t", 1)
            log = broker.topics.manager.get_log("t", 0)
            sock = _connect(broker.bound[0])
            sock.sendall(b"".join(_produce(cid) for cid in range(3)))  # pipelined; the client reads nothing yet
            await _until(lambda: log.log_end_offset == 3 * RECORDS)
            scope.cancel()
            sock.sendall(_produce(3)[:20])  # a request begun: bytes the broker has not read when it stops
            await _until(lambda: _tcp_state(sock) != TCP_ESTABLISHED)  # the broker's side has closed or shut down
            answers, ending = await trio.to_thread.run_sync(_read_while_sending, sock, 3)
            await stopped.wait()
    assert answers == [(cid, ErrorCode.NONE, cid * RECORDS) for cid in range(3)]
    assert ending == "end of stream"
    assert log.log_end_offset == 3 * RECORDS  # nothing sent after the stop was appended


async def test_over_tls_the_answers_written_before_a_stop_are_read_to_close_notify(tmp_path):
    pki = make_pki(tmp_path / "pki")
    tls = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem}
    client = ssl.create_default_context(cafile=pki.ca_pem)
    with trio.fail_after(20):
        async with _served(tmp_path, **tls) as (broker, scope, stopped):
            await create_ok(broker, "t", 1)
            log = broker.topics.manager.get_log("t", 0)
            sock = await trio.to_thread.run_sync(
                lambda: client.wrap_socket(_connect(broker.bound[0]), server_hostname="localhost"))
            sock.sendall(b"".join(_produce(cid) for cid in range(3)))
            await _until(lambda: log.log_end_offset == 3 * RECORDS)
            scope.cancel()
            sock.sendall(_produce(3)[:20])  # one more TLS record, not read by the broker before it stops
            await _until(lambda: _tcp_state(sock) != TCP_ESTABLISHED)
            answers, ending = await trio.to_thread.run_sync(_read_while_sending, sock, 3)
            await stopped.wait()
    assert answers == [(cid, ErrorCode.NONE, cid * RECORDS) for cid in range(3)]
    assert ending == "end of stream"  # close_notify read
    assert log.log_end_offset == 3 * RECORDS


async def test_a_produce_under_way_at_the_stop_is_answered(tmp_path):
    with trio.fail_after(20):
        async with _served(tmp_path) as (broker, scope, stopped):
            await create_ok(broker, "t", 1)
            log = broker.topics.manager.get_log("t", 0)
            waiting = trio.Event()

            async def slow_wait_durable() -> None:  # still awaiting after its append
                waiting.set()
                await trio.sleep(0.3)

            broker.wait_durable = slow_wait_durable
            sock = _connect(broker.bound[0])
            sock.sendall(_produce(7, acks=-1))
            await waiting.wait()
            assert log.log_end_offset == RECORDS  # appended: the client must learn it
            scope.cancel()
            answers, ending = await trio.to_thread.run_sync(_read_while_sending, sock, 1)
            await stopped.wait()
    assert answers == [(7, ErrorCode.NONE, 0)]
    assert ending == "end of stream"


async def test_a_client_that_reads_nothing_holds_the_stop_only_for_the_grace_period(tmp_path):
    with trio.fail_after(20):
        async with _served(tmp_path, **{"socket.send.buffer.bytes": "4096"}) as (broker, scope, stopped):
            sock = _connect(broker.bound[0], receive_buffer=4096)
            sock.sendall(b"".join(_api_versions(cid) for cid in range(400)))  # answers far beyond both buffers
            await _until(lambda: _tcp_state(sock) == TCP_ESTABLISHED)
            await trio.sleep(0.3)  # the broker blocked writing answers nobody reads
            sock.sendall(_api_versions(400))  # a request the blocked broker has not read
            scope.cancel()
            began = trio.current_time()
            await stopped.wait()
            took = trio.current_time() - began
            ending = await trio.to_thread.run_sync(_drain_to_the_end, sock)
    assert took < GRACE_SECONDS + 1.0, took
    assert ending == "end of stream"
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()


def _send_and_read_all(sock: socket.socket, data: bytes) -> tuple[bytes, str]:
    """Send ``data`` (what cannot be sent is dropped), then read to the end: what was read, how it ended."""
    try:
        sock.sendall(data)
    except OSError:
        pass
    got = bytearray()
    try:
        while chunk := sock.recv(1 << 16):
            got += chunk
        return bytes(got), "end of stream"
    except OSError as exc:
        return bytes(got), repr(exc)
    finally:
        sock.close()


async def test_a_connection_closed_for_a_refused_request_ends_with_the_answers_before_it(tmp_path):
    refused = struct.pack(">ihhih", 10, 32000, 0, 2, -1)  # an API key no broker knows: Kafka closes the connection
    more = struct.pack(">i", 400_000) + bytes(400_000)  # beyond one receive: still unread when the broker closes
    answer = _api_versions(1)
    with trio.fail_after(20):
        async with _served(tmp_path) as (broker, scope, _stopped):
            sock = _connect(broker.bound[0])
            got, ending = await trio.to_thread.run_sync(_send_and_read_all, sock, answer + refused + more)
            scope.cancel()
    size, correlation_id = struct.unpack(">ii", got[:8])
    assert (len(got), correlation_id) == (4 + size, 1)  # the ApiVersions answer, whole
    assert ending == "end of stream"


async def test_a_connection_no_server_stops_is_cancelled_as_usual(tmp_path):
    """A ``Connection`` built without the server's ``Closing`` (as tests build one) is not shielded: a caller's
    timeout ends it while it writes answers a peer never reads (then the close's own bounded lingering)."""
    from broker.connection import Connection

    from ._admin_client import open_broker

    b = open_broker(tmp_path)
    ours, theirs = socket.socketpair()
    try:
        for s in (ours, theirs):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        theirs.setblocking(False)
        theirs.send(b"".join(_api_versions(cid) for cid in range(400)))  # what fits; then it reads nothing
        conn = Connection(b, trio.SocketStream(trio.socket.from_stdlib_socket(ours)), "peer", "PLAINTEXT")
        began = trio.current_time()
        with trio.fail_after(10):
            with trio.move_on_after(0.5):
                await conn.serve()
        assert trio.current_time() - began < 0.5 + closing.CLOSE_GRACE_SECONDS + 1.0
    finally:
        theirs.close()
        b.close()


def _ask(sock: socket.socket, api_key: int, version: int, body, correlation_id: int) -> None:
    sock.sendall(encode_request(RequestHeader(api_key, version, correlation_id, "waiting"), body))


def _answer_then_end(sock: socket.socket, api_key: int, version: int) -> tuple[object, str]:
    """The one answer the broker sends (None if the stream ended first), then how the stream ended."""
    try:
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        answer = decode_response(_read_exactly(sock, size), API_BY_KEY[api_key], version)[1]
    except (OSError, EOFError):
        answer = None
    return answer, _drain_to_the_end(sock)


async def _stop_and_read(scope, stopped, socks: list[tuple[socket.socket, int, int]]) -> tuple[list, float]:
    """Stop the broker with each socket's request waiting; the answers and endings, and how long they took."""
    await trio.sleep(0.3)  # each request parked in the broker
    scope.cancel()
    began = trio.current_time()
    got = []
    for sock, api_key, version in socks:
        got.append(await trio.to_thread.run_sync(_answer_then_end, sock, api_key, version))
    took = trio.current_time() - began
    await stopped.wait()
    return got, took


async def test_a_long_polling_fetch_answers_at_the_stop_with_what_there_is(tmp_path):
    T = sub(1, "FetchTopic")
    body = req(1, replica_id=-1, max_wait_ms=30_000, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
               topics=[T(topic="t", partitions=[T.FetchPartition(partition=0, fetch_offset=0,
                                                                 partition_max_bytes=1 << 20)])])  # fmt: skip
    with trio.fail_after(20):
        async with _served(tmp_path) as (broker, scope, stopped):
            await create_ok(broker, "t", 1)
            sock = _connect(broker.bound[0])
            _ask(sock, 1, 4, body, 5)
            [(answer, ending)], took = await _stop_and_read(scope, stopped, [(sock, 1, 4)])
    assert answer is not None, ending  # the old stop cut it at the end of the grace
    part = answer.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, bytes(part.records or b"")) == (ErrorCode.NONE, 0, b"")
    assert ending == "end of stream" and took < GRACE_SECONDS / 2, took


async def test_a_parked_join_group_and_sync_group_answer_not_coordinator_at_the_stop(tmp_path):
    delay = {"group.initial.rebalance.delay.ms": "0"}
    with trio.fail_after(20):
        async with _served(tmp_path, **delay) as (broker, scope, stopped), trio.open_nursery() as nursery:
            await join_new(broker, "j")  # j: stable with one member, who will not rejoin for a while
            joining = _connect(broker.bound[0])  # a second member: its JoinGroup waits for the first
            _ask(joining, 11, 3, req(11, group_id="j", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                    member_id="", protocol_type="consumer", protocols=protocols()), 1)  # fmt: skip
            leader = await join_new(broker, "s")  # s: a follower's SyncGroup waits for the leader's
            nursery.start_soon(lambda: join_new(broker, "s"))
            await _until(lambda: broker.groups.groups["s"].state == "PreparingRebalance")
            again = await join_new(broker, "s", member_id=leader.member_id)
            follower = next(m.member_id for m in again.members if m.member_id != leader.member_id)
            syncing = _connect(broker.bound[0])
            _ask(syncing, 14, 3, req(14, group_id="s", generation_id=again.generation_id, member_id=follower,
                                     group_instance_id=None, assignments=[]), 2)  # fmt: skip
            got, took = await _stop_and_read(scope, stopped, [(joining, 11, 3), (syncing, 14, 3)])
    (joined, join_ending), (synced, sync_ending) = got
    assert joined is not None and synced is not None, got  # the old stop cut both at the end of the grace
    assert (joined.error_code, synced.error_code) == (ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR)
    assert joined.member_id  # its member id, as Kafka's onUnloaded answers a join
    assert (join_ending, sync_ending) == ("end of stream", "end of stream") and took < GRACE_SECONDS / 2, took
