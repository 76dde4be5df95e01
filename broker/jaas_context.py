"""Which JAAS entries serve a SASL listener's mechanism, as Kafka's ``JaasContext.loadServerContext`` picks them.

For each mechanism enabled on a SASL listener, in Kafka's order:

1. the listener's ``listener.name.<listener>.<mechanism>.sasl.jaas.config``
   (exactly one entry, Kafka's ``JaasConfig``: ``jaas.key_entry``);
2. else the static JAAS file's ``<listener name lower-cased>.KafkaServer``
   section (``jaas_file.JaasFile``, named by ``-Djava.security.auth.login.config``
   in ``KAFKA_OPTS``);
3. else its ``KafkaServer`` section.

Other sections (``Client``, ZooKeeper's, ``KafkaClient``) are not read. A
bare ``sasl.jaas.config`` is not a broker key (Kafka ignores it on a broker
with a warning). With none of the three the start stops with Kafka's
"Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the
JAAS configuration. System property 'java.security.auth.login.config' is not
set" (or "is <value>"). A section may hold several entries (PLAIN's and
SCRAM's modules side by side, one section for all mechanisms); each
mechanism then takes its own from them (``sasl_config.py``), as Kafka's
callback handlers do. The modules of a section are checked as Kafka's
login checks them: a module of ``org.apache.kafka.disallowed.login.modules``
stops the start with Kafka's message; a module other than Kafka's PLAIN,
SCRAM and OAUTHBEARER ones stops it too (no Java class can be loaded here:
Kafka's login would run it).
"""

from __future__ import annotations

from typing import Any

import attrs

from .config import ConfigError
from .jaas import JaasEntry, JaasSyntaxError, key_entry
from .jaas_file import LOGIN_CONFIG, JaasFile

SERVER = "KafkaServer"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KAFKA_MODULES = (PLAIN_MODULE, SCRAM_MODULE, OAUTHBEARER_MODULE)
NO_FILE = JaasFile()


@attrs.frozen
class JaasContext:
    entries: tuple[JaasEntry, ...]
    source: str  # for messages: the key, or the file's section
    key: str | None = None  # the listener's sasl.jaas.config key it was read from; None: the JAAS file


def jaas_file(config: Any) -> JaasFile:
    """The broker's static JAAS file (none: the property is not set)."""
    return config.jaas_file or NO_FILE


def server_context(config: Any, listener: str, mechanism: str) -> JaasContext:
    """The JAAS entries of ``mechanism`` on ``listener``; ``ConfigError`` with Kafka's message if there are none."""
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    if key in config.listener_overrides:
        try:
            entries = (key_entry(key, config.listener_overrides[key]),)
        except JaasSyntaxError as exc:
            raise ConfigError(str(exc)) from None
        _check_allowed(entries, jaas_file(config), key)
        return JaasContext(entries, key, key)
    file = jaas_file(config)
    sections = file.sections()
    listener_name = f"{listener.lower()}.{SERVER}"
    name = listener_name if listener_name in sections else SERVER
    if name not in sections:
        setting = "not set" if file.setting is None else file.setting
        raise ConfigError(f"Could not find a '{SERVER}' or '{listener_name}' entry in the JAAS configuration. "
                          f"System property '{LOGIN_CONFIG}' is {setting}")  # fmt: skip
    source = f"section {name} of the JAAS file {file.path()}"
    _check_allowed(sections[name], file, source)
    for entry in sections[name]:
        if entry.module not in KAFKA_MODULES:
            raise ConfigError(f"{source}: login module {entry.module} cannot be used (no Java class is loaded "
                              f"here); the modules served are {', '.join(KAFKA_MODULES)}")  # fmt: skip
    return JaasContext(tuple(sections[name]), source)


def _check_allowed(entries: list[JaasEntry], file: JaasFile, source: str) -> None:
    for entry in entries:
        if entry.module.strip() in file.disallowed:
            raise ConfigError(f"{source}: {entry.module} is not allowed. Update System property "
                              f"'org.apache.kafka.disallowed.login.modules' to allow {entry.module}")  # fmt: skip


def module_options(context: JaasContext, module: str) -> dict[str, str]:
    """The options of the context's entries of ``module``, the first entry's value winning (Kafka's
    ``JaasContext.configEntryOption``)."""
    options: dict[str, str] = {}
    for entry in context.entries:
        if entry.module == module:
            options = {**entry.options, **options}
    return options
