"""KIP-368: a SASL session ends with its credential or ``connections.max.reauth.ms``, and may re-authenticate.

The authenticator works out the lifetime as Kafka's
``calcCompletionTimesAndReturnSessionLifetimeMs`` does and sends it in
SaslAuthenticate v1+; on a real connection (a fake broker clock, no sleeping)
a request after the end closes it unless it is a SaslHandshake, which starts
re-authentication for the same mechanism and principal.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
import trio

from broker.config import BrokerConfig, ConfigError
from broker.connection import Connection
from broker.listeners import served_listeners
from broker.sasl_config import SaslSettings, new_authenticator
from broker.scram_store import ScramStore
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request

from ._admin_client import broker, req  # noqa: F401  (broker is a fixture)
from .test_sasl_listener_scram import _exchange
from .test_sasl_oauthbearer import jwt, message

NOW_MS = 1_750_000_000_000
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SETTINGS = SaslSettings(("OAUTHBEARER", "PLAIN"), USERS)


def token(sub: str = "alice", lifetime_s: int = 60) -> bytes:
    return message(jwt({"sub": sub, "iat": NOW_MS // 1000, "exp": NOW_MS // 1000 + lifetime_s}))


def _frame(key: int, version: int, **fields) -> bytearray:
    return bytearray(encode_request(RequestHeader(key, version, 5, "t"), req(key, **fields))[4:])


def _answer(step, key: int, version: int):
    return decode_response(b"".join(step.chunks)[4:], API_BY_KEY[key], version)[1]


def _login(auth, mechanism: str, auth_bytes: bytes, version: int = 2):
    assert _answer(auth.handle(_frame(17, 1, mechanism=mechanism)), 17, 1).error_code == ErrorCode.NONE
    step = auth.handle(_frame(36, version, auth_bytes=auth_bytes))
    return step, _answer(step, 36, version)


@pytest.mark.parametrize(("mechanism", "auth_bytes", "max_reauth", "lifetime"), [
    ("OAUTHBEARER", token(lifetime_s=60), 0, 60_000),  # the token's exp, with connections.max.reauth.ms unset
    ("OAUTHBEARER", token(lifetime_s=60), 10_000, 10_000),  # the smaller of the two
    ("OAUTHBEARER", token(lifetime_s=60), 90_000, 60_000),
    ("PLAIN", b"\x00alice\x00alice-secret", 0, 0),  # no credential lifetime, no limit: no session end
    ("PLAIN", b"\x00alice\x00alice-secret", 5_000, 5_000),  # connections.max.reauth.ms for every mechanism
])  # fmt: skip
def test_the_session_lifetime_is_kafkas(mechanism, auth_bytes, max_reauth, lifetime):
    settings = SaslSettings(SETTINGS.mechanisms, USERS, max_reauth_ms={mechanism: max_reauth})
    auth = new_authenticator(settings, ScramStore(None), clock=lambda: NOW_MS)
    step, answer = _login(auth, mechanism, auth_bytes)
    assert (answer.error_code, answer.session_lifetime_ms, auth.complete) == (ErrorCode.NONE, lifetime, True)
    assert auth.expires_at_ms == (NOW_MS + lifetime if lifetime else None)
    assert not auth.expired(NOW_MS + lifetime) and auth.expired(NOW_MS + lifetime + 1) == bool(lifetime)


def test_reauthentication_needs_a_session_end_and_waits_a_second_between_starts():
    now = [NOW_MS]
    plain = new_authenticator(SETTINGS, ScramStore(None), clock=lambda: now[0])
    _login(plain, "PLAIN", b"\x00alice\x00alice-secret")
    assert not plain.begin_reauthentication(now[0])  # no lifetime: Kafka answers the handshake ILLEGAL_SASL_STATE
    auth = new_authenticator(SETTINGS, ScramStore(None), clock=lambda: now[0])
    _login(auth, "OAUTHBEARER", token())
    assert auth.begin_reauthentication(now[0]) and not auth.complete
    _, answer = _login(auth, "OAUTHBEARER", token(lifetime_s=120))
    assert (answer.error_code, answer.session_lifetime_ms, auth.principal) == (ErrorCode.NONE, 120_000, "alice")
    assert not auth.begin_reauthentication(now[0] + 999)
    assert auth.begin_reauthentication(now[0] + 1000)


def test_a_reauthentication_must_keep_the_principal_and_the_mechanism():
    auth = new_authenticator(SETTINGS, ScramStore(None), clock=lambda: NOW_MS)
    _login(auth, "OAUTHBEARER", token())
    auth.begin_reauthentication(NOW_MS)
    step, answer = _login(auth, "OAUTHBEARER", token(sub="bob"))
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication from User.alice: User.bob")
    assert step.close_after and auth.reauthenticating
    other = new_authenticator(SETTINGS, ScramStore(None), clock=lambda: NOW_MS)
    _login(other, "OAUTHBEARER", token())
    other.begin_reauthentication(NOW_MS)
    assert _answer(other.handle(_frame(17, 1, mechanism="PLAIN")), 17, 1).error_code == ErrorCode.NONE
    step = other.handle(_frame(36, 2, auth_bytes=b"\x00alice\x00alice-secret"))  # a failed login, unanswered
    assert (step.chunks, step.close_after) == ([], "SASL mechanism 'PLAIN' requested by client is not supported "
                                                   "for re-authentication of mechanism 'OAUTHBEARER'")  # fmt: skip


def test_connections_max_reauth_ms_per_listener_and_mechanism(tmp_path):
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
             "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER", "connections.max.reauth.ms": "1000",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";',
             "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                 "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}  # fmt: skip
    config = BrokerConfig.load(None, {**props, "log.dirs": str(tmp_path)})
    assert served_listeners(config)[1].sasl.max_reauth_ms == {"PLAIN": 1000, "OAUTHBEARER": 1000}
    props["listener.name.sasl_plaintext.connections.max.reauth.ms"] = "2000"
    props["listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms"] = "3000"
    config = BrokerConfig.load(None, {**props, "log.dirs": str(tmp_path)})
    assert served_listeners(config)[1].sasl.max_reauth_ms == {"PLAIN": 2000, "OAUTHBEARER": 3000}
    with pytest.raises(ConfigError, match="^Invalid value x for configuration listener.name.sasl_plaintext.connections.max.reauth.ms: Not a number "
                                              "of type LONG$"):
        BrokerConfig.load(None, {**props, "listener.name.sasl_plaintext.connections.max.reauth.ms": "x",
                                 "log.dirs": str(tmp_path)})  # fmt: skip


# -- on a connection, with the broker's clock faked ---------------------------------------------------------------


@asynccontextmanager
async def _connection(broker):  # noqa: F811
    """A SASL connection served over a socket pair, the broker's clock faked: (client end, the clock's ms)."""
    now = [NOW_MS]
    broker.clock = lambda: now[0]
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, trio.SocketStream(ours), "peer", "SASL_PLAINTEXT")
    connection.auth = new_authenticator(SETTINGS, broker.scram, broker.clock)
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            nursery.start_soon(connection.serve)
            async with trio.SocketStream(theirs) as stream:
                yield stream, now


async def _login_on(stream, auth_bytes: bytes) -> int:
    assert (await _exchange(stream, 17, 1, mechanism="OAUTHBEARER")).error_code == ErrorCode.NONE
    answer = await _exchange(stream, 36, 2, auth_bytes=auth_bytes)
    assert answer.error_code == ErrorCode.NONE, answer.error_message
    return answer.session_lifetime_ms


def _count(counter, listener: str = "SASL_PLAINTEXT") -> float:
    return counter.labels(listener)._value.get()


async def test_an_expired_session_is_closed_on_its_next_request(broker):  # noqa: F811
    async with _connection(broker) as (stream, now):
        assert await _login_on(stream, token(lifetime_s=3)) == 3000
        assert (await _exchange(stream, 3, 12, topics=[])).brokers  # in its lifetime: served
        now[0] += 3001
        await stream.send_all(encode_request(RequestHeader(3, 12, 10, "t"), req(3, topics=[])))
        assert await stream.receive_some(10) == b""
    assert _count(broker.metrics.expired_connections_killed) == 1


async def test_a_session_reauthenticates_on_the_same_connection_and_goes_on(broker):  # noqa: F811
    async with _connection(broker) as (stream, now):
        await _login_on(stream, token(lifetime_s=3))
        now[0] += 5000  # expired: a SaslHandshake still starts re-authentication
        assert await _login_on(stream, token(lifetime_s=60)) == 55_000
        assert (await _exchange(stream, 3, 12, topics=[])).brokers
        now[0] += 2000
        assert (await _exchange(stream, 17, 1, mechanism="OAUTHBEARER")).error_code == ErrorCode.NONE
        answer = await _exchange(stream, 36, 2, auth_bytes=token(sub="bob"))
        assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Cannot change principals during re-authentication from User.alice: User.bob")  # fmt: skip
        assert await stream.receive_some(10) == b""
    counts = broker.metrics.reauthentications, broker.metrics.authentications
    assert [_count(c[o]) for c in counts for o in ("successful", "failed")] == [1, 1, 1, 0]


async def test_a_handshake_after_a_login_without_lifetime_is_still_illegal(broker):  # noqa: F811
    async with _connection(broker) as (stream, _):
        await _exchange(stream, 17, 1, mechanism="PLAIN")
        answer = await _exchange(stream, 36, 2, auth_bytes=b"\x00alice\x00alice-secret")
        assert (answer.error_code, answer.session_lifetime_ms) == (ErrorCode.NONE, 0)
        again = await _exchange(stream, 17, 1, mechanism="PLAIN")
        assert (again.error_code, again.mechanisms) == (ErrorCode.ILLEGAL_SASL_STATE, [])
