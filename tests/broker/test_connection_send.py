"""``Connection.send_chunks``: small chunks joined, file regions by sendfile, big buffers sent as they are.

Whatever the mix, the peer must receive exactly the chunks' bytes in order. A
peer that reads nothing for ``connections.max.idle.ms`` is given up on
(``StalledClient``), as Kafka's idle expiry closes a channel that cannot be
written; one that reads slowly is not.
"""

from __future__ import annotations

import os
import types

import pytest
import trio
import trio.testing

from broker.connection import DIRECT_SEND_BYTES, Connection, FileRegion
from broker.socket_send import StalledClient
from broker.converted_send import ConvertedRecords
from broker.request_metrics import AfterSent
from protocol.records import Codec, RecordBatchBuilder
from protocol.records.lazy_convert import BytesSource, start_down_conversion

from ._admin_client import collect

_CONFIG = types.SimpleNamespace(connections_max_idle_ms=600_000)


def _converted() -> ConvertedRecords:
    """Down-converted records long enough to be cut at their declared size."""
    data = b""
    for first in range(0, 2000, 50):
        b = RecordBatchBuilder(compression=Codec.NONE, base_offset=first)
        for i in range(50):
            b.append(b"k%d" % i, b"v" * 20, timestamp=1_700_000_000_000)
        data += b.build()
    return ConvertedRecords(start_down_conversion(BytesSource(data), target_magic=1, fetch_offset=0), lambda n: None,
                            lambda s: None)  # fmt: skip


async def _send_and_receive(broker, chunks: list, size: int, send_buffer: int = 0, read_after: float = 0) -> bytes:
    """``send_chunks`` on one end of a socket pair while the other end reads ``size`` bytes; what it read."""
    a, b = trio.socket.socketpair()
    if send_buffer:
        a.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, send_buffer)
    conn = Connection(broker, trio.SocketStream(a))
    received = bytearray()

    async def receive() -> None:
        await trio.sleep(read_after)
        while len(received) < size:
            received.extend(await b.recv(1 << 16))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            await conn.send_chunks(chunks)
    a.close()
    b.close()
    return bytes(received)


async def test_mixed_chunks_arrive_whole_and_in_order(tmp_path):
    path = tmp_path / "segment"
    path.write_bytes(os.urandom(50_000))
    sent_total = []
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=sent_total.append))
    big = os.urandom(DIRECT_SEND_BYTES + 17)
    with open(path, "rb") as f:
        region = FileRegion(f.fileno(), 1000, 40_000)
        converted = _converted()
        chunks = [b"\x00\x00\x00\x10", b"head", region, b"mid", big, memoryview(big)[5:DIRECT_SEND_BYTES + 9],
                  b"t", converted, b"end"]  # fmt: skip
        expected = await collect(chunks)
        assert len(expected) == sum(len(c) for c in chunks)
        received = await _send_and_receive(broker, chunks, len(expected))
    assert received == expected
    assert sent_total == [len(expected)]


async def test_request_times_are_recorded_when_the_peer_goes_away_mid_send():
    """Kafka records the metrics of the responses in flight on a connection that closes
    (``Processor.processDisconnected``)."""
    done = []
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=lambda n: None))
    a, b = trio.socket.socketpair()
    b.close()
    conn = Connection(broker, trio.SocketStream(a))
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await conn.send_chunks([os.urandom(DIRECT_SEND_BYTES + 1), AfterSent(lambda: done.append(True))])
    a.close()
    assert done == [True]


async def test_a_small_answer_goes_out_without_a_scheduling_round():
    """On a plain socket whose buffer has room, the joined small chunks are written at once: no checkpoint
    (trio's ``send_all`` takes one after every send, a whole scheduling round per answer)."""
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=lambda n: None))
    a, b = trio.socket.socketpair()
    conn = Connection(broker, trio.SocketStream(a))
    with trio.testing.assert_no_checkpoints():
        await conn.send_chunks([b"\x00\x00\x00\x05", b"hello", AfterSent(lambda: None)])
    assert await b.recv(100) == b"\x00\x00\x00\x05hello"
    a.close()
    b.close()


async def test_what_the_kernel_does_not_take_at_once_follows_in_order():
    """Joined chunks larger than the socket's send buffer: the kernel takes a part, the rest is sent when the
    peer has read (``socket_send.send_plain``), and the peer gets every byte in order."""
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=lambda n: None))
    chunks = [os.urandom(5000) for _ in range(20)]  # 100 kB, each below DIRECT_SEND_BYTES: joined
    expected = b"".join(chunks)
    # the first write fills the 4 KiB buffer before anything is read
    assert await _send_and_receive(broker, chunks, len(expected), send_buffer=4096, read_after=0.05) == expected


async def test_a_small_answer_to_a_peer_gone_is_a_broken_stream():
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=lambda n: None))
    a, b = trio.socket.socketpair()
    b.close()
    conn = Connection(broker, trio.SocketStream(a))
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await conn.send_chunks([b"\x00\x00\x00\x01", b"x"])
    a.close()


async def test_frames_received_together_are_answered_with_a_checkpoint_between(monkeypatch):
    """Fairness: a client that pipelines requests does not hold the loop while each is answered; the
    receive of the first is a checkpoint, and ``_drain`` takes one before each further frame."""
    from protocol import FrameBuffer

    from broker import connection as connection_module

    answered = []

    async def dispatch(broker, conn, frame):
        answered.append(bytes(frame))
        return [b"\x00\x00\x00\x01", b"!"]

    monkeypatch.setattr(connection_module, "dispatch", dispatch)
    broker = types.SimpleNamespace(config=_CONFIG, metrics=types.SimpleNamespace(bytes_sent=lambda n: None),
                                   request_time=types.SimpleNamespace(installed=False))
    a, b = trio.socket.socketpair()
    conn = Connection(broker, trio.SocketStream(a))
    frames = FrameBuffer(1 << 20)
    frames.receive_data(b"".join(b"\x00\x00\x00\x02r%d" % i for i in range(1, 5)))
    checkpoints = 0

    async def count() -> None:
        nonlocal checkpoints
        while True:
            await trio.lowlevel.checkpoint()
            checkpoints += 1

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(count)
            await trio.lowlevel.checkpoint()  # the counter has started
            before = checkpoints
            await conn._drain(frames)
            between = checkpoints - before
            nursery.cancel_scope.cancel()
    assert answered == [b"r1", b"r2", b"r3", b"r4"]
    assert between >= 2  # three checkpoints: the other task has run in (at least) the first two rounds
    a.close()
    b.close()


def _idle_broker(idle_ms: int):
    config = types.SimpleNamespace(connections_max_idle_ms=idle_ms)
    return types.SimpleNamespace(config=config, metrics=types.SimpleNamespace(bytes_sent=lambda n: None))


@pytest.mark.parametrize("kind", ["buffer", "region"])
async def test_a_peer_that_reads_nothing_for_the_idle_time_is_given_up_on(tmp_path, kind):
    path = tmp_path / "segment"
    path.write_bytes(bytes(8 << 20))
    a, b = trio.socket.socketpair()
    conn = Connection(_idle_broker(300), trio.SocketStream(a))
    with path.open("rb") as f:
        chunk = bytes(8 << 20) if kind == "buffer" else FileRegion(f.fileno(), 0, 8 << 20)
        began = trio.current_time()
        with trio.fail_after(10), pytest.raises(StalledClient, match="connections.max.idle.ms"):
            await conn.send_chunks([chunk])
    assert 0.3 <= trio.current_time() - began < 3
    a.close()
    b.close()


async def test_a_peer_that_reads_slowly_gets_everything(tmp_path):
    """The bound is on each wait, not on the whole answer: reading a slice every 100 ms, the peer takes longer
    than the 1 s bound in all (checked) and still gets everything."""
    a, b = trio.socket.socketpair()
    a.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 4096)
    conn = Connection(_idle_broker(1000), trio.SocketStream(a))
    data, received = os.urandom(256 << 10), bytearray()

    async def receive() -> None:
        while len(received) < len(data):  # far slower than the kernel, never idle for the bound
            await trio.sleep(0.1)
            received.extend(await b.recv(8 << 10))

    began = trio.current_time()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive)
            await conn.send_chunks([data])
    assert bytes(received) == data and trio.current_time() - began > 1.0
    a.close()
    b.close()


async def test_close_notify_to_a_tls_client_that_reads_nothing_ends_within_the_close_grace(tmp_path):
    """The idle-bounded sender of a TLS connection is not the close's: a client stalled longer than a short
    connections.max.idle.ms made close_notify raise ``StalledClient`` out of ``close_stream`` (which never
    raises), and that error stopped the broker from the accept nursery."""
    import socket
    import ssl
    import threading

    from broker.closing import CLOSE_GRACE_SECONDS, Closing, close_stream
    from broker.socket_send import send_plain
    from broker.tls_stream import TlsStream
    from tests.tls_pki import make_pki

    pki = make_pki(tmp_path / "pki")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.broker_pair_pem)
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    done = threading.Event()

    def client() -> None:  # shakes hands, then reads nothing until the end of the test
        raw = socket.create_connection(listener.socket.getsockname()[:2])
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        with ssl.create_default_context(cafile=pki.ca_pem).wrap_socket(raw, server_hostname="localhost"):
            done.wait(20)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        with trio.fail_after(15):
            stream = await listener.accept()
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            tls = TlsStream(stream, context)
            await tls.do_handshake()
            tls.sender = lambda data: send_plain(stream.socket, data, 0.3)  # as Connection._serve sets it
            with pytest.raises(StalledClient):
                while True:
                    await tls.send_all(b"x" * 16384)
            began = trio.current_time()
            await close_stream(tls, Closing(), linger=False)
            assert trio.current_time() - began < CLOSE_GRACE_SECONDS + 1
            assert stream.socket.fileno() == -1
    finally:
        done.set()
        thread.join(10)
        listener.socket.close()
