"""SASL/PLAIN on SASL_PLAINTEXT listeners: configuration and the per-connection handshake, as Kafka's.

The authenticator takes frames until the client has logged in: ApiVersions
and SaslHandshake first, then SaslAuthenticate (v1 handshake) or the bare
token (v0); anything else, a bad mechanism or bad credentials ends the
connection, the last two after Kafka's answer. Real clients are in
``tests/e2e/test_sasl_plain.py``.
"""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.listeners import served_listeners
from broker.sasl_auth import AuthenticationFailed, UnexpectedRequest
from broker.sasl_config import SaslSettings, new_authenticator
from broker.sasl_plain import check_plain_token, parse_plain_jaas
from broker.scram_store import ScramStore
from protocol import API_BY_KEY, ErrorCode, InvalidRequestError, RequestHeader, decode_response, encode_request

from ._admin_client import req

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice \\"quoted\\" secret";')  # fmt: skip
USERS = {"admin": "admin-secret", "alice": "alice-secret"}


def plain_authenticator(users):
    """A PLAIN-only listener's authenticator."""
    return new_authenticator(SaslSettings(("PLAIN",), users), ScramStore(None))


def _frame(key: int, version: int, **fields) -> bytearray:
    return bytearray(encode_request(RequestHeader(key, version, 5, "sasl-test"), req(key, **fields))[4:])


def _answer(step, key: int, version: int):
    data = b"".join(step.chunks)
    return decode_response(data[4:], API_BY_KEY[key], version)[1]


def test_jaas_users_come_from_the_user_options():
    assert parse_plain_jaas("k", JAAS) == {"admin": "admin-secret", "alice": 'alice "quoted" secret'}
    module = JAAS.split(" required")[0]
    assert parse_plain_jaas("k", f"{module} required user_a=b;") == {"a": "b"}  # a bare word is a value in Kafka
    for bad, message in (("PlainLoginModule required;", f"expected '{module} required ...;'"),
                         (f'{module} user_a="b";', "Invalid login module control flag 'user_a' in JAAS config"),
                         (f"{module} required user_a=1;", "Value not specified for key 'user_a' in JAAS config"),
                         (f'{module} required user_a="b"', "JAAS config entry not terminated by semi-colon")):
        with pytest.raises(ConfigError, match=f"^k: {message}$"):
            parse_plain_jaas("k", bad)


@pytest.mark.parametrize(("token", "message"), [
    (b"\x00alice\x00alice-secret\x00", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\x00\x00pw", "Authentication failed: username not specified"),
    (b"\x00alice\x00", "Authentication failed: password not specified"),
    (b"\x00alice\x00wrong", "Authentication failed: Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"),
    (b"admin\x00alice\x00alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])  # fmt: skip
def test_plain_tokens_are_checked_as_kafka_does(token, message):
    with pytest.raises(AuthenticationFailed) as failed:
        check_plain_token(token, USERS)
    assert str(failed.value) == message


def test_a_good_token_with_or_without_authorization_id():
    assert check_plain_token(b"\x00alice\x00alice-secret", USERS) == "alice"
    assert check_plain_token(b"alice\x00alice\x00alice-secret", USERS) == "alice"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_handshake_v1_then_authenticate(version):
    auth = plain_authenticator(USERS)
    assert auth.handle(_frame(18, 3, client_software_name="t", client_software_version="1")).chunks is None
    hs = auth.handle(_frame(17, 1, mechanism="PLAIN"))
    assert _answer(hs, 17, 1).error_code == ErrorCode.NONE and _answer(hs, 17, 1).mechanisms == ["PLAIN"]
    step = auth.handle(_frame(36, version, auth_bytes=b"\x00alice\x00alice-secret"))
    answer = _answer(step, 36, version)
    assert (answer.error_code, step.close_after, auth.complete, auth.principal) == (0, None, True, "alice")


def test_failed_authentication_is_answered_then_closed():
    auth = plain_authenticator(USERS)
    auth.handle(_frame(17, 1, mechanism="PLAIN"))
    step = auth.handle(_frame(36, 2, auth_bytes=b"\x00alice\x00wrong"))
    answer = _answer(step, 36, 2)
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password")  # fmt: skip
    assert step.close_after and not auth.complete


def test_handshake_v0_then_the_bare_token():
    auth = plain_authenticator(USERS)
    auth.handle(_frame(17, 0, mechanism="PLAIN"))
    assert b"".join(auth.handle(bytearray(b"\x00admin\x00admin-secret")).chunks) == b"\x00\x00\x00\x00"
    assert auth.complete
    other = plain_authenticator(USERS)
    other.handle(_frame(17, 0, mechanism="PLAIN"))
    refused = other.handle(bytearray(b"\x00admin\x00nope"))  # Kafka's SaslAuthenticationException: a failed
    assert refused.chunks == [] and "Invalid username or password" in refused.close_after  # login, unanswered


def test_another_mechanism_is_refused_with_the_enabled_ones_then_closed():
    step = plain_authenticator(USERS).handle(_frame(17, 1, mechanism="SCRAM-SHA-256"))
    answer = _answer(step, 17, 1)
    assert (answer.error_code, answer.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["PLAIN"])
    assert step.close_after


def test_other_requests_before_the_handshake_fail_the_login_unanswered():
    auth = plain_authenticator(USERS)
    step = auth.handle(_frame(3, 12, topics=None))
    assert (step.chunks, step.close_after) == ([], "Unexpected Kafka request of type Metadata during SASL handshake.")
    step = auth.handle(_frame(36, 2, auth_bytes=b"\x00alice\x00alice-secret"))  # before the handshake
    assert step.chunks == [] and "SaslAuthenticate" in step.close_after


def test_other_requests_after_the_handshake_get_illegal_sasl_state_and_fail_the_login():
    auth = plain_authenticator(USERS)
    auth.handle(_frame(17, 1, mechanism="PLAIN"))
    step = auth.handle(_frame(18, 3, client_software_name="t", client_software_version="1"))
    assert _answer(step, 18, 3).error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert step.close_after == "Unexpected Kafka request of type ApiVersions during SASL authentication."
    again = auth.handle(_frame(17, 1, mechanism="PLAIN"))
    assert (_answer(again, 17, 1).error_code, again.close_after) == (
        ErrorCode.ILLEGAL_SASL_STATE, "Unexpected Kafka request of type SaslHandshake during SASL authentication.")
    metadata = auth.handle(_frame(3, 12, topics=None))  # no top-level error code to carry it: not answered
    assert (metadata.chunks, metadata.close_after) == ([], "Unexpected Kafka request of type Metadata during "
                                                           "SASL authentication.")  # fmt: skip
    with pytest.raises(InvalidRequestError):  # unparsable: closed at once (connection.py), as in Kafka
        auth.handle(bytearray(b"\x00\x03\x00\x0c\x00"))


SASL = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}
NO_JAAS = ("Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration. "
           "System property 'java.security.auth.login.config' is not set")  # fmt: skip


@pytest.mark.parametrize(("props", "message"), [
    ({}, "sasl.enabled.mechanisms: GSSAPI is not supported on SASL listener SASL_PLAINTEXT "
         "(served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), got 'GSSAPI'"),
    ({"sasl.enabled.mechanisms": "PLAIN,GSSAPI"}, "sasl.enabled.mechanisms: GSSAPI is not supported"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER",
      "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": "org.apache.kafka.common.security.plain."
                                                                   "PlainLoginModule required;"},
     "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config: expected 'org.apache.kafka.common.security."
     "oauthbearer.OAuthBearerLoginModule required ...;'"),
    ({"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI", "sasl.enabled.mechanisms": "PLAIN"},
     "listener.name.sasl_plaintext.sasl.enabled.mechanisms: GSSAPI is not supported"),
    ({"sasl.enabled.mechanisms": " , "}, "sasl.enabled.mechanisms: no SASL mechanism enabled"),
    ({"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}, NO_JAAS),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": JAAS},
     NO_JAAS),  # another mechanism's entry is not PLAIN's
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config":
      "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\" password=\"b\";"},
     "listener.name.sasl_plaintext.plain.sasl.jaas.config: no user_<name>"),
    ({"listener.name.sasl_plaintext.ssl.keystore.passwd": "/x"},
     "listener.name.sasl_plaintext.ssl.keystore.passwd: unknown configuration key"),
])  # fmt: skip
def test_sasl_listener_settings_are_checked_at_startup(tmp_path, props, message):
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        served_listeners(BrokerConfig.from_props({"log.dirs": str(tmp_path), **SASL, **props}))


def test_a_complete_sasl_listener_is_served(tmp_path):
    props = {"log.dirs": str(tmp_path), **SASL, "sasl.enabled.mechanisms": "plain",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}  # fmt: skip
    served = served_listeners(BrokerConfig.from_props(props))
    assert [(lst.name, lst.protocol) for lst in served] == [("PLAINTEXT", "PLAINTEXT"),
                                                            ("SASL_PLAINTEXT", "SASL_PLAINTEXT")]  # fmt: skip
    assert served[0].sasl is None and served[1].sasl.mechanisms == ("PLAIN",)
    assert served[1].sasl.plain_users == {"admin": "admin-secret", "alice": 'alice "quoted" secret'}
