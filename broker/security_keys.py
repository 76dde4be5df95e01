"""Kafka's security keys of a broker, as data: the security protocols, the ``ssl.*`` keys and the
``sasl.oauthbearer.*`` keys, with their defaults and what each does here.

``config.py`` declares them as broker keys (``BROKER_KEYS``); ``listeners.py``
takes the protocols and Kafka's default ``listener.security.protocol.map``,
``ssl_config.py`` and ``oauth_config.py`` read the keys (also per listener,
``listener.name.<l>.<key>``), and ``SSL_PASSWORD_KEYS`` are Kafka's PASSWORD
type: DescribeConfigs never shows their values.
"""

from __future__ import annotations

from typing import Any, Callable

from .config_values import INT, LONG

# Kafka's default listener.security.protocol.map: each security protocol names a listener of its own kind
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
KAFKA_PROTOCOL_MAP = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)

SSL_KEYS = {  # Kafka's ssl.* keys of SSL/SASL_SSL listeners (``ssl_config.py``): default, what it does here
    "ssl.keystore.type": ("JKS", "PKCS12, PEM, or JKS (a PKCS12 file; Java's old JKS format is refused)"),
    "ssl.keystore.location": ("", "the broker's key pair and certificate chain"),
    "ssl.keystore.password": ("", "password of a PKCS12 keystore"),
    "ssl.key.password": ("", "password of the private key (an encrypted PEM key)"),
    "ssl.keystore.certificate.chain": ("", "PEM certificate chain, with ssl.keystore.key and type PEM"),
    "ssl.keystore.key": ("", "PEM private key, with ssl.keystore.certificate.chain and type PEM"),
    "ssl.truststore.type": ("JKS", "PKCS12, PEM, or JKS (a PKCS12 file)"),
    "ssl.truststore.location": ("", "CA certificates that client certificates are checked against"),
    "ssl.truststore.password": ("", "password of a PKCS12 truststore"),
    "ssl.truststore.certificates": ("", "PEM CA certificates, with type PEM"),
    "ssl.client.auth": ("none", "none, requested or required: client certificates"),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", "TLS versions served"),
    "ssl.protocol": ("TLSv1.3", "accepted; ssl.enabled.protocols decides"),
    "ssl.cipher.suites": ("", "TLS 1.2 cipher suites, IANA or OpenSSL names (empty: OpenSSL's defaults)"),
    "ssl.endpoint.identification.algorithm": ("https", "accepted; a client-side check"),
    "ssl.principal.mapping.rules": ("DEFAULT", "principal names of client certificates (ssl_principal.py)"),
    "ssl.keymanager.algorithm": ("SunX509", "accepted; Java-only"),
    "ssl.trustmanager.algorithm": ("PKIX", "accepted; Java-only"),
    "ssl.secure.random.implementation": ("", "accepted; Java-only"),
    "ssl.provider": ("", "accepted; Java-only"),
    "ssl.engine.factory.class": ("", "must stay empty"),
}
SSL_PASSWORD_KEYS = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password",
                               "ssl.keystore.key", "ssl.keystore.certificate.chain",
                               "ssl.truststore.certificates"})  # fmt: skip  (Kafka's PASSWORD type)

# Kafka's sasl.oauthbearer.* keys of a broker (BrokerSecurityConfigs): parser, default, meaning. A listener whose
# OAUTHBEARER server callback handler is OAuthBearerValidatorCallbackHandler reads them (``oauth_config.py``), also
# per listener as listener.name.<l>.sasl.oauthbearer.* or listener.name.<l>.oauthbearer.sasl.oauthbearer.*.
OAUTHBEARER_KEYS: dict[str, tuple[Callable[[str], Any], Any, str]] = {
    "sasl.oauthbearer.jwks.endpoint.url": (str, "", "JWKS (signing keys of tokens): an https:, http: or file: URL"),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": (LONG, 3_600_000, "how often a JWKS endpoint is fetched again"),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": (LONG, 100, "first wait between JWKS fetch attempts"),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": (LONG, 10_000, "how long failed JWKS fetches are retried"),
    "sasl.oauthbearer.clock.skew.seconds": (INT, 30, "leeway of exp, nbf when tokens are checked"),
    "sasl.oauthbearer.expected.audience": (str, "", "comma-separated: one must be in a token's aud claim"),
    "sasl.oauthbearer.expected.issuer": (str, "", "a token's iss claim must be this"),
    "sasl.oauthbearer.sub.claim.name": (str, "sub", "the claim naming the principal"),
    "sasl.oauthbearer.scope.claim.name": (str, "scope", "the claim holding the scopes"),
    "sasl.oauthbearer.token.endpoint.url": (str, "", "accepted; the broker's own login (inter-broker), not made"),
}
