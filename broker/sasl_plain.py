"""SASL/PLAIN: the users of a JAAS entry and the check of a PLAIN token, as Kafka's ``PlainSaslServer``.

The users come from the listener's JAAS entry,
``listener.name.<listener>.plain.sasl.jaas.config``:
``org.apache.kafka.common.security.plain.PlainLoginModule required
user_alice="alice-secret" ...;`` (each ``user_<name>`` option is a user and
its password; ``username``/``password`` are the broker's own, unused on one
node), or from the PlainLoginModule entries of the static JAAS file's
section (``jaas_context.py``). The JAAS syntax is read by ``jaas.py``.

``PlainServer`` is the mechanism server the connection's authenticator
(``sasl_auth.py``) hands the one PLAIN token to. The token is checked as
Kafka does: three NUL-separated parts, a username and a password, an
authorization id equal to the username if given. Every failure is an
``AuthenticationFailed`` whose message (Kafka's) the client gets.
"""

from __future__ import annotations

import hmac

import attrs

from .jaas import parse_jaas
from .jaas_context import PLAIN_MODULE
from .sasl_auth import AuthenticationFailed

PLAIN = "PLAIN"


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """The users of PlainLoginModule options: each ``user_<name>="<password>"``."""
    return {name[5:]: value for name, value in options.items() if name.startswith("user_")}


def parse_plain_jaas(key: str, text: str) -> dict[str, str]:
    """The users of a PlainLoginModule JAAS entry (a listener's ``plain.sasl.jaas.config``)."""
    return plain_users(parse_jaas(key, text, PLAIN_MODULE))


def check_plain_token(token: bytes, users: dict[str, str]) -> str:
    """The username a PLAIN token authenticates (RFC 4616 as Kafka's PlainSaslServer checks it)."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authzid, username, password = (p.decode("utf-8", "replace") for p in parts)
    if not username:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if not password:
        raise AuthenticationFailed("Authentication failed: password not specified")
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise AuthenticationFailed("Authentication failed: Invalid username or password")
    if authzid and authzid != username:
        raise AuthenticationFailed(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    return username


@attrs.define
class PlainServer:
    """PLAIN's side of the exchange: one token in, an empty token out."""

    users: dict[str, str]
    principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def evaluate(self, token: bytes) -> bytes:
        self.principal = check_plain_token(token, self.users)
        return b""
