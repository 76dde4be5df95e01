"""Which validator a listener's OAUTHBEARER logins get, and the settings of the signed one, read as Kafka reads them.

Kafka picks a listener's OAUTHBEARER server callback handler with
``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``
(only with the listener and mechanism prefix: a bare
``sasl.server.callback.handler.class`` is not read, and a warning says so).
Unset, or Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``: unsecured
JWTs (``sasl_oauthbearer.py``). ``org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler``
(or its Kafka 3.x alias in the ``.secured.`` package, removed in 4.0): signed
JWTs checked with the keys of a JWKS (``oauth_validator.py``). Any other
class stops the start: no Java class can be loaded here.

The signed validator's settings are Kafka's ``sasl.oauthbearer.*`` keys
(``security_keys.OAUTHBEARER_KEYS``), each looked up as Kafka looks it up for a
listener: ``listener.name.<l>.oauthbearer.<key>``, then
``listener.name.<l>.<key>``, then ``<key>``. ``sasl.oauthbearer.jwks.endpoint.url``
is required; Kafka's checks of it stop the start with Kafka's words: a URL
with a protocol other than http, https or file; a file that does not
exist, cannot be read or is a directory; then the file is read
(``oauth_jwks.JwksFile``). An http(s) URL is fetched later, before the
listeners open (``oauth_jwks.JwksEndpoint.load``). ``...refresh.ms`` must be
positive, the two retry backoffs not negative and the maximum not below the
first (Kafka finds the latter only when a refresh runs).
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from pathlib import Path
from typing import Any

from .config import ConfigError, listener_setting
from .oauth_jwks import JwksEndpoint, JwksFile
from .oauth_validator import ClaimRules, SignedValidator
from .security_keys import OAUTHBEARER_KEYS

log = logging.getLogger("minibroker")
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
VALIDATOR_ALIAS = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
UNSECURED = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
             "OAuthBearerUnsecuredValidatorCallbackHandler")
HANDLER = "sasl.server.callback.handler.class"
URL = "sasl.oauthbearer.jwks.endpoint.url"


def _prefix(listener: str) -> str:
    return f"listener.name.{listener.lower()}."


def uses_signed_tokens(config: Any, listener: str) -> bool:
    """True if the listener's OAUTHBEARER server callback handler is Kafka's OAuthBearerValidatorCallbackHandler."""
    key = f"{_prefix(listener)}oauthbearer.{HANDLER}"
    name = config.listener_overrides.get(key, "").strip()
    if name in (VALIDATOR, VALIDATOR_ALIAS):
        return True
    if name and name != UNSECURED:
        raise ConfigError(f"{key}: {name} cannot be used (no Java class is loaded here); the handlers served are "
                          f"{VALIDATOR} (signed tokens, a JWKS) and {UNSECURED} (the default)")  # fmt: skip
    if not name and config.sasl_server_callback_handler_class.strip():
        log.warning("%s is set without a listener and mechanism prefix, which Kafka does not read: OAUTHBEARER "
                    "tokens on listener %s are unsecured JWTs (set %s)", HANDLER, listener, key)  # fmt: skip
    return False


def _setting(config: Any, listener: str, name: str) -> tuple[str, Any]:
    """(the key that sets ``name`` for the listener, its value), the most specific key first."""
    return listener_setting(config, listener, name, "oauthbearer", OAUTHBEARER_KEYS[name][0])


def _claim_name(config: Any, listener: str, name: str) -> str:
    key, value = _setting(config, listener, name)
    if not value:
        raise ConfigError(f"{key}: The OAuth configuration option {name} value must not contain only whitespace")
    return value


def signed_validator(config: Any, listener: str) -> SignedValidator:
    """The listener's OAuthBearerValidatorCallbackHandler: its claim rules and its JWKS (a file is read now)."""
    audience = _setting(config, listener, "sasl.oauthbearer.expected.audience")[1]
    issuer = _setting(config, listener, "sasl.oauthbearer.expected.issuer")[1]
    rules = ClaimRules(_claim_name(config, listener, "sasl.oauthbearer.sub.claim.name"),
                       _claim_name(config, listener, "sasl.oauthbearer.scope.claim.name"),
                       _setting(config, listener, "sasl.oauthbearer.clock.skew.seconds")[1],
                       frozenset(a.strip() for a in audience.split(",") if a.strip()), issuer or None)  # fmt: skip
    return SignedValidator(rules, jwks_source(config, listener))


def jwks_source(config: Any, listener: str) -> JwksFile | JwksEndpoint:
    key, url = _setting(config, listener, URL)
    if not url:
        raise ConfigError(f"{URL}: required by listener {listener}, whose OAUTHBEARER server callback handler is "
                          f"OAuthBearerValidatorCallbackHandler (also as {_prefix(listener)}oauthbearer.{URL})")
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if not scheme or len(scheme) == 1:  # no protocol (a Windows drive letter is none either)
        raise ConfigError(f"{key}: The OAuth configuration option {URL} contains a URL ({url}) that is malformed: "
                          "no protocol")  # fmt: skip
    if scheme not in ("http", "https", "file"):
        raise ConfigError(f"{key}: The OAuth configuration option {URL} contains a URL ({url}) that contains an "
                          f'invalid protocol ({scheme}); only "http", "https", and "file" protocol are supported')
    if scheme == "file":
        source = JwksFile(key, _jwks_file(key, parts.path))
        source.load()
        return source
    if not parts.hostname:
        raise ConfigError(f"{key}: The OAuth configuration option {URL} contains a URL ({url}) that is malformed: "
                          "no host")  # fmt: skip
    return JwksEndpoint(key, url, *_refresh_settings(config, listener))


def _jwks_file(key: str, raw_path: str) -> Path:
    path = Path(raw_path).absolute()
    if not path.exists():
        raise ConfigError(f"{key}: The OAuth configuration option {URL} contains a file ({path}) that doesn't exist")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"{key}: The OAuth configuration option {URL} contains a file ({path}) that doesn't have "
                          "read permission")  # fmt: skip
    if path.is_dir():
        raise ConfigError(f"{key}: The OAuth configuration option {URL} references a directory ({path}), not a file")
    return path


def _refresh_settings(config: Any, listener: str) -> tuple[int, int, int]:
    refresh_key, refresh = _setting(config, listener, "sasl.oauthbearer.jwks.endpoint.refresh.ms")
    backoff_key, backoff = _setting(config, listener, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
    max_key, backoff_max = _setting(config, listener, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")
    if refresh <= 0:
        raise ConfigError(f"{refresh_key}: the JWKS refresh interval must be positive, got {refresh}")
    for key, value in ((backoff_key, backoff), (max_key, backoff_max)):
        if value < 0:
            raise ConfigError(f"{key}: must be non-negative, got {value}")
    if backoff_max < backoff:
        raise ConfigError(f"{max_key}: {backoff_max} is less than {backoff_key} ({backoff})")
    return refresh, backoff, backoff_max
