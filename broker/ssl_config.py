"""An SSL or SASL_SSL listener's TLS settings, checked at startup, as Kafka's ``ssl.*`` keys say.

Each ``ssl.*`` key may be set for one listener as
``listener.name.<listener>.ssl.<key>`` (that wins) or for all of them as
``ssl.<key>``, as in Kafka. ``ssl_context`` turns them into the listener's
server ``SSLContext``:

* the key pair from the keystore and, for client certificates, the CAs of
  the truststore (``keystores.py``);
* ``ssl.client.auth``: ``none`` (the default), ``requested`` (a certificate
  is asked for and checked if sent) or ``required`` (a client without one
  fails the handshake); the last two need a truststore;
* ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) bounds the TLS
  versions: the oldest and newest named are the minimum and maximum;
* ``ssl.cipher.suites``: Java's (IANA) names such as
  ``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``, or OpenSSL's; every name must
  be a suite OpenSSL offers. TLS 1.3's own suites are always enabled
  (Python's ``ssl`` cannot narrow them), so naming some of them is accepted.

Keys that only tune Java's implementation (``ssl.keymanager.algorithm``,
``ssl.provider`` ...) are accepted and have no effect;
``ssl.engine.factory.class`` cannot be honoured and stops the start.
``certificate_names`` gives the subject and alternative names of the
certificate a context serves, which a keystore reload (a dynamic broker
config) must keep, as in Kafka. A client's principal is ``User:`` and the
name ``ssl.principal.mapping.rules`` (``ssl_principal.py``) give the RFC 2253
subject of its certificate (by default that subject), or ``User:ANONYMOUS``
without one.
"""

from __future__ import annotations

import re
import ssl
from typing import Any

from .config import ConfigError
from .keystores import load_keystore, load_truststore
from .ssl_principal import DEFAULT_RULES, InvalidRule, Rule, map_name, parse_rules

_VERSIONS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
             "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}  # fmt: skip
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
                 "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256")  # fmt: skip
_IANA = re.compile(r"TLS_(?:(ECDHE_ECDSA|ECDHE_RSA|DHE_RSA|RSA)_)?WITH_(AES_128|AES_256|CHACHA20)_"
                   r"(GCM|CBC|POLY1305)_(SHA|SHA256|SHA384)")  # fmt: skip


def ssl_context(config: Any, listener: str) -> ssl.SSLContext:
    """The server context of an SSL/SASL_SSL ``listener``; ``ConfigError`` names the key at fault."""
    prefix = f"listener.name.{listener.lower()}."
    overrides = config.listener_overrides

    def setting(key: str) -> str:
        return str(overrides.get(prefix + key, getattr(config, _attr(key)))).strip()

    def named(key: str) -> str:  # the key as it was set, for error messages
        return prefix + key if prefix + key in overrides else key

    if setting("ssl.engine.factory.class"):
        raise ConfigError(f"{named('ssl.engine.factory.class')}: a Java SSL engine factory cannot be used here")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.options |= ssl.OP_NO_RENEGOTIATION  # as Kafka's broker: TLS 1.2 renegotiation is refused
    _set_versions(context, setting("ssl.enabled.protocols"), named("ssl.enabled.protocols"))
    if setting("ssl.cipher.suites"):
        _set_ciphers(context, setting("ssl.cipher.suites"), named("ssl.cipher.suites"))
    context.keystore_pem = load_keystore(context, setting, named)  # type: ignore[attr-defined]  (for reloads)
    trusted = load_truststore(context, setting, named)
    mode = setting("ssl.client.auth").lower()
    if mode not in _CLIENT_AUTH:
        raise ConfigError(f"{named('ssl.client.auth')}: expected none, requested or required, got {mode!r}")
    if mode != "none" and not trusted:
        raise ConfigError(f"{named('ssl.client.auth')}={mode} needs a truststore to check client certificates "
                          "(ssl.truststore.location or ssl.truststore.certificates)")  # fmt: skip
    context.verify_mode = _CLIENT_AUTH[mode]
    try:
        context.principal_rules = parse_rules(setting("ssl.principal.mapping.rules"))  # type: ignore[attr-defined]
    except InvalidRule as exc:
        raise ConfigError(f"{named('ssl.principal.mapping.rules')}: {exc}") from None
    return context


def certificate_names(context: ssl.SSLContext) -> tuple[str, frozenset[str]]:
    """The RFC 4514 subject and the subject alternative names of the certificate ``context`` serves."""
    from cryptography import x509

    certificate = x509.load_pem_x509_certificates(context.keystore_pem.encode())[0]  # type: ignore[attr-defined]
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return certificate.subject.rfc4514_string(), frozenset()
    return certificate.subject.rfc4514_string(), frozenset(str(n.value) for n in names)


def _attr(key: str) -> str:
    return key.replace(".", "_")


def _set_versions(context: ssl.SSLContext, text: str, key: str) -> None:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in _VERSIONS]
    if not names or unknown:
        raise ConfigError(f"{key}: expected TLS versions from {', '.join(_VERSIONS)}, got {text!r}")
    versions = sorted(_VERSIONS[n] for n in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


def _set_ciphers(context: ssl.SSLContext, text: str, key: str) -> None:
    names = [n.strip() for n in text.split(",") if n.strip()]
    wanted = [openssl_cipher_name(n) for n in names if n not in _TLS13_SUITES]
    if not wanted:  # only TLS 1.3 suites: all of them stay on
        return
    try:
        context.set_ciphers(":".join(wanted))
    except ssl.SSLError:
        raise ConfigError(f"{key}: none of {text!r} is a cipher suite OpenSSL offers") from None
    offered = {c["name"] for c in context.get_ciphers()}
    missing = [n for n, w in zip([n for n in names if n not in _TLS13_SUITES], wanted) if w not in offered]
    if missing:
        raise ConfigError(f"{key}: {', '.join(missing)} not offered by this machine's OpenSSL")


def openssl_cipher_name(name: str) -> str:
    """OpenSSL's name of a TLS 1.2 suite given by its IANA (Java) name; other names are returned as they are."""
    match = _IANA.fullmatch(name)
    if match is None:
        return name
    exchange, cipher, mode, mac = match.groups()
    parts = [exchange.replace("_", "-")] if exchange and exchange != "RSA" else []
    parts.append(cipher.replace("_", ""))
    if mode == "GCM":
        parts += ["GCM", mac]
    elif mode == "POLY1305":
        parts.append("POLY1305")
    else:
        parts.append(mac)
    return "-".join(parts)


def peer_principal(certificate: dict | None, rules: tuple[Rule, ...] = DEFAULT_RULES) -> str:
    """Kafka's principal of an SSL client: ``User:`` + the name ``ssl.principal.mapping.rules`` give its
    certificate's RFC 2253 subject, or ANONYMOUS without a certificate; ``NoMatchingRule`` if none applies."""
    if not certificate or not certificate.get("subject"):
        return "User:ANONYMOUS"
    return "User:" + map_name(rules, _rfc2253(certificate))


def _rfc2253(certificate: dict) -> str:
    attributes = [pair for rdn in certificate["subject"] for pair in rdn]
    short = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C",
             "localityName": "L", "stateOrProvinceName": "ST", "domainComponent": "DC",
             "streetAddress": "STREET", "userId": "UID"}  # fmt: skip
    return ",".join(f"{short.get(k, k)}={_escape(v)}" for k, v in reversed(attributes))


def _escape(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;=])', r"\\\1", value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    return escaped[:-1] + "\\ " if escaped.endswith(" ") and len(escaped) > 1 else escaped
