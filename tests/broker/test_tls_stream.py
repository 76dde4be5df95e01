"""``TlsStream`` on its own: many small TLS records decrypted in one receive, the ends of a stream.

A trio ``SSLStream`` client talks to a ``TlsStream`` server over a socket
pair, with the test CA (``tests/tls_pki.py``).
"""

from __future__ import annotations

import ssl

import pytest
import trio

from broker.config import BrokerConfig
from broker.ssl_config import ssl_context
from broker.tls_stream import TlsStream
from tests.tls_pki import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


async def _pair(pki) -> tuple[TlsStream, trio.SSLStream]:
    config = BrokerConfig.from_props({"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem})
    ours, theirs = trio.socket.socketpair()
    server = TlsStream(trio.SocketStream(ours), ssl_context(config, "SSL"))
    client = trio.SSLStream(trio.SocketStream(theirs), ssl.create_default_context(cafile=pki.ca_pem),
                            server_hostname="localhost")  # fmt: skip
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.do_handshake)
        nursery.start_soon(client.do_handshake)
    return server, client


async def test_every_record_already_received_comes_in_one_receive(pki):
    with trio.fail_after(10):
        server, client = await _pair(pki)
        for i in range(200):  # 200 TLS records of 10 bytes, as librdkafka writes one per message
            await client.send_all(b"%09d;" % i)
        await trio.sleep(0.1)  # all of them in the server's socket buffer
        data = await server.receive_some(1 << 16)
        assert data == b"".join(b"%09d;" % i for i in range(200))
        target = bytearray(5)
        await client.send_all(b"abcdefgh")
        assert await server.receive_into(memoryview(target)) == 5 and target == b"abcde"
        assert await server.receive_some(100) == b"fgh"
        got = bytearray()

        async def read_all() -> None:
            while len(got) < 600_000:
                got.extend(await client.receive_some(1 << 20))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_all)
            await server.send_all(memoryview(b"x" * 600_000))  # more than one write's worth, whole
        assert got == b"x" * 600_000
        await client.aclose()  # close_notify: the end of the stream
        assert await server.receive_some(100) == b""
        await server.aclose()
        with pytest.raises(trio.ClosedResourceError):
            await server.receive_some(10)


async def test_a_bare_close_mid_stream_is_the_end_and_a_corrupt_record_breaks_it(pki):
    with trio.fail_after(10):
        server, client = await _pair(pki)
        await client.transport_stream.send_eof()  # the socket's end without close_notify
        assert await server.receive_some(100) == b""
        await server.aclose()
        await client.transport_stream.aclose()
        server, client = await _pair(pki)
        await client.transport_stream.send_all(b"\x17\x03\x03\x00\x20" + bytes(32))  # application data, garbage
        with pytest.raises(trio.BrokenResourceError) as broken:
            await server.receive_some(100)
        assert isinstance(broken.value.__cause__, ssl.SSLError)
        await server.aclose()
        await client.transport_stream.aclose()
