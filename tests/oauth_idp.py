"""A throwaway OAuth identity provider for the signed-token tests: keys, a JWKS endpoint, a token endpoint.

``SigningKey.rsa(kid)`` / ``.ec(kid, curve)`` / ``.ed25519(kid)`` make a key
pair with ``cryptography``; ``key.jwk()`` is its public JWK, ``key.sign(claims)``
a compact JWS (RS256 by default for RSA, ES256/384/512 for EC, EdDSA),
``header`` overriding any header member (``alg``, ``kid``, ``crit`` ...).

``IdentityProvider`` serves, on ``127.0.0.1`` and a free port, from a thread
(over TLS with the server context ``tls``, if given):

* ``GET /jwks``: ``{"keys": [...]}`` of ``published`` (a list the test may
  change: key rotation), counting fetches in ``jwks_fetches``; while
  ``jwks_status`` is not 200 it answers that status instead, and ``jwks_body``
  replaces the document when set;
* ``POST /token``: the client-credentials grant (``grant_type=client_credentials``,
  the client's id and secret in Basic authentication, as librdkafka and the
  Java client send them) answered with ``{"access_token": <JWS>, ...}``,
  the token signed by ``token_key`` for the subject ``clients[client_id]``.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

_EC = {"P-256": (ec.SECP256R1, "ES256", hashes.SHA256, 32), "P-384": (ec.SECP384R1, "ES384", hashes.SHA384, 48),
       "P-521": (ec.SECP521R1, "ES512", hashes.SHA512, 66)}  # fmt: skip
_HASHES = {"256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_SIGNING = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _int(value: int) -> str:
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


def claims_for(subject: str, lifetime_s: int = 3600, **more: Any) -> dict:
    """A token's claims: the subject, issued a minute ago, valid for ``lifetime_s``."""
    now = int(time.time())
    return {"sub": subject, "iat": now - 60, "exp": now + lifetime_s, **more}


@attrs.define
class SigningKey:
    kid: str | None
    private: Any
    alg: str
    crv: str | None = None

    @classmethod
    def rsa(cls, kid: str | None, bits: int = 2048, alg: str = "RS256") -> "SigningKey":
        return cls(kid, rsa.generate_private_key(public_exponent=65537, key_size=bits), alg)

    @classmethod
    def ec(cls, kid: str | None, curve: str = "P-256") -> "SigningKey":
        return cls(kid, ec.generate_private_key(_EC[curve][0]()), _EC[curve][1], curve)

    @classmethod
    def ed25519(cls, kid: str | None) -> "SigningKey":
        return cls(kid, ed25519.Ed25519PrivateKey.generate(), "EdDSA", "Ed25519")

    def jwk(self, **more: Any) -> dict:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            numbers = public.public_numbers()
            params = {"kty": "RSA", "n": _int(numbers.n), "e": _int(numbers.e)}
        elif isinstance(public, ec.EllipticCurvePublicKey):
            numbers, size = public.public_numbers(), _EC[self.crv][3]
            params = {"kty": "EC", "crv": self.crv, "x": b64(numbers.x.to_bytes(size, "big")),
                      "y": b64(numbers.y.to_bytes(size, "big"))}  # fmt: skip
        else:
            params = {"kty": "OKP", "crv": self.crv, "x": b64(public.public_bytes_raw())}
        return {**params, **({"kid": self.kid} if self.kid else {}), "use": "sig", **more}

    def sign(self, claims: dict, **header: Any) -> str:
        head = {"alg": self.alg, "typ": "JWT", **({"kid": self.kid} if self.kid else {}), **header}
        head = {k: v for k, v in head.items() if v is not None}
        text = f"{b64(json.dumps(head).encode())}.{b64(json.dumps(claims).encode())}"
        alg = head.get("alg") if head.get("alg") in _SIGNING else self.alg  # none, HS256 ...: signed anyway
        return f"{text}.{b64(self._signature(text.encode(), alg))}"

    def _signature(self, data: bytes, alg: str) -> bytes:
        if alg == "EdDSA":
            return self.private.sign(data)
        digest = _HASHES[alg[2:]]()
        if alg.startswith("RS"):
            return self.private.sign(data, padding.PKCS1v15(), digest)
        if alg.startswith("PS"):
            return self.private.sign(data, padding.PSS(padding.MGF1(digest), digest.digest_size), digest)
        r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(digest)))
        size = _EC[self.crv][3]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def jwks_document(*keys: SigningKey) -> dict:
    return {"keys": [key.jwk() for key in keys]}


class IdentityProvider:
    def __init__(self, *published: SigningKey, clients: dict[str, tuple[str, str]] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:  # fmt: skip
        self.published = list(published)  # the keys of the JWKS
        self.token_key = published[0] if published else SigningKey.rsa("token")  # signs the issued tokens
        self.clients = clients or {}  # client id -> (secret, subject)
        self.token_claims: dict = {}  # more claims of every issued token
        self.jwks_status = 200
        self.jwks_body: dict | None = None  # answered instead of the published keys
        self.jwks_fetches = 0
        self.tokens_issued = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        if tls is not None:  # https: each connection's handshake in the thread that serves it
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True, do_handshake_on_connect=False)
        self.scheme = "https" if tls is not None else "http"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "IdentityProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def issue(self, client_id: str, secret: str) -> dict | None:
        if self.clients.get(client_id, ("", ""))[0] != secret or not secret:
            return None
        self.tokens_issued += 1
        token = self.token_key.sign(claims_for(self.clients[client_id][1], **self.token_claims))
        return {"access_token": token, "token_type": "Bearer", "expires_in": 3600}


def _handler(idp: IdentityProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path != "/jwks":
                return self._answer(404, {"error": "not found"})
            idp.jwks_fetches += 1
            if idp.jwks_status != 200:
                return self._answer(idp.jwks_status, {"error": "unavailable"})
            self._answer(200, idp.jwks_body if idp.jwks_body is not None else jwks_document(*idp.published))

        def do_POST(self) -> None:  # noqa: N802
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
            scheme, _, credentials = self.headers.get("Authorization", "").partition(" ")
            client_id, _, secret = base64.b64decode(credentials or "").decode().partition(":")
            client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
            if self.path != "/token" or form.get("grant_type") != ["client_credentials"] or scheme != "Basic":
                return self._answer(400, {"error": "invalid_request"})
            issued = idp.issue(client_id, secret)
            self._answer(200, issued) if issued else self._answer(401, {"error": "invalid_client"})

    return Handler
