"""A listener with a named host is bound at one address, as Kafka's ``InetSocketAddress(host, port)``.

Where ``localhost`` resolves to both ::1 and 127.0.0.1, binding every
address of ``PLAINTEXT://localhost:0`` gave each socket its own ephemeral
port, and the port advertised (the first socket's) was not open on the other
family: an IPv4 client was refused, or reached another process. Java returns
IPv4 addresses first, so Kafka binds 127.0.0.1; so do we.
"""

from __future__ import annotations

import socket

import trio

from broker.config import BrokerConfig
from broker.server import serve_broker


class _BothFamilies(trio.abc.HostnameResolver):
    """``localhost`` resolved to ::1 first, then what the system says (127.0.0.1)."""

    async def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        real = await trio.to_thread.run_sync(socket.getaddrinfo, host, port, family, type, proto, flags)
        if host in ("localhost", b"localhost"):
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port or 0, 0, 0))] + real
        return real

    async def getnameinfo(self, sockaddr, flags):
        return socket.getnameinfo(sockaddr, flags)


async def test_a_localhost_listener_on_port_0_is_bound_once_at_the_address_it_advertises(tmp_path):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://localhost:0",
                                      "node.id": "1", "prometheus.port": "0"})  # fmt: skip
    trio.socket.set_custom_hostname_resolver(_BothFamilies())
    try:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                broker = await nursery.start(serve_broker, config)
                host, port = broker.advertised
                assert [address[:2] for address in broker.bound] == [("127.0.0.1", port)]
                assert host == "localhost"
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    pass
                nursery.cancel_scope.cancel()
    finally:
        trio.socket.set_custom_hostname_resolver(None)
