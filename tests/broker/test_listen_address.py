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
import struct

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


def _ipv6_loopback() -> bool:
    """Whether ::1 can be bound here (``socket.has_ipv6`` only says how Python was built: a container may
    have IPv6 turned off)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
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


async def test_an_ipv4_client_of_the_empty_host_socket_is_limited_by_its_ipv4_address(tmp_path):
    """On the dual-stack socket an IPv4 peer reads ``::ffff:127.0.0.1``; Kafka sees an ``Inet4Address``, so
    ``max.connections.per.ip.overrides=127.0.0.1:N`` applies to it (with a default of 0, it would be refused)."""
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://:0",
                                      "node.id": "1", "prometheus.port": "0", "max.connections.per.ip": "0",
                                      "max.connections.per.ip.overrides": "127.0.0.1:5"})  # fmt: skip
    request = struct.pack(">hhih", 18, 0, 1, -1)  # ApiVersions v0, no client id
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve_broker, config)
            client = trio.socket.socket()
            with client:
                await client.connect(("127.0.0.1", broker.advertised[1]))
                await client.send(struct.pack(">i", len(request)) + request)
                assert len(await client.recv(4)) == 4  # answered, not closed unserved
            nursery.cancel_scope.cancel()
