"""A SASL_PLAINTEXT or SASL_SSL listener's mechanisms and their settings, checked at startup as Kafka's keys say.

A listener mapped to SASL_PLAINTEXT or SASL_SSL in ``listener.security.protocol.map``
serves the mechanisms of ``listener.name.<listener>.sasl.enabled.mechanisms``
(else ``sasl.enabled.mechanisms``, whose default is Kafka's GSSAPI), in that
order, which is the order SaslHandshake lists them in. PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER (unsecured JWTs, ``sasl_oauthbearer.py``, or
signed ones, ``oauth_config.py``) are served, alone or together; anything
else stops the start naming the key.

* PLAIN needs the listener's ``listener.name.<listener>.plain.sasl.jaas.config``
  (a PlainLoginModule entry with ``user_<name>`` options, ``sasl_plain.py``).
* SCRAM users are the stored credentials (``scram_store.py``), not JAAS
  options. Kafka needs a JAAS entry for each enabled SCRAM mechanism,
  ``listener.name.<listener>.scram-sha-256.sasl.jaas.config``
  (``org.apache.kafka.common.security.scram.ScramLoginModule required;``)
  or a JAAS file; here it may be left out, and if given it must name that
  module.
* OAUTHBEARER's JAAS entry, ``listener.name.<listener>.oauthbearer.sasl.jaas.config``
  (``OAuthBearerLoginModule``), may carry the unsecured validator's options;
  with ``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``
  Kafka's ``OAuthBearerValidatorCallbackHandler``, tokens are signed JWTs
  checked with a JWKS (``oauth_config.py``; ``jwks_endpoints`` lists the
  endpoints the server fetches before it opens the listeners, then refreshes).

``new_authenticator`` makes a connection's ``SaslAuthenticator`` with one
mechanism server factory for all of them: SCRAM servers read the live
credential store, so a credential altered by AlterUserScramCredentials is
used by the next login.
"""

from __future__ import annotations

from typing import Any

import attrs

from .config import ConfigError
from .sasl_auth import MechanismServer, SaslAuthenticator
from .oauth_config import signed_validator, uses_signed_tokens
from .oauth_jwks import JwksEndpoint
from .oauth_validator import SignedValidator
from .sasl_oauthbearer import OAUTHBEARER, OAuthBearerServer, ValidatorOptions
from .sasl_plain import PLAIN, PlainServer, parse_jaas, parse_plain_jaas
from .scram import MECHANISMS, ScramServer
from .scram_store import ScramStore

SERVED = (PLAIN, *MECHANISMS, OAUTHBEARER)
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@attrs.frozen
class SaslSettings:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = attrs.field(factory=dict, eq=False, hash=False)
    oauthbearer: ValidatorOptions | SignedValidator = ValidatorOptions()


def sasl_settings(config: Any, listener: str) -> SaslSettings:
    """Check a SASL listener's settings; its mechanisms and PLAIN users."""
    prefix = f"listener.name.{listener.lower()}."
    overrides = config.listener_overrides
    mechanisms_key = prefix + "sasl.enabled.mechanisms"
    key = mechanisms_key if mechanisms_key in overrides else "sasl.enabled.mechanisms"
    text = overrides.get(mechanisms_key, config.sasl_enabled_mechanisms)
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    if not mechanisms:
        raise ConfigError(f"{key}: no SASL mechanism enabled on SASL listener {listener}")
    for mechanism in mechanisms:
        if mechanism not in SERVED:
            raise ConfigError(f"{key}: {mechanism} is not supported on SASL listener {listener} "
                              f"(served: {', '.join(SERVED)}), got {text!r}")  # fmt: skip
    for mechanism in mechanisms:
        jaas_key = f"{prefix}{mechanism.lower()}.sasl.jaas.config"
        if mechanism in MECHANISMS and jaas_key in overrides:
            parse_jaas(jaas_key, overrides[jaas_key], SCRAM_MODULE)
    oauth = _oauthbearer(config, listener) if OAUTHBEARER in mechanisms else ValidatorOptions()
    return SaslSettings(mechanisms, _plain_users(overrides, prefix, listener) if PLAIN in mechanisms else {}, oauth)


def _oauthbearer(config: Any, listener: str) -> ValidatorOptions | SignedValidator:
    """The listener's OAUTHBEARER validator: unsecured JWTs (Kafka's default) or signed ones."""
    jaas_key = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    options = ValidatorOptions.from_jaas(jaas_key, config.listener_overrides.get(jaas_key))
    return signed_validator(config, listener) if uses_signed_tokens(config, listener) else options


def jwks_endpoints(listeners: list) -> list[JwksEndpoint]:
    """The JWKS endpoints of the listeners' signed OAUTHBEARER validators."""
    validators = [lst.sasl.oauthbearer for lst in listeners if lst.sasl is not None]
    return [v.jwks for v in validators if isinstance(v, SignedValidator) and isinstance(v.jwks, JwksEndpoint)]


def _plain_users(overrides: dict[str, str], prefix: str, listener: str) -> dict[str, str]:
    jaas_key = prefix + "plain.sasl.jaas.config"
    if jaas_key not in overrides:
        raise ConfigError(f"{jaas_key}: required for SASL/PLAIN on listener {listener}")
    users = parse_plain_jaas(jaas_key, overrides[jaas_key])
    if not users:
        raise ConfigError(f"{jaas_key}: no user_<name>=\"<password>\" option, so no client could log in")
    return users


def new_authenticator(settings: SaslSettings, store: ScramStore) -> SaslAuthenticator:
    """The authenticator of one new connection to a listener with ``settings``."""

    def new_server(mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(settings.plain_users)
        if mechanism == OAUTHBEARER:
            return OAuthBearerServer(settings.oauthbearer)
        return ScramServer(MECHANISMS[mechanism], store.get)

    return SaslAuthenticator(settings.mechanisms, new_server)
