"""A SASL_PLAINTEXT or SASL_SSL listener's mechanisms and their settings, checked at startup as Kafka's keys say.

A listener mapped to SASL_PLAINTEXT or SASL_SSL in ``listener.security.protocol.map``
serves the mechanisms of ``listener.name.<listener>.sasl.enabled.mechanisms``
(else ``sasl.enabled.mechanisms``, whose default is Kafka's GSSAPI), in that
order, which is the order SaslHandshake lists them in. PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512 and OAUTHBEARER (unsecured JWTs, ``sasl_oauthbearer.py``, or
signed ones, ``oauth_config.py``) are served, alone or together; anything
else stops the start naming the key.

Each enabled mechanism needs JAAS entries, found as Kafka finds them
(``jaas_context.py``): the listener's
``listener.name.<listener>.<mechanism>.sasl.jaas.config``, else the
``<listener>.KafkaServer`` or ``KafkaServer`` section of the static JAAS file
(``-Djava.security.auth.login.config`` in ``KAFKA_OPTS``); with neither the
start stops with Kafka's message. What each mechanism takes from them:

* PLAIN: the users, ``user_<name>`` options of PlainLoginModule entries
  (``sasl_plain.py``). A listener key must hold a PlainLoginModule entry
  with users (else the start stops: no client could log in); a file section
  without any is served as Kafka serves it, every login failing (a warning
  says so).
* SCRAM: nothing; the users are the stored credentials (``scram_store.py``).
  A listener key must name ``org.apache.kafka.common.security.scram.ScramLoginModule``.
* OAUTHBEARER: exactly one entry, as Kafka's handlers want (a listener key's
  must be ``OAuthBearerLoginModule``), whose options may carry the unsecured
  validator's settings (``sasl_oauthbearer.py``); with
  ``listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class``
  Kafka's ``OAuthBearerValidatorCallbackHandler``, tokens are signed JWTs
  checked with a JWKS (``oauth_config.py``; ``jwks_endpoints`` lists the
  endpoints the server fetches before it opens the listeners, then refreshes).

``new_authenticator`` makes a connection's ``SaslAuthenticator`` with one
mechanism server factory for all of them: SCRAM servers read the live
credential store, so a credential altered by AlterUserScramCredentials is
used by the next login. Each mechanism's ``connections.max.reauth.ms`` (0,
unset, by default) caps its sessions (KIP-368, ``sasl_auth.py``).
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from .clock import wall_clock_ms
from .config import ConfigError, listener_setting
from .config_values import LONG
from .jaas import checked_options
from .jaas_context import OAUTHBEARER_MODULE, PLAIN_MODULE, SCRAM_MODULE, JaasContext, module_options, server_context
from .oauth_config import signed_validator, uses_signed_tokens
from .oauth_jwks import JwksEndpoint
from .oauth_validator import SignedValidator
from .sasl_auth import MechanismServer, SaslAuthenticator
from .sasl_oauthbearer import OAUTHBEARER, OAuthBearerServer, ValidatorOptions
from .sasl_plain import PLAIN, PlainServer, plain_users
from .scram import MECHANISMS, ScramServer
from .scram_store import ScramStore

log = logging.getLogger("minibroker")
SERVED = (PLAIN, *MECHANISMS, OAUTHBEARER)


@attrs.frozen
class SaslSettings:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = attrs.field(factory=dict, eq=False, hash=False)
    oauthbearer: ValidatorOptions | SignedValidator = ValidatorOptions()
    max_reauth_ms: dict[str, int] = attrs.field(factory=dict, eq=False, hash=False)  # by mechanism; 0: unset


def enabled_mechanisms(config: Any, listener: str) -> tuple[str, ...]:
    """The SASL mechanisms a listener serves, in order; the start stops for none or one not served."""
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
    return mechanisms


def sasl_settings(config: Any, listener: str) -> SaslSettings:
    """Check a SASL listener's settings; its mechanisms, PLAIN users and OAUTHBEARER validator."""
    mechanisms = enabled_mechanisms(config, listener)
    contexts = {mechanism: server_context(config, listener, mechanism) for mechanism in mechanisms}
    for mechanism in mechanisms:
        if mechanism in MECHANISMS and contexts[mechanism].key is not None:
            _module_of(contexts[mechanism], SCRAM_MODULE)
    users = _plain_users(contexts[PLAIN], listener) if PLAIN in mechanisms else {}
    oauth = _oauthbearer(config, listener, contexts[OAUTHBEARER]) if OAUTHBEARER in mechanisms else ValidatorOptions()
    return SaslSettings(mechanisms, users, oauth, max_reauth_ms(config, listener, mechanisms))


def max_reauth_ms(config: Any, listener: str, mechanisms: tuple[str, ...]) -> dict[str, int]:
    """``connections.max.reauth.ms`` of each mechanism: ``listener.name.<l>.<mechanism>.``, then
    ``listener.name.<l>.``, then the broker's key, as Kafka's SASL channel builder looks it up."""
    return {m: listener_setting(config, listener, "connections.max.reauth.ms", m, LONG)[1] for m in mechanisms}


def _module_of(context: JaasContext, module: str) -> dict[str, str]:
    """The options of a listener key's one entry, which must be ``module``."""
    return checked_options(context.key or context.source, context.entries[0], module)


def _oauthbearer(config: Any, listener: str, context: JaasContext) -> ValidatorOptions | SignedValidator:
    """The listener's OAUTHBEARER validator: unsecured JWTs (Kafka's default) or signed ones."""
    if len(context.entries) != 1:
        raise ConfigError(f"{context.source}: Must supply exactly 1 non-null JAAS mechanism configuration "
                          f"(size was {len(context.entries)})")  # fmt: skip
    options = _module_of(context, OAUTHBEARER_MODULE) if context.key else context.entries[0].options
    validator = ValidatorOptions.from_options(context.source, options)
    return signed_validator(config, listener) if uses_signed_tokens(config, listener) else validator


def jwks_endpoints(listeners: list) -> list[JwksEndpoint]:
    """The JWKS endpoints of the listeners' signed OAUTHBEARER validators."""
    validators = [lst.sasl.oauthbearer for lst in listeners if lst.sasl is not None]
    return [v.jwks for v in validators if isinstance(v, SignedValidator) and isinstance(v.jwks, JwksEndpoint)]


def _plain_users(context: JaasContext, listener: str) -> dict[str, str]:
    """PLAIN's users: those of the listener key's PlainLoginModule entry (which must have some), or of the
    JAAS file section's PlainLoginModule entries (with none, Kafka starts and every PLAIN login fails)."""
    if context.key is not None:
        users = plain_users(_module_of(context, PLAIN_MODULE))
        if not users:
            raise ConfigError(f"{context.key}: no user_<name>=\"<password>\" option, so no client could log in")
        return users
    users = plain_users(module_options(context, PLAIN_MODULE))
    if not users:
        log.warning("%s has no %s entry with a user_<name> option: every SASL/PLAIN login on listener %s "
                    "will fail", context.source, PLAIN_MODULE, listener)  # fmt: skip
    return users


def new_authenticator(settings: SaslSettings, store: ScramStore, clock=wall_clock_ms) -> SaslAuthenticator:
    """The authenticator of one new connection to a listener with ``settings``."""

    def new_server(mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(settings.plain_users)
        if mechanism == OAUTHBEARER:
            return OAuthBearerServer(settings.oauthbearer, clock)
        return ScramServer(MECHANISMS[mechanism], store.get)

    return SaslAuthenticator(settings.mechanisms, new_server, clock, dict(settings.max_reauth_ms))
