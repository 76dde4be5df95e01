"""A SASL_PLAINTEXT or SASL_SSL listener's mechanisms and their settings, checked at startup as Kafka's keys say.

A listener mapped to SASL_PLAINTEXT or SASL_SSL in ``listener.security.protocol.map``
serves the mechanisms of ``listener.name.<listener>.sasl.enabled.mechanisms``
(else ``sasl.enabled.mechanisms``, whose default is Kafka's GSSAPI), in that
order, which is the order SaslHandshake lists them in. PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER (unsecured JWTs, ``sasl_oauthbearer.py``) are
served, alone or together; anything else stops the start naming the key.

* PLAIN needs the listener's ``listener.name.<listener>.plain.sasl.jaas.config``
  (a PlainLoginModule entry with ``user_<name>`` options, ``sasl_plain.py``).
* SCRAM users are the stored credentials (``scram_store.py``), not JAAS
  options. Kafka needs a JAAS entry for each enabled SCRAM mechanism,
  ``listener.name.<listener>.scram-sha-256.sasl.jaas.config``
  (``org.apache.kafka.common.security.scram.ScramLoginModule required;``)
  or a JAAS file; here it may be left out, and if given it must name that
  module.
* OAUTHBEARER's JAAS entry, ``listener.name.<listener>.oauthbearer.sasl.jaas.config``
  (``OAuthBearerLoginModule``), may carry the unsecured validator's options.

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
    oauthbearer: ValidatorOptions = ValidatorOptions()


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
    oauth_key = prefix + "oauthbearer.sasl.jaas.config"
    oauth = ValidatorOptions.from_jaas(oauth_key, overrides.get(oauth_key)) if OAUTHBEARER in mechanisms else None
    return SaslSettings(mechanisms, _plain_users(overrides, prefix, listener) if PLAIN in mechanisms else {},
                        oauth or ValidatorOptions())  # fmt: skip


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
