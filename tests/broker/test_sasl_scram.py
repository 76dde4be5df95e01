"""SASL/SCRAM (RFC 5802/7677) as Kafka serves it: the exchange, sans-IO, alone and through the authenticator.

The server is checked against RFC 7677's SCRAM-SHA-256 example byte for
byte, against a SCRAM-SHA-512 exchange worked out here from the RFC's
definitions (its own Hi loop, not hashlib's PBKDF2), and against
kafka-python's SCRAM client, which checks the server's signature. Every way
a login can fail is refused with the message Kafka gives: its fixed text
for anything that could tell a user exists, its own text for an
authorization id other than the user. A listener's settings and a real
connection's limits are in ``test_sasl_listener_scram.py``, real clients in
``tests/e2e/test_sasl_scram.py``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import warnings

import pytest

from broker.sasl_auth import AuthenticationFailed, SaslFailed, UnexpectedRequest
from broker.sasl_config import SaslSettings, new_authenticator
from broker.scram import SHA_256, SHA_512, ScramServer, credential_from_password, credential_from_salted
from broker.scram_store import ScramStore
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request

from ._admin_client import req

# RFC 7677, section 3
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE, RFC_SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
             b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")  # fmt: skip
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


def rfc_store() -> ScramStore:
    store = ScramStore(None)
    store.credentials[("user", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "pencil", RFC_SALT, 4096)
    return store


def rfc_server(store: ScramStore | None = None) -> ScramServer:
    return ScramServer(SHA_256, (store or rfc_store()).get, lambda: RFC_SERVER_NONCE)


def hi(name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(), written out: U1 = HMAC(p, salt + INT(1)), Ui = HMAC(p, Ui-1), XORed together."""
    u = hmac.new(password, salt + b"\x00\x00\x00\x01", name).digest()
    result = int.from_bytes(u, "big")
    for _ in range(iterations - 1):
        u = hmac.new(password, u, name).digest()
        result ^= int.from_bytes(u, "big")
    return result.to_bytes(len(u), "big")


def client_final(name: str, password: str, first_bare: str, server_first: str, salt: bytes, iterations: int,
                 nonce: str, binding: str = "biws") -> tuple[bytes, bytes]:  # fmt: skip
    """A client's final message and the server signature it expects, from RFC 5802's definitions."""
    salted = hi(name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", name).digest()
    without_proof = f"c={binding},r={nonce}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(name, client_key).digest(), auth_message, name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature))
    server_signature = hmac.new(hmac.new(salted, b"Server Key", name).digest(), auth_message, name).digest()
    return (f"{without_proof},p={base64.b64encode(proof).decode()}".encode(),
            b"v=" + base64.b64encode(server_signature))  # fmt: skip


def test_rfc_7677_sha_256_example_byte_for_byte():
    server = rfc_server()
    assert server.evaluate(RFC_FIRST) == RFC_SERVER_FIRST and not server.complete
    assert server.evaluate(RFC_FINAL) == RFC_SERVER_FINAL
    assert (server.complete, server.principal) == (True, "user")


def test_a_sha_512_exchange_worked_out_from_the_rfc():
    salt, nonce = b"\x01\x02salt\xff", "fyko+d2lbbFgONRv9qkxdawL"
    store = ScramStore(None)
    store.credentials[("bob", "SCRAM-SHA-512")] = credential_from_password(SHA_512, "b\u00f6b-secret", salt, 4096)
    server = ScramServer(SHA_512, store.get, lambda: "3rfcNHYJY1ZVvWVs7j")
    server_first = server.evaluate(f"n,,n=bob,r={nonce}".encode()).decode()
    assert server_first == f"r={nonce}3rfcNHYJY1ZVvWVs7j,s={base64.b64encode(salt).decode()},i=4096"
    final, verifier = client_final("sha512", "b\u00f6b-secret", f"n=bob,r={nonce}", server_first, salt, 4096,
                                   nonce + "3rfcNHYJY1ZVvWVs7j")  # fmt: skip
    assert server.evaluate(final) == verifier and server.principal == "bob"
    assert len(base64.b64decode(verifier[2:])) == 64


def test_the_credential_of_a_salted_password_is_the_rfcs():
    salted = hi("sha256", b"pencil", RFC_SALT, 4096)
    credential = credential_from_salted(SHA_256, RFC_SALT, salted, 4096)
    assert credential == credential_from_password(SHA_256, "pencil", RFC_SALT, 4096)
    assert credential.stored_key == hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()
    with pytest.raises(ValueError, match="Empty key"):
        credential_from_salted(SHA_256, RFC_SALT, b"", 4096)


@pytest.mark.parametrize("mechanism", [SHA_256, SHA_512])
def test_kafka_pythons_scram_client_logs_in_and_checks_our_signature(mechanism):
    with warnings.catch_warnings():  # kafka-python's import reads resources the deprecated way
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.net.sasl.scram import ScramClient

    store = ScramStore(None)
    store.credentials[("alice", mechanism.name)] = credential_from_password(mechanism, "alice-secret", b"s4lt", 8192)
    client, server = ScramClient("alice", "alice-secret", mechanism.name), ScramServer(mechanism, store.get)
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))  # raises on a bad signature
    assert server.complete and server.principal == "alice"


def test_names_with_commas_and_equals_signs_are_escaped():
    store = ScramStore(None)
    store.credentials[("a,b=c", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "pw", b"salt", 4096)
    server = ScramServer(SHA_256, store.get, lambda: "S")
    first = server.evaluate(b"n,,n=a=2Cb=3Dc,r=N").decode()
    final, verifier = client_final("sha256", "pw", "n=a=2Cb=3Dc,r=N", first, b"salt", 4096, "NS")
    assert server.evaluate(final) == verifier and server.principal == "a,b=c"


def test_unknown_extensions_are_ignored_and_an_equal_authorization_id_is_fine():
    server = rfc_server()
    first = server.evaluate(b"n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO,foo=bar").decode()
    nonce = RFC_CLIENT_NONCE + RFC_SERVER_NONCE
    final, verifier = client_final("sha256", "pencil", f"n=user,r={RFC_CLIENT_NONCE},foo=bar", first, RFC_SALT,
                                   4096, nonce)  # fmt: skip
    assert server.evaluate(final) == verifier and server.complete


def _fail_final(final: bytes, store: ScramStore | None = None) -> Exception:
    server = rfc_server(store)
    server.evaluate(RFC_FIRST)
    with pytest.raises((SaslFailed, AuthenticationFailed)) as failed:
        server.evaluate(final)
    assert server.state == "failed" and server.principal is None
    return failed.value


def _fail_first(first: bytes, store: ScramStore | None = None) -> Exception:
    server = rfc_server(store)
    with pytest.raises((SaslFailed, AuthenticationFailed)) as failed:
        server.evaluate(first)
    assert server.state == "failed"
    return failed.value


@pytest.mark.parametrize(("first", "detail"), [
    (b"n,,n=mallory,r=abc", "Authentication failed: Invalid user credentials"),
    (b"y,,n=user,r=abc", "Invalid SCRAM client first message format: y,,n=user,r=abc"),  # channel binding
    (b"p=tls-unique,,n=user,r=abc", "Invalid SCRAM client first message format"),
    (b"n,,n=user", "Invalid SCRAM client first message format"),
    (b"n,,n=user,r=a,b", "Invalid SCRAM client first message format"),
    (b"n,,n=us=er,r=abc", "Invalid SCRAM client first message format"),  # a bad escape
    (b"n,,n=\xc3\xbcser,r=abc", "Invalid SCRAM client first message format"),  # Kafka's names are ASCII
    (b"n,,n=user,r=abc,1x=y", "Invalid SCRAM client first message format"),  # an extension name is letters
    (b"\xff\xfe", "Invalid SCRAM client first message format"),
    (b"", "Invalid SCRAM client first message format: "),
    (b"n,,n=user,r=abc,tokenauth=true", "Token Authentication failed: Invalid tokenId : user"),
])  # fmt: skip
def test_bad_client_first_messages(first, detail):
    failed = _fail_first(first)
    assert isinstance(failed, SaslFailed) and str(failed).startswith(detail)


def test_an_authorization_id_other_than_the_user_is_refused_with_kafkas_own_text():
    failed = _fail_first(b"n,a=admin,n=user,r=abc")
    assert isinstance(failed, AuthenticationFailed)
    assert str(failed) == "Authentication failed: Client requested an authorization id that is different from username"


def test_a_stored_credential_below_the_minimum_iterations_is_refused():
    store = ScramStore(None)
    store.credentials[("user", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "pencil", RFC_SALT, 4095)
    assert str(_fail_first(RFC_FIRST, store)) == "Iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256"


def test_a_credential_of_the_other_mechanism_does_not_log_in():
    server = ScramServer(SHA_512, rfc_store().get)  # the user has only a SCRAM-SHA-256 credential
    with pytest.raises(SaslFailed, match="Invalid user credentials"):
        server.evaluate(RFC_FIRST)


def _final(proof: str, nonce: str = RFC_CLIENT_NONCE + RFC_SERVER_NONCE) -> bytes:
    return f"c=biws,r={nonce},p={proof}".encode()


GOOD_PROOF = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="


@pytest.mark.parametrize(("final", "detail"), [
    (_final("eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="), "Invalid client credentials"),  # one bit off
    (_final(base64.b64encode(bytes(32)).decode()), "Invalid client credentials"),
    (_final("dHzbZapW"), "Invalid client credentials"),  # too short for SHA-256
    (_final(GOOD_PROOF, RFC_CLIENT_NONCE), "Invalid client nonce in the final client message."),
    (_final(GOOD_PROOF, RFC_CLIENT_NONCE + RFC_SERVER_NONCE[:-1]), "Invalid client nonce"),
    (_final(GOOD_PROOF, RFC_CLIENT_NONCE + "x" + RFC_SERVER_NONCE[1:]), "Invalid client nonce"),
    (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", "Invalid SCRAM client final message format"),
    (_final("not base64!"), "Invalid SCRAM client final message format"),
    (b"c=biws,p=" + GOOD_PROOF.encode(), "Invalid SCRAM client final message format"),
    (RFC_FINAL.replace(b"c=biws", b"c=eSws"), "Invalid client credentials"),  # the binding is in the AuthMessage
])  # fmt: skip
def test_bad_client_final_messages(final, detail):
    failed = _fail_final(final)
    assert isinstance(failed, SaslFailed) and str(failed).startswith(detail)


def test_a_wrong_password_fails_and_the_exchange_cannot_go_on():
    server = rfc_server()
    first = server.evaluate(RFC_FIRST).decode()
    final, _ = client_final("sha256", "pencil2", "n=user,r=" + RFC_CLIENT_NONCE, first, RFC_SALT, 4096,
                            RFC_CLIENT_NONCE + RFC_SERVER_NONCE)  # fmt: skip
    with pytest.raises(SaslFailed, match="^Invalid client credentials$"):
        server.evaluate(final)
    with pytest.raises(SaslFailed, match="Unexpected challenge in Sasl server state failed"):
        server.evaluate(RFC_FINAL)


# -- through the connection's authenticator ----------------------------------------------------------------------


def _frame(key: int, version: int, **fields) -> bytearray:
    return bytearray(encode_request(RequestHeader(key, version, 5, "sasl-test"), req(key, **fields))[4:])


def _answer(step, key: int, version: int):
    data = b"".join(step.chunks)
    return decode_response(data[4:], API_BY_KEY[key], version)[1]


def authenticator(mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), store=None):
    settings = SaslSettings(tuple(mechanisms), {"admin": "admin-secret"})
    auth = new_authenticator(settings, store or rfc_store())
    return auth


def _scram_rfc_login(auth, version: int):
    hs = auth.handle(_frame(17, 1, mechanism="SCRAM-SHA-256"))
    assert _answer(hs, 17, 1).mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] and hs.close_after is None
    auth.server.new_nonce = lambda: RFC_SERVER_NONCE
    first = auth.handle(_frame(36, version, auth_bytes=RFC_FIRST))
    return first, auth.handle(_frame(36, version, auth_bytes=RFC_FINAL))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_scram_through_saslauthenticate(version):
    auth = authenticator()
    first, final = _scram_rfc_login(auth, version)
    assert (_answer(first, 36, version).error_code, _answer(first, 36, version).auth_bytes) == (0, RFC_SERVER_FIRST)
    answer = _answer(final, 36, version)
    assert (answer.error_code, answer.auth_bytes, final.close_after) == (0, RFC_SERVER_FINAL, None)
    assert auth.complete and auth.principal == "user"
    if version >= 1:
        assert answer.session_lifetime_ms == 0


def test_a_failed_scram_login_gets_kafkas_fixed_message_then_closes():
    auth = authenticator()
    hs = auth.handle(_frame(17, 1, mechanism="SCRAM-SHA-512"))
    assert _answer(hs, 17, 1).error_code == ErrorCode.NONE
    step = auth.handle(_frame(36, 2, auth_bytes=RFC_FIRST))  # no SCRAM-SHA-512 credential for "user"
    answer = _answer(step, 36, 2)
    assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                         GENERIC.format("SCRAM-SHA-512"))  # fmt: skip
    detail = "Authentication failed: Invalid user credentials"  # our log's, not the client's
    assert step.close_after == f"SASL/SCRAM-SHA-512 authentication failed: {detail}"
    assert not auth.complete and auth.principal is None


def test_an_authorization_id_failure_tells_the_client_kafkas_text():
    auth = authenticator()
    auth.handle(_frame(17, 1, mechanism="SCRAM-SHA-256"))
    answer = _answer(auth.handle(_frame(36, 2, auth_bytes=b"n,a=admin,n=user,r=abc")), 36, 2)
    assert answer.error_message == ("Authentication failed: Client requested an authorization id that is different "
                                    "from username")  # fmt: skip


def test_plain_and_scram_on_one_listener():
    auth = authenticator()
    auth.handle(_frame(17, 1, mechanism="PLAIN"))
    step = auth.handle(_frame(36, 2, auth_bytes=b"\x00admin\x00admin-secret"))
    assert _answer(step, 36, 2).error_code == 0 and auth.complete and auth.principal == "admin"
    other = authenticator()
    _scram_rfc_login(other, 2)
    assert other.complete and other.principal == "user"


def test_a_mechanism_not_enabled_is_refused_with_the_enabled_ones_then_closed():
    for mechanism in ("SCRAM-SHA-512", "scram-sha-256", "GSSAPI"):
        step = authenticator(("PLAIN", "SCRAM-SHA-256")).handle(_frame(17, 1, mechanism=mechanism))
        answer = _answer(step, 17, 1)
        assert (answer.error_code, answer.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                          ["PLAIN", "SCRAM-SHA-256"])  # fmt: skip
        assert step.close_after == f"unsupported SASL mechanism {mechanism!r}"


def test_scram_after_a_v0_handshake_uses_bare_tokens():
    auth = authenticator()
    auth.handle(_frame(17, 0, mechanism="SCRAM-SHA-256"))
    auth.server.new_nonce = lambda: RFC_SERVER_NONCE
    sized = len(RFC_SERVER_FIRST).to_bytes(4, "big") + RFC_SERVER_FIRST
    assert b"".join(auth.handle(bytearray(RFC_FIRST)).chunks) == sized
    assert not auth.complete
    assert b"".join(auth.handle(bytearray(RFC_FINAL)).chunks)[4:] == RFC_SERVER_FINAL and auth.complete
    failing = authenticator()
    failing.handle(_frame(17, 0, mechanism="SCRAM-SHA-256"))
    with pytest.raises(UnexpectedRequest, match="SASL/SCRAM-SHA-256 authentication failed: Invalid SCRAM client"):
        failing.handle(bytearray(b"garbage"))


def test_only_saslauthenticate_between_the_two_scram_messages():
    auth = authenticator()
    auth.handle(_frame(17, 1, mechanism="SCRAM-SHA-256"))
    auth.handle(_frame(36, 2, auth_bytes=RFC_FIRST))
    step = auth.handle(_frame(3, 12, topics=None))
    assert step.close_after.startswith("Unexpected Kafka request of type Metadata during SASL authentication")


def test_the_next_login_uses_a_changed_credential():
    store = rfc_store()
    auth = authenticator(store=store)
    auth.handle(_frame(17, 1, mechanism="SCRAM-SHA-256"))
    store.credentials[("user", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "other", RFC_SALT, 4096)
    auth.server.new_nonce = lambda: RFC_SERVER_NONCE
    auth.handle(_frame(36, 2, auth_bytes=RFC_FIRST))
    step = auth.handle(_frame(36, 2, auth_bytes=RFC_FINAL))  # the RFC's proof is for "pencil"
    assert _answer(step, 36, 2).error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and step.close_after
