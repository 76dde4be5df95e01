"""SASL/PLAIN: the users of a JAAS entry and the check of a PLAIN token, as Kafka's ``PlainSaslServer``.

The users come from the listener's JAAS entry,
``listener.name.<listener>.plain.sasl.jaas.config``:
``org.apache.kafka.common.security.plain.PlainLoginModule required
user_alice="alice-secret" ...;`` (each ``user_<name>`` option is a user and
its password; ``username``/``password`` are the broker's own, unused on one
node). ``parse_jaas`` reads any such entry (SCRAM's ``ScramLoginModule``
too, ``sasl_config.py``).

``PlainServer`` is the mechanism server the connection's authenticator
(``sasl_auth.py``) hands the one PLAIN token to. The token is checked as
Kafka does: three NUL-separated parts, a username and a password, an
authorization id equal to the username if given. Every failure is an
``AuthenticationFailed`` whose message (Kafka's) the client gets.
"""

from __future__ import annotations

import hmac
import re

import attrs

from .config import ConfigError
from .sasl_auth import AuthenticationFailed

PLAIN = "PLAIN"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas(key: str, text: str, module: str) -> dict[str, str]:
    """The options of a one-module JAAS entry ``<module> required name="value" ...;``."""
    body = text.strip().rstrip(";").strip()
    if not body.startswith(module):
        raise ConfigError(f"{key}: expected '{module} required ...;'")
    rest = body[len(module):].strip()
    flag, _, options = rest.partition(" ")
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError(f"{key}: expected a control flag (required) after the login module")
    result, pos = {}, 0
    while options[pos:].strip():
        match = _OPTION.match(options, pos)
        if match is None:
            raise ConfigError(f"{key}: cannot read the options at {options[pos:].strip()[:30]!r}")
        result[match.group(1)] = re.sub(r"\\(.)", r"\1", match.group(2))
        pos = match.end()
    return result


def parse_plain_jaas(key: str, text: str) -> dict[str, str]:
    """The users (``user_<name>="<password>"`` options) of a PlainLoginModule JAAS entry."""
    options = parse_jaas(key, text, PLAIN_MODULE)
    return {name[5:]: value for name, value in options.items() if name.startswith("user_")}


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
