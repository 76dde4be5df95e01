"""Kafka's login metrics of socket-server-metrics, read from the metrics endpoint's text.

Real connections over socket pairs, the broker's clock (and the
authenticator's nanosecond clock) faked: the ``-rate`` gauges are Kafka's
Rate over two 30 s windows, ``successful-authentication-no-reauth-total``
counts first logins without SaslAuthenticate v1+ (handshake v0, SaslAuthenticate
v0), and ``reauthentication-latency-max``/``-avg`` are NaN until a
re-authentication is recorded. Real clients are in ``tests/e2e``.
"""

from __future__ import annotations

import math
import struct

import trio
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from broker.connection import Connection
from broker.sasl_config import SaslSettings, new_authenticator
from protocol import ErrorCode

from ._admin_client import broker, req  # noqa: F401  (broker is a fixture)
from .test_sasl_listener_scram import _closed, _exchange
from .test_sasl_reauth import NOW_MS, token

SETTINGS = SaslSettings(("PLAIN", "OAUTHBEARER"), {"alice": "alice-secret"})
PLAIN = b"\x00alice\x00alice-secret"
SSM = "kafka_server_socket_server_metrics_"


def _scrape(broker) -> dict:  # noqa: F811
    """What the endpoint shows for the SASL_PLAINTEXT listener: ``{name: value}``."""
    text = generate_latest(broker.metrics.registry).decode()
    return {s.name[len(SSM):]: s.value for family in text_string_to_metric_families(text) for s in family.samples
            if s.name.startswith(SSM) and s.labels == {"listener": "SASL_PLAINTEXT"}}  # fmt: skip


async def _serve(broker, nursery, nanos=None):  # noqa: F811
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, trio.SocketStream(ours), "peer", "SASL_PLAINTEXT")
    connection.auth = new_authenticator(SETTINGS, broker.scram, lambda: broker.clock())
    if nanos is not None:
        connection.auth.nanos = nanos
    nursery.start_soon(connection.serve)
    return trio.SocketStream(theirs)


async def _login(stream, handshake: int = 1, authenticate: int = 2, mechanism: str = "PLAIN", auth_bytes=PLAIN):
    assert (await _exchange(stream, 17, handshake, mechanism=mechanism)).error_code == ErrorCode.NONE
    if handshake == 0:  # the bare token, answered by a bare (empty) one
        await stream.send_all(struct.pack(">i", len(auth_bytes)) + auth_bytes)
        assert await stream.receive_some(4) == b"\x00\x00\x00\x00"
        return
    answer = await _exchange(stream, 36, authenticate, auth_bytes=auth_bytes)
    assert answer.error_code == ErrorCode.NONE, answer.error_message


async def test_first_logins_of_clients_that_cannot_reauthenticate_are_counted_apart(broker):  # noqa: F811
    broker.clock = lambda: NOW_MS
    broker.config.connection_failed_authentication_delay_ms = 0
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            for handshake, authenticate in ((1, 2), (1, 1), (1, 0), (0, None)):
                async with await _serve(broker, nursery) as stream:
                    await _login(stream, handshake, authenticate)
            async with await _serve(broker, nursery) as stream:
                await _exchange(stream, 17, 1, mechanism="SCRAM-SHA-256")  # not enabled: a failed login
                assert await _closed(stream)
    seen = _scrape(broker)
    assert (seen["successful_authentication_total"], seen["successful_authentication_no_reauth_total"]) == (4, 2)
    assert seen["failed_authentication_total"] == 1
    assert seen["successful_authentication_rate"] == 4 / 30  # all in one instant: Kafka's Rate spans >= 30 s
    assert (seen["failed_authentication_rate"], seen["successful_reauthentication_rate"]) == (1 / 30, 0)
    assert math.isnan(seen["reauthentication_latency_max"]) and math.isnan(seen["reauthentication_latency_avg"])


async def test_reauthentication_latency_and_rates(broker):  # noqa: F811
    now = [NOW_MS]
    broker.clock = lambda: now[0]
    ticks = iter([0, 10_000_000, 12_400_000, 20_000_000, 20_200_000])  # login end; two re-logins' begin, end
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve(broker, nursery, nanos=lambda: next(ticks)) as stream:
                await _login(stream, mechanism="OAUTHBEARER", auth_bytes=token(lifetime_s=60))
                for step_ms in (2000, 3000):
                    now[0] += step_ms
                    await _login(stream, mechanism="OAUTHBEARER", auth_bytes=token(lifetime_s=60))
    seen = _scrape(broker)
    assert (seen["successful_authentication_total"], seen["successful_reauthentication_total"]) == (1, 2)
    assert seen["successful_authentication_no_reauth_total"] == 0  # SaslAuthenticate v2
    assert (seen["reauthentication_latency_max"], seen["reauthentication_latency_avg"]) == (2.0, 1.5)  # 2.4, 0.2 ms
    assert seen["successful_reauthentication_rate"] == 2 / 33  # its first sample began 3 s ago: 3 s + 30 s
    now[0] += 60_001  # both 30 s windows have passed: nothing left to measure
    seen = _scrape(broker)
    assert seen["successful_reauthentication_rate"] == 0 and math.isnan(seen["reauthentication_latency_max"])
