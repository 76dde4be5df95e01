"""A listener with a named host is bound at one address, as Kafka's ``InetSocketAddress(host, port)``.

Where ``localhost`` resolves to both ::1 and 127.0.0.1, binding every
address of ``PLAINTEXT://localhost:0`` gave each socket its own ephemeral
port, and the port advertised (the first socket's) was not open on the other
family: an IPv4 client was refused, or reached another process. Java returns
IPv4 addresses first, so Kafka binds 127.0.0.1; so do we. An empty host
(every interface) is one IPv6 wildcard socket that takes IPv4 too, as
Kafka's ``InetSocketAddress(port)``: both families on one port, even port 0.
"""

from __future__ import annotations

import socket

import pytest
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


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
async def test_an_empty_host_on_port_0_is_one_socket_both_families_reach(tmp_path):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://:0",
                                      "node.id": "1", "prometheus.port": "0"})  # fmt: skip
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve_broker, config)
            _host, port = broker.advertised
            assert [address[1] for address in broker.bound] == [port]  # one socket, on the advertised port
            for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
                with socket.socket(family) as client:
                    client.settimeout(5)
                    client.connect((address, port))
            nursery.cancel_scope.cancel()
