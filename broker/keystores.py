"""Key and trust material for SSL listeners, from Kafka's keystore and truststore settings.

Kafka reads its key pair from ``ssl.keystore.*`` and the certificates it
trusts (to verify client certificates) from ``ssl.truststore.*``. Both come in
the types Kafka knows:

* ``PEM`` (KIP-651): ``ssl.keystore.location`` is a PEM file holding the
  private key (encrypted with ``ssl.key.password``, or not) and its
  certificate chain, or the two are given inline in
  ``ssl.keystore.key`` and ``ssl.keystore.certificate.chain``; a PEM
  truststore is a file of CA certificates or ``ssl.truststore.certificates``.
* ``PKCS12``: read with ``cryptography`` (Python's ``ssl`` cannot), the
  store's password in ``ssl.keystore.password`` / ``ssl.truststore.password``.
* ``JKS``, Kafka's default type: a file in Java's old proprietary format is
  refused with the ``keytool`` command that converts it. Since Java 9
  ``keytool`` writes PKCS12 even for a ``.jks`` name, and Java reads such a
  file as a JKS store, so do we.

Python's ``ssl`` loads key pairs only from files, so material that is not a
PEM file already (PKCS12, inline PEM) is written as PEM to a private
temporary directory, loaded, and deleted at once. Every failure is a
``ConfigError`` naming the key to fix.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

from .config import ConfigError

JKS_MAGIC = b"\xfe\xed\xfe\xed"
_PEM_TYPES = ("PEM",)
_P12_TYPES = ("PKCS12", "JKS")

Setting = Callable[[str], str]  # the effective value of an ssl.* key ("" when unset)


def load_keystore(context: ssl.SSLContext, setting: Setting, named: Setting) -> str:
    """Load the listener's key pair into ``context``; ``named`` gives a key's name as set, for errors.
    Returns the PEM it loaded (the certificate chain, first the listener's own, and the key)."""
    kind = setting("ssl.keystore.type").upper()
    location, chain, key = (setting(k) for k in ("ssl.keystore.location", "ssl.keystore.certificate.chain",
                                                 "ssl.keystore.key"))  # fmt: skip
    if kind in _PEM_TYPES and (chain or key):
        if location or not (chain and key):
            raise ConfigError(f"{named('ssl.keystore.key')}: give it together with ssl.keystore.certificate.chain, "
                              "and without ssl.keystore.location")  # fmt: skip
        return _load_pem_pair(context, chain + "\n" + key, setting("ssl.key.password"), named("ssl.keystore.key"))
    if not location:
        raise ConfigError(f"{named('ssl.keystore.location')}: an SSL listener needs a keystore")
    data = _read(named("ssl.keystore.location"), location)
    if kind in _PEM_TYPES:
        return _load_pem_pair(context, data.decode("ascii", "replace"), setting("ssl.key.password"),
                              named("ssl.keystore.location"))  # fmt: skip
    if kind in _P12_TYPES:
        _refuse_jks(named("ssl.keystore.location"), data)
        pem = _p12_key_pair(data, setting("ssl.keystore.password"), setting("ssl.key.password"), named)
        return _load_pem_pair(context, pem, "", named("ssl.keystore.location"))
    raise ConfigError(f"{named('ssl.keystore.type')}: {kind!r} is not supported (PKCS12, PEM or JKS)")


def load_truststore(context: ssl.SSLContext, setting: Setting, named: Setting) -> bool:
    """Load the certificates that client certificates are checked against; False when none are set."""
    kind = setting("ssl.truststore.type").upper()
    location, inline = setting("ssl.truststore.location"), setting("ssl.truststore.certificates")
    if inline:
        if kind not in _PEM_TYPES or location:
            raise ConfigError(f"{named('ssl.truststore.certificates')}: needs ssl.truststore.type=PEM "
                              "and no ssl.truststore.location")  # fmt: skip
        _verify_locations(context, inline, named("ssl.truststore.certificates"))
        return True
    if not location:
        return False
    data = _read(named("ssl.truststore.location"), location)
    if kind in _PEM_TYPES:
        _verify_locations(context, data.decode("ascii", "replace"), named("ssl.truststore.location"))
    elif kind in _P12_TYPES:
        _refuse_jks(named("ssl.truststore.location"), data)
        _verify_locations(context, _p12_certificates(data, setting("ssl.truststore.password"), named),
                          named("ssl.truststore.location"))  # fmt: skip
    else:
        raise ConfigError(f"{named('ssl.truststore.type')}: {kind!r} is not supported (PKCS12, PEM or JKS)")
    return True


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {location!r} ({exc.strerror or exc})") from None


def _refuse_jks(key: str, data: bytes) -> None:
    if data.startswith(JKS_MAGIC):
        raise ConfigError(f"{key}: a JKS-format store cannot be read here; convert it with "
                          "keytool -importkeystore -srckeystore <file> -destkeystore <new file> "
                          "-deststoretype PKCS12 and set the type to PKCS12")  # fmt: skip


def _load_pem_pair(context: ssl.SSLContext, pem: str, password: str, key: str) -> str:
    with tempfile.TemporaryDirectory(prefix="minibroker-ssl-") as directory:
        path = os.path.join(directory, "pair.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(pem)
        try:
            context.load_cert_chain(path, password=lambda: password)  # a callable: OpenSSL never prompts
        except (ssl.SSLError, ValueError, OSError) as exc:
            raise ConfigError(f"{key}: no usable private key and certificate chain ({_reason(exc)}; "
                              "a wrong ssl.key.password gives this too)") from None  # fmt: skip
    return pem


def _verify_locations(context: ssl.SSLContext, pem: str, key: str) -> None:
    if "-----BEGIN CERTIFICATE-----" not in pem:
        raise ConfigError(f"{key}: holds no PEM certificate")
    try:
        context.load_verify_locations(cadata=pem)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"{key}: unusable certificates ({_reason(exc)})") from None


def _reason(exc: Exception) -> str:
    return getattr(exc, "reason", None) or str(exc) or type(exc).__name__


def _load_p12(data: bytes, password: str, key: str):
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{key}: cannot open the PKCS12 store ({exc}); is the password right?") from None


def _p12_key_pair(data: bytes, store_password: str, key_password: str, named: Setting) -> str:
    """The store's key and chain as unencrypted PEM (Java's PKCS12 key password is the store's)."""
    from cryptography.hazmat.primitives import serialization as ser

    store = _load_p12(data, store_password or key_password, named("ssl.keystore.password"))
    if store.key is None or store.cert is None:
        raise ConfigError(f"{named('ssl.keystore.location')}: the PKCS12 store holds no private key entry")
    key_pem = store.key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    chain = [store.cert.certificate] + [c.certificate for c in store.additional_certs]
    return key_pem.decode() + "".join(c.public_bytes(ser.Encoding.PEM).decode() for c in chain)


def _p12_certificates(data: bytes, password: str, named: Setting) -> str:
    from cryptography.hazmat.primitives import serialization as ser

    store = _load_p12(data, password, named("ssl.truststore.password"))
    certs = ([store.cert] if store.cert is not None else []) + list(store.additional_certs)
    if not certs:
        raise ConfigError(f"{named('ssl.truststore.location')}: the PKCS12 store holds no certificate")
    return "".join(c.certificate.public_bytes(ser.Encoding.PEM).decode() for c in certs)
