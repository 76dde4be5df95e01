"""The ApiVersions a SASL listener answers before the login is outside the request metrics and quotas.

Kafka's ``SaslServerAuthenticator`` answers it itself (``handleApiVersionsRequest``,
with ``throttleTimeMs = 0`` from the supplier ``SocketServer`` gives it) and
writes the answer past ``KafkaApis``, the ``RequestChannel`` and the
selector's byte count: ``RequestsPerSec``, ``ErrorsPerSec``, the request
time histograms, the ``request_percentage`` measure and ``outgoing-byte`` see
none of it, nor of the handshake and login answers. The same ApiVersions
once logged in goes through all of them. Over a socket pair, on a broker with
a tiny ``request_percentage`` quota on the client id.
"""

from __future__ import annotations

import struct

import trio
import trio.testing

from protocol import ErrorCode

from ._admin_client import broker  # noqa: F401  (broker is a fixture)
from .test_client_quotas import alter
from .test_sasl_listener_scram import _exchange
from .test_sasl_states import VERSIONS, _receive_frame, _serve_pair

PLAIN = b"\x00alice\x00alice-secret"
REQUEST_TIME = ("request_percentage", "", "t")  # the measure of the quota on client id "t" (what _exchange sends)


def _seen(broker) -> dict:  # noqa: F811
    """What the request metrics, the request quota and the byte count have of ApiVersions."""
    value = broker.metrics.registry.get_sample_value
    return {
        "requests": [value("kafka_network_requestmetrics_requests_total", {"request": "ApiVersions", "version": v})
                     for v in ("3", "99")],
        "errors": value("kafka_network_requestmetrics_errors_total", {"request": "ApiVersions", "error": "NONE"}),
        "times": value("kafka_network_requestmetrics_totaltimems_count", {"request": "ApiVersions"}),
        "request_time": REQUEST_TIME in broker.quotas.measures,
        "bytes_out": value("kafka_server_socket_server_metrics_outgoing_byte_total"),
    }  # fmt: skip


async def test_api_versions_before_the_login_is_answered_unmetered(broker):  # noqa: F811
    assert await alter(broker, [([("client-id", "t")], {"request_percentage": 0.0001})]) == [(ErrorCode.NONE, None)]
    unseen = {"requests": [None, None], "errors": None, "times": None, "request_time": False, "bytes_out": 0.0}
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve_pair(broker, nursery) as stream:
                too_new = struct.pack(">hhih", 18, 99, 9, 1) + b"t\x00"  # answered UNSUPPORTED_VERSION, in v0
                await stream.send_all(struct.pack(">i", len(too_new)) + too_new)
                assert struct.unpack_from(">h", await _receive_frame(stream), 8)[0] == ErrorCode.UNSUPPORTED_VERSION
                versions = await _exchange(stream, 18, 3, **VERSIONS)
                assert (versions.error_code, versions.throttle_time_ms) == (ErrorCode.NONE, 0)  # never throttled
                assert {k.api_key for k in versions.api_keys} >= {0, 1, 17, 18, 36}
                assert (await _exchange(stream, 17, 1, mechanism="PLAIN")).error_code == ErrorCode.NONE
                assert (await _exchange(stream, 36, 2, auth_bytes=PLAIN)).error_code == ErrorCode.NONE
                assert _seen(broker) == unseen
                after = await _exchange(stream, 18, 3, **VERSIONS)  # logged in: a request like any other
                assert after.api_keys == versions.api_keys and after.throttle_time_ms > 0  # over the tiny quota
                await trio.testing.wait_all_tasks_blocked()  # its times are recorded once it is sent
                seen = _seen(broker)
    assert seen["requests"] == [1.0, None] and seen["errors"] == 1.0 and seen["times"] == 1.0
    assert seen["request_time"] and seen["bytes_out"] > 0
