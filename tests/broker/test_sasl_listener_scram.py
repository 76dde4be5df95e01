"""A SASL listener with SCRAM: its mechanisms as the config sets them, and a connection's limits.

The mechanisms come from Kafka's keys (each SCRAM mechanism needs a JAAS
entry, as in Kafka, and one given must name the ScramLoginModule). On a real connection, a frame
larger than ``sasl.server.max.receive.size`` in the middle of a SCRAM
exchange closes it, and a failed login (bad credentials, an unexpected
request) is answered where Kafka answers it, counted, then closed after
``connection.failed.authentication.delay.ms``. The exchange itself is in
``test_sasl_scram.py``.
"""

from __future__ import annotations

import struct

import pytest
import trio

from broker.config import BrokerConfig, ConfigError
from broker.connection import Connection
from broker.listeners import served_listeners
from broker.sasl_config import SaslSettings, new_authenticator
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request

from ._admin_client import broker, req  # noqa: F401  (broker is a fixture)
from .test_sasl_scram import GENERIC, RFC_CLIENT_NONCE, RFC_FINAL, RFC_FIRST, RFC_SALT, client_final, rfc_store

# -- a listener's mechanisms --------------------------------------------------------------------------------------

SASL = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def _served(tmp_path, **props):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path), **SASL, **props})
    return served_listeners(config)[1].sasl


def test_each_scram_mechanism_needs_a_jaas_entry_as_in_kafka(tmp_path):
    entries = {f"listener.name.sasl_plaintext.scram-sha-{n}.sasl.jaas.config": SCRAM_JAAS for n in (256, 512)}
    sasl = _served(tmp_path, **{"sasl.enabled.mechanisms": "SCRAM-SHA-512,scram-sha-256", **entries})
    assert (sasl.mechanisms, sasl.plain_users) == (("SCRAM-SHA-512", "SCRAM-SHA-256"), {})
    del entries["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"]
    with pytest.raises(ConfigError, match="^Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in "
                                          "the JAAS configuration. System property 'java.security.auth.login.config' "
                                          "is not set$"):  # fmt: skip
        _served(tmp_path, **{"sasl.enabled.mechanisms": "SCRAM-SHA-512,scram-sha-256", **entries})


def test_per_listener_mechanisms_with_plain_and_scram_jaas_entries(tmp_path):
    sasl = _served(tmp_path, **{
        "sasl.enabled.mechanisms": "GSSAPI",  # overridden for the listener
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS[:-1] + ' username="a" password="b";',
    })  # fmt: skip
    assert sasl.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert sasl.plain_users == {"admin": "admin-secret"}


def test_a_scram_jaas_entry_must_name_the_scram_login_module(tmp_path):
    key = "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"
    with pytest.raises(ConfigError, match=f"^{key}: expected 'org.apache.kafka.common.security.scram.ScramLoginModule"):
        _served(tmp_path, **{"sasl.enabled.mechanisms": "SCRAM-SHA-256", key: PLAIN_JAAS})
    with pytest.raises(ConfigError, match="^listener.name.sasl_plaintext.scram-sha-384.sasl.jaas.config: unknown"):
        _served(tmp_path, **{"sasl.enabled.mechanisms": "SCRAM-SHA-256",
                             "listener.name.sasl_plaintext.scram-sha-384.sasl.jaas.config": SCRAM_JAAS})  # fmt: skip
    with pytest.raises(ConfigError, match="^sasl.enabled.mechanisms: SCRAM-SHA-1 is not supported"):
        _served(tmp_path, **{"sasl.enabled.mechanisms": "SCRAM-SHA-1"})


# -- on a connection ----------------------------------------------------------------------------------------------


async def _serve_pair(broker, nursery, store):  # noqa: F811
    """A SASL connection served in ``nursery`` over a socket pair; returns the client's end."""
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, trio.SocketStream(ours), "peer", "SASL_PLAINTEXT")
    connection.auth = new_authenticator(SaslSettings(("SCRAM-SHA-256",)), store)
    nursery.start_soon(connection.serve)
    return trio.SocketStream(theirs)


async def _exchange(stream, key: int, version: int, **fields):
    await stream.send_all(encode_request(RequestHeader(key, version, 9, "t"), req(key, **fields)))
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        data += await stream.receive_some(65536)
    return decode_response(data[4:], API_BY_KEY[key], version)[1]


async def _closed(stream) -> bool:
    return await stream.receive_some(10) == b""


async def test_frames_during_a_scram_exchange_are_bounded_by_sasl_server_max_receive_size(broker):  # noqa: F811
    broker.scram.credentials.update(rfc_store().credentials)
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve_pair(broker, nursery, broker.scram) as stream:
                assert (await _exchange(stream, 17, 1, mechanism="SCRAM-SHA-256")).error_code == 0
                assert (await _exchange(stream, 36, 2, auth_bytes=RFC_FIRST)).error_code == 0
                await stream.send_all(struct.pack(">i", broker.config.sasl_server_max_receive_size + 1))
                assert await _closed(stream)


async def test_a_failed_scram_login_is_closed_after_the_failure_delay(broker):  # noqa: F811
    broker.scram.credentials.update(rfc_store().credentials)
    broker.config.connection_failed_authentication_delay_ms = 300
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve_pair(broker, nursery, broker.scram) as stream:
                await _exchange(stream, 17, 1, mechanism="SCRAM-SHA-256")
                await _exchange(stream, 36, 2, auth_bytes=RFC_FIRST)
                answer = await _exchange(stream, 36, 2, auth_bytes=RFC_FINAL.replace(b"p=d", b"p=e"))
                answered = trio.current_time()
                assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                                     GENERIC.format("SCRAM-SHA-256"))  # fmt: skip
                assert await _closed(stream)
                assert trio.current_time() - answered >= 0.29


def _logins(broker) -> tuple[float, float]:  # noqa: F811
    """(successful, failed) logins counted on the SASL_PLAINTEXT listener."""
    counters = broker.metrics.authentications
    return tuple(counters[o].labels("SASL_PLAINTEXT")._value.get() for o in ("successful", "failed"))


async def test_logins_are_counted_per_listener(broker):  # noqa: F811
    broker.scram.credentials.update(rfc_store().credentials)
    broker.config.connection_failed_authentication_delay_ms = 0
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve_pair(broker, nursery, broker.scram) as stream:  # v1 handshake, a good login
                await _exchange(stream, 17, 1, mechanism="SCRAM-SHA-256")
                server_first = (await _exchange(stream, 36, 2, auth_bytes=RFC_FIRST)).auth_bytes.decode()
                nonce = server_first.split(",")[0][2:]
                final, _ = client_final("sha256", "pencil", f"n=user,r={RFC_CLIENT_NONCE}", server_first, RFC_SALT,
                                        4096, nonce)  # fmt: skip
                assert (await _exchange(stream, 36, 2, auth_bytes=final)).error_code == ErrorCode.NONE
            assert _logins(broker) == (1, 0)
            async with await _serve_pair(broker, nursery, broker.scram) as stream:  # a mechanism not enabled
                assert (await _exchange(stream, 17, 1, mechanism="PLAIN")).error_code != ErrorCode.NONE
                assert await _closed(stream)
            assert _logins(broker) == (1, 1)
            async with await _serve_pair(broker, nursery, broker.scram) as stream:  # v0: a bare token refused
                await _exchange(stream, 17, 0, mechanism="SCRAM-SHA-256")
                await stream.send_all(struct.pack(">i", 5) + b"bogus")
                assert await _closed(stream)
            assert _logins(broker) == (1, 1)  # SCRAM's SaslException: an I/O error to Kafka, not counted
            async with await _serve_pair(broker, nursery, broker.scram) as stream:  # a request before the handshake
                await stream.send_all(encode_request(RequestHeader(3, 12, 9, "t"), req(3, topics=[])))
                assert await _closed(stream)
            assert _logins(broker) == (1, 2)


@pytest.mark.parametrize("handshake", [False, True])
async def test_an_unexpected_request_is_a_failed_login_closed_after_the_delay(broker, handshake):  # noqa: F811
    """Kafka: before the handshake unanswered; after it answered ILLEGAL_SASL_STATE; either way counted and
    closed after connection.failed.authentication.delay.ms (KafkaChannel.delayCloseOnAuthenticationFailure)."""
    broker.config.connection_failed_authentication_delay_ms = 300
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            async with await _serve_pair(broker, nursery, broker.scram) as stream:
                if handshake:
                    await _exchange(stream, 17, 1, mechanism="SCRAM-SHA-256")
                    answer = await _exchange(stream, 18, 3, client_software_name="t", client_software_version="1")
                    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
                else:
                    await stream.send_all(encode_request(RequestHeader(3, 12, 9, "t"), req(3, topics=[])))
                sent = trio.current_time()
                assert await _closed(stream)
                assert trio.current_time() - sent >= 0.29
    assert _logins(broker) == (0, 1)
