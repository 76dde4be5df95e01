"""The frames a SASL connection takes before its handshake, state by state, as Kafka's SaslServerAuthenticator.

Kafka's states up to the handshake: INITIAL_REQUEST (the first frame),
HANDSHAKE_OR_VERSIONS_REQUEST (once a frame had a Kafka header) and
HANDSHAKE_REQUEST (once ApiVersions was answered without error). A second
ApiVersions after a good one is an IllegalStateException to Kafka: the
connection closes at once, unanswered and not counted as a failed login,
while an ApiVersions answered UNSUPPORTED_VERSION or INVALID_REQUEST may be
sent again. A frame without a readable Kafka header fails the login when it
is the first (Kafka would take it for a GSSAPI token, and GSSAPI is not
enabled) and closes the connection at once after that. Any other API before
the handshake fails the login, unanswered.
"""

from __future__ import annotations

import struct

import pytest
import trio

from broker.connection import Connection
from broker.sasl_auth import UnexpectedRequest
from broker.sasl_config import SaslSettings, new_authenticator
from broker.scram_store import ScramStore
from protocol import ErrorCode, InvalidRequestError, RequestHeader, UnsupportedVersionError, encode_request

from ._admin_client import broker, req  # noqa: F401  (broker is a fixture)
from .test_sasl_listener_scram import _closed, _exchange

SETTINGS = SaslSettings(("PLAIN",), {"alice": "alice-secret"})
VERSIONS = {"client_software_name": "t", "client_software_version": "1"}
UNKNOWN_KEY = struct.pack(">hhih", 99, 0, 7, 1) + b"t"


def _frame(key: int, version: int, **fields) -> bytearray:
    return bytearray(encode_request(RequestHeader(key, version, 5, "t"), req(key, **fields))[4:])


def _versions_answer(error: ErrorCode) -> list:
    return [struct.pack(">iih", 6, 5, error)]  # size, correlation id, error code: what the state reads


def test_only_the_handshake_may_follow_a_good_api_versions():
    auth = new_authenticator(SETTINGS, ScramStore(None))
    assert auth.handle(_frame(18, 3, **VERSIONS)).chunks is None  # answered by dispatch
    auth.versions_answered(_versions_answer(ErrorCode.NONE))
    with pytest.raises(UnexpectedRequest):
        auth.handle(_frame(18, 3, **VERSIONS))


@pytest.mark.parametrize("error", [ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REQUEST])
def test_api_versions_answered_with_an_error_may_be_sent_again(error):
    auth = new_authenticator(SETTINGS, ScramStore(None))
    auth.handle(_frame(18, 3, client_software_name="-bad", client_software_version="1"))
    auth.versions_answered(_versions_answer(error))
    assert auth.handle(_frame(18, 3, **VERSIONS)).chunks is None


@pytest.mark.parametrize("frame", [UNKNOWN_KEY, b"\x00\x03\x00"])  # an unknown api key; no whole header
def test_a_frame_without_a_kafka_header_fails_the_login_only_when_it_is_the_first(frame):
    first = new_authenticator(SETTINGS, ScramStore(None)).handle(bytearray(frame))
    assert first.chunks == [] and first.close_after
    later = new_authenticator(SETTINGS, ScramStore(None))
    later.handle(_frame(18, 3, **VERSIONS))
    later.versions_answered(_versions_answer(ErrorCode.UNSUPPORTED_VERSION))
    with pytest.raises(InvalidRequestError):  # closed at once (connection.py)
        later.handle(bytearray(frame))


def test_a_sasl_request_at_a_version_not_served_closes_the_connection_at_once():
    """Kafka cannot parse it (an InvalidRequestException): no answer, no failed login counted."""
    auth = new_authenticator(SETTINGS, ScramStore(None))
    with pytest.raises(UnsupportedVersionError):
        auth.handle(bytearray(struct.pack(">hhih", 17, 7, 1, 1) + b"t\x00"))
    auth.handle(_frame(17, 1, mechanism="PLAIN"))
    with pytest.raises(UnsupportedVersionError):
        auth.handle(bytearray(struct.pack(">hhih", 36, 7, 1, 1) + b"t\x00"))


# -- on a connection ----------------------------------------------------------------------------------------------


async def _serve_pair(broker, nursery):  # noqa: F811
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, trio.SocketStream(ours), "peer", "SASL_PLAINTEXT")
    connection.auth = new_authenticator(SETTINGS, broker.scram)
    nursery.start_soon(connection.serve)
    return trio.SocketStream(theirs)


async def _receive_frame(stream) -> bytes:
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        more = await stream.receive_some(100)
        assert more, "closed before a whole answer"
        data += more
    return data


def _logins(broker) -> tuple[float, float]:  # noqa: F811
    counters = broker.metrics.authentications
    return tuple(counters[o].labels("SASL_PLAINTEXT")._value.get() for o in ("successful", "failed"))


async def test_a_second_api_versions_closes_the_connection_at_once_uncounted(broker):  # noqa: F811
    broker.config.connection_failed_authentication_delay_ms = 5000  # a failed login would be held this long
    async with trio.open_nursery() as nursery:
        with trio.fail_after(3):
            async with await _serve_pair(broker, nursery) as stream:
                assert (await _exchange(stream, 18, 3, **VERSIONS)).error_code == ErrorCode.NONE
                await stream.send_all(encode_request(RequestHeader(18, 3, 9, "t"), req(18, **VERSIONS)))
                assert await _closed(stream)
    assert _logins(broker) == (0, 0)


async def test_api_versions_may_be_retried_lower_then_the_login_goes_on(broker):  # noqa: F811
    async with trio.open_nursery() as nursery:
        with trio.fail_after(5):
            async with await _serve_pair(broker, nursery) as stream:
                too_new = struct.pack(">hhih", 18, 99, 9, 1) + b"t\x00"  # a flexible header: no tagged fields
                await stream.send_all(struct.pack(">i", len(too_new)) + too_new)
                assert struct.unpack_from(">h", await _receive_frame(stream), 8)[0] == ErrorCode.UNSUPPORTED_VERSION
                assert (await _exchange(stream, 18, 3, **VERSIONS)).error_code == ErrorCode.NONE
                assert (await _exchange(stream, 17, 1, mechanism="PLAIN")).error_code == ErrorCode.NONE
                answer = await _exchange(stream, 36, 2, auth_bytes=b"\x00alice\x00alice-secret")
                assert answer.error_code == ErrorCode.NONE
                assert (await _exchange(stream, 3, 12, topics=[])).brokers  # logged in
    assert _logins(broker) == (1, 0)


@pytest.mark.parametrize("first", [True, False])
async def test_an_unknown_api_key_is_a_failed_login_only_as_the_first_frame(broker, first):  # noqa: F811
    broker.config.connection_failed_authentication_delay_ms = 0
    async with trio.open_nursery() as nursery:
        with trio.fail_after(3):
            async with await _serve_pair(broker, nursery) as stream:
                if not first:
                    assert (await _exchange(stream, 18, 3, **VERSIONS)).error_code == ErrorCode.NONE
                await stream.send_all(struct.pack(">i", len(UNKNOWN_KEY)) + UNKNOWN_KEY)
                assert await _closed(stream)
    assert _logins(broker) == (0, 1 if first else 0)
