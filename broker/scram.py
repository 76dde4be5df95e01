"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them (KIP-84).

The broker keeps no passwords. A user's ``ScramCredential`` for one
mechanism is what RFC 5802 lets a server keep: the salt, the iteration
count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``, where ``SaltedPassword``
is PBKDF2-HMAC of the UTF-8 password (no SASLprep, as in Kafka). Kafka's
iteration bounds are 4096 to 16384 for both mechanisms.

``ScramServer`` is the broker's side of one exchange, sans-IO (its
``evaluate`` takes a client token and returns the answer):

1. client-first ``n,[a=authzid],n=<name>,r=<client nonce>[,ext=value...]``
   (channel binding is not supported: the header must be ``n``). The user's
   credential is looked up (``lookup(user, mechanism)``); the answer,
   server-first, is ``r=<client nonce + server nonce>,s=<salt>,i=<iterations>``.
2. client-final ``c=<binding>,r=<nonce>,p=<proof>``: the nonce must end with
   the combined one (Kafka's check), and ``H(ClientSignature XOR proof)``
   must equal the stored key, ``ClientSignature`` being the HMAC of the
   AuthMessage (the three messages without the proof) under the stored key.
   The answer, server-final, is ``v=<ServerSignature>``, which lets the
   client check the broker holds its credential.

Messages are matched against Kafka's grammar (ASCII names, ``=2C``/``=3D``
escapes, base64 values). Extensions other than ``tokenauth`` are ignored, as
Kafka ignores them; ``tokenauth=true`` asks for a delegation token, which
this broker has none of, so it fails. Failures raise ``SaslFailed`` (the
client gets Kafka's fixed message), except an authorization id other than
the user, which raises ``AuthenticationFailed`` with Kafka's own text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from typing import Callable

import attrs

from .sasl_auth import AuthenticationFailed, SaslFailed


@attrs.frozen
class ScramMechanism:
    name: str
    type: int  # Kafka's ScramMechanism type, what AlterUserScramCredentials carries
    hash_name: str
    min_iterations: int = 4096
    max_iterations: int = 16384

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode("utf-8"), salt, iterations)


SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS = {m.name: m for m in (SHA_256, SHA_512)}
BY_TYPE = {m.type: m for m in (SHA_256, SHA_512)}


@attrs.frozen
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_from_salted(mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
    """The credential of a salted password (what AlterUserScramCredentials sends)."""
    if not salted:
        raise ValueError("Empty key")  # Kafka's HMAC refuses an empty key with this text
    stored = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
    return ScramCredential(salt, stored, mechanism.hmac(salted, b"Server Key"), iterations)


def credential_from_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> ScramCredential:
    return credential_from_salted(mechanism, salt, mechanism.salted_password(password, salt, iterations), iterations)


# Kafka's grammar (ScramMessages), as Python patterns over the decoded text
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # ASCII but NUL and ","
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # printable ASCII but ","
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<name>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS}))"
)
CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<binding>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_B64})"
)


def username(sasl_name: str) -> str:
    """A SCRAM ``saslname`` decoded: ``=2C`` is a comma, ``=3D`` an equals sign."""
    name = sasl_name.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise SaslFailed(f"Invalid username: {sasl_name}")
    return name.replace("=3D", "=")


def _extensions(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if item)


def server_nonce() -> str:
    return secrets.token_urlsafe(24)  # printable, no comma: fits the grammar


@attrs.define
class ScramServer:
    mechanism: ScramMechanism
    lookup: Callable[[str, str], ScramCredential | None]
    new_nonce: Callable[[], str] = server_nonce
    state: str = "first"  # -> "final" -> "complete", or "failed"
    principal: str | None = None  # once complete
    _user: str = ""
    _credential: ScramCredential | None = None
    _auth_start: str = ""  # client-first-bare "," server-first
    _nonce: str = ""

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def evaluate(self, token: bytes) -> bytes:
        """The answer to one client token; raises ``SaslFailed`` or ``AuthenticationFailed``."""
        step = {"first": self._client_first, "final": self._client_final}.get(self.state)
        if step is None:
            raise SaslFailed(f"Unexpected challenge in Sasl server state {self.state}")
        try:
            return step(token.decode("utf-8", "replace"))
        except (SaslFailed, AuthenticationFailed):
            self.state, self._credential = "failed", None
            raise

    def _client_first(self, message: str) -> bytes:
        match = CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise SaslFailed(f"Invalid SCRAM client first message format: {message}")
        user = username(match["name"])
        if _extensions(match["extensions"]).get("tokenauth", "").lower() == "true":
            raise SaslFailed(f"Token Authentication failed: Invalid tokenId : {user}")
        credential = self.lookup(user, self.mechanism.name)
        if credential is None:
            raise SaslFailed("Authentication failed: Invalid user credentials")
        if match["authzid"] and match["authzid"] != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslFailed(f"Iterations {credential.iterations} is less than the minimum "
                             f"{self.mechanism.min_iterations} for {self.mechanism.name}")  # fmt: skip
        self._nonce = match["nonce"] + self.new_nonce()
        salt = base64.b64encode(credential.salt).decode()
        server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._user, self._credential, self.state = user, credential, "final"
        self._auth_start = f"{match['bare']},{server_first}"
        return server_first.encode()

    def _client_final(self, message: str) -> bytes:
        match = CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise SaslFailed(f"Invalid SCRAM client final message format: {message}")
        if not match["nonce"].endswith(self._nonce):
            raise SaslFailed("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._auth_start},{match['without_proof']}".encode()
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            proof = b""
        client_key = bytes(a ^ b for a, b in zip(signature, proof)) if len(proof) == len(signature) else b""
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise SaslFailed("Invalid client credentials")
        verifier = base64.b64encode(self.mechanism.hmac(credential.server_key, auth_message)).decode()
        self._credential, self.state, self.principal = None, "complete", self._user
        return f"v={verifier}".encode()
