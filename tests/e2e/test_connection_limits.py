"""Connection limits and idle connections on a real broker process, as Kafka's socket server applies them.

``max.connections.per.ip`` (and its overrides): a connection past the limit
is closed at once, and logged; ``max.connections`` and
``listener.name.<l>.max.connections``: the broker stops accepting until a
connection closes, so the next client waits instead of being refused (the
inter-broker listener, PLAINTEXT by default, is exempt from ``max.connections``);
``connections.max.idle.ms``: a connection without a request for that long is
closed, while a long-polling Fetch is not idle. ``max.connection.creation.rate``
makes the acceptor wait, and an address past its ``connection_creation_rate``
quota has its connection closed unserved. A limit raised at runtime
(a dynamic broker config) lets a waiting client in at once. Connections made and closed
are counted per listener. Bad values stop the start naming the key.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time

import pytest

from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request

from ..broker._admin_client import req, sub
from .harness import ROOT, BrokerProcess, raw_call, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]


def _start(tmp_path, **props) -> BrokerProcess:
    return BrokerProcess(tmp_path / "data", props).start()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _api_versions(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True if the broker answers ApiVersions on ``sock``; False if it closed it or said nothing in time."""
    sock.settimeout(timeout)
    try:
        sock.sendall(encode_request(RequestHeader(18, 0, 1, "limits"), req(18)))
        head = sock.recv(4)
    except (TimeoutError, ConnectionError):
        return False
    if len(head) < 4:
        return False
    size = struct.unpack(">i", head)[0]
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return decode_response(data, API_BY_KEY[18], 0)[1].error_code == 0


def _closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def _counter(broker: BrokerProcess, name: str, listener: str = "PLAINTEXT") -> float:
    key = (f"kafka_server_socket_server_metrics_connection_{name}_total", (("listener", listener),))
    return broker.scrape().get(key, 0.0)


def test_connections_past_the_per_ip_limit_are_closed_at_once(tmp_path):
    broker = _start(tmp_path, **{"max.connections.per.ip": "2"})
    try:
        first, second = _connect(broker.port), _connect(broker.port)
        assert _api_versions(first) and _api_versions(second)
        third = _connect(broker.port)
        assert _closed(third, 5)
        wait_until(lambda: "Rejected connection from 127.0.0.1, address already has the configured maximum of 2 "
                           "connections." in broker.log_text())  # fmt: skip
        first.close()
        wait_until(lambda: _counter(broker, "close") == 1)
        fourth = _connect(broker.port)
        assert _api_versions(fourth)
        assert _counter(broker, "creation") == 3  # the refused one was never made
        for sock in (second, third, fourth):
            sock.close()
    finally:
        broker.kill()


def test_an_override_for_an_address_wins_even_over_zero(tmp_path):
    broker = _start(tmp_path, **{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "localhost:1"})
    try:
        first = _connect(broker.port)
        assert _api_versions(first)
        with _connect(broker.port) as second:
            assert _closed(second, 5)
        first.close()
    finally:
        broker.kill()


def test_at_max_connections_the_next_client_waits_until_one_closes(tmp_path):
    broker = _start(tmp_path, **{"listeners": "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
                                 "max.connections": "3", "listener.name.plaintext.max.connections": "1"})  # fmt: skip
    try:
        first = _connect(broker.ports[0])
        assert _api_versions(first)
        waiting = _connect(broker.ports[0])  # in the backlog: the listener's one slot is taken
        assert not _api_versions(waiting, timeout=1.0)
        other = [_connect(broker.ports[1]) for _ in range(2)]  # the other listener: up to the broker-wide 3
        assert all(_api_versions(s) for s in other)
        first.close()
        waiting.settimeout(5)
        assert len(waiting.recv(4)) == 4  # accepted now: its request is answered
        for sock in (waiting, *other):
            sock.close()
    finally:
        broker.kill()


def test_the_plaintext_listener_is_the_inter_broker_one_and_exempt_from_max_connections(tmp_path):
    broker = _start(tmp_path, **{"listeners": "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
                                 "max.connections": "1"})  # fmt: skip
    try:
        first = _connect(broker.ports[1])
        assert _api_versions(first)
        waiting = _connect(broker.ports[1])  # the broker-wide one slot is taken
        assert not _api_versions(waiting, timeout=1.0)
        # no inter.broker.listener.name: Kafka's default, PLAINTEXT, takes connections past the limit
        inter_broker = [_connect(broker.ports[0]) for _ in range(2)]
        assert all(_api_versions(s) for s in inter_broker)
        assert not _api_versions(waiting, timeout=0.5)
        for sock in (first, waiting, *inter_broker):
            sock.close()
    finally:
        broker.kill()


def test_a_listener_already_in_accept_waits_when_another_takes_the_last_slot(tmp_path):
    # THIRD's acceptor checked for a slot at startup and sits in accept(); OTHER then takes the one broker-wide
    # slot. Kafka's acceptor waits for a slot after accepting, so THIRD's client is served only once one is free.
    broker = _start(tmp_path, **{"listeners": "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0,THIRD://127.0.0.1:0",
                                 "listener.security.protocol.map":
                                     "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,THIRD:PLAINTEXT",
                                 "max.connections": "1"})  # fmt: skip
    try:
        first = _connect(broker.ports[1])
        assert _api_versions(first)
        late = _connect(broker.ports[2])
        assert not _api_versions(late, timeout=1.0)
        first.close()
        late.settimeout(5)
        assert len(late.recv(4)) == 4  # a slot is free: its request is answered now
        late.close()
    finally:
        broker.kill()


def _raise_limit_dynamically(sock: socket.socket, limit: int) -> int:
    """IncrementalAlterConfigs v1 on node 1: ``max.connections`` SET to ``limit``; the resource's error code."""
    Res = sub(44, "AlterConfigsResource")
    body = req(44, resources=[Res(resource_type=4, resource_name="1", configs=[
        Res.AlterableConfig(name="max.connections", config_operation=0, value=str(limit))])])  # fmt: skip
    return raw_call(sock, 44, 1, body).responses[0].error_code


def test_a_limit_raised_dynamically_lets_the_waiting_client_in(tmp_path):
    broker = _start(tmp_path, **{"max.connections": "1"})
    try:
        first = _connect(broker.port)
        assert _api_versions(first)
        waiting = _connect(broker.port)
        assert not _api_versions(waiting, timeout=1.0)
        assert _raise_limit_dynamically(first, 2) == 0
        waiting.settimeout(5)
        assert len(waiting.recv(4)) == 4  # accepted at once, without any connection closing
        for sock in (first, waiting):
            sock.close()
    finally:
        broker.kill()


def _ip_quota(sock: socket.socket, rate: int) -> int:
    """AlterClientQuotas v1: ``connection_creation_rate`` of ip 127.0.0.1; the entry's error code."""
    Entry = sub(49, "EntryData")
    body = req(49, entries=[Entry(entity=[Entry.EntityData(entity_type="ip", entity_name="127.0.0.1")],
                                  ops=[Entry.OpData(key="connection_creation_rate", value=rate, remove=False)])])
    return raw_call(sock, 49, 1, body).entries[0].error_code


def test_connection_creation_rates_make_the_acceptor_wait_and_close_an_address_past_its_quota(tmp_path):
    broker = _start(tmp_path, **{"max.connection.creation.rate": "4", "quota.window.num": "2"})  # a 1 s window
    try:
        started = time.monotonic()
        first = [_connect(broker.port) for _ in range(6)]
        assert all(_api_versions(s) for s in first)  # the fifth and sixth waited to be accepted
        assert time.monotonic() - started >= 0.2
        assert _ip_quota(first[0], 1) == 0
        time.sleep(1.1)  # a fresh window
        kept, refused = _connect(broker.port), _connect(broker.port)
        assert _api_versions(kept)
        assert not _api_versions(refused, timeout=3.0)  # closed after its wait, never served
        samples = broker.scrape()
        for name in ("connection_accept_throttle_time", "ip_connection_accept_throttle_time"):
            assert samples[(f"kafka_server_socket_server_metrics_{name}", (("listener", "PLAINTEXT"),))] > 0
        for sock in (*first, kept, refused):
            sock.close()
    finally:
        broker.kill()


def test_idle_connections_are_closed_but_a_long_poll_is_not_idle(tmp_path):
    broker = _start(tmp_path, **{"connections.max.idle.ms": "700"})
    try:
        idle = _connect(broker.port)
        assert _api_versions(idle)
        started = time.monotonic()
        assert _closed(idle, 10) and 0.6 < time.monotonic() - started < 5
        idle.close()
        polling = _connect(broker.port)
        part = sub(1, "FetchTopic", "FetchPartition")(partition=0, fetch_offset=0, partition_max_bytes=1024)
        fetch = req(1, replica_id=-1, max_wait_ms=1500, min_bytes=1, max_bytes=1024,
                    topics=[sub(1, "FetchTopic")(topic="absent", partitions=[part])])  # fmt: skip
        polling.sendall(encode_request(RequestHeader(1, 4, 2, "limits"), fetch))
        polling.settimeout(5)
        assert len(polling.recv(4)) == 4  # answered after the long poll, not closed at 0.7 s
        polling.close()
    finally:
        broker.kill()


@pytest.mark.parametrize(("override", "named"), [
    ("max.connections.per.ip=0", "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides"),
    ("max.connections.per.ip.overrides=localhost", "max.connections.per.ip.overrides: 'localhost' is not host:count"),
    ("max.connections.per.ip.overrides=no-such-host.invalid:3", "max.connections.per.ip.overrides: cannot resolve"),
    ("listener.name.plaintext.max.connections=many",
     "Invalid value many for configuration listener.name.plaintext.max.connections: Not a number of type INT"),
    ("connections.max.idle.ms=0", "connections.max.idle.ms"),
])  # fmt: skip
def test_bad_limits_stop_the_start_naming_the_key(tmp_path, override, named):
    result = subprocess.run([sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
                             "--override", f"log.dirs={tmp_path}", "--override", override, "--override",
                             "prometheus.port=0"], cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1 and named in result.stderr, result.stderr
