"""SSL listeners' settings: keystores and truststores of each type, client auth, versions, suites, principals.

Each case builds the listener through ``served_listeners`` (as startup does)
and checks the resulting ``SSLContext``, or the ``ConfigError`` that names
the key to fix.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.listeners import served_listeners
from broker.ssl_config import openssl_cipher_name, peer_principal
from tests.tls_pki import KEY_PASSWORD, STORE_PASSWORD, make_pki

SSL_LISTENERS = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _context(tmp_path, **props) -> ssl.SSLContext:
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path), **SSL_LISTENERS, **props})
    listener = served_listeners(config)[1]
    assert listener.protocol == "SSL" and served_listeners(config)[0].tls is None
    return listener.tls


def _pem_keystore(pki) -> dict:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem}


def _certs(context: ssl.SSLContext) -> list[str]:
    return [dict(x[0] for x in c["subject"])["commonName"] for c in context.get_ca_certs()]


def test_pem_file_keystore_and_kafkas_defaults(tmp_path, pki):
    context = _context(tmp_path, **_pem_keystore(pki))
    assert context.verify_mode == ssl.CERT_NONE  # ssl.client.auth=none
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    assert _certs(context) == []


def test_inline_pem_key_and_chain_and_encrypted_pem_key(tmp_path, pki):
    with open(pki.broker_key) as key, open(pki.broker_pem) as chain:
        _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.key": key.read(),
                              "ssl.keystore.certificate.chain": chain.read()})  # fmt: skip
    _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_encrypted_pem,
                          "ssl.key.password": KEY_PASSWORD})  # fmt: skip
    with pytest.raises(ConfigError, match="^ssl.keystore.location: no usable private key.*ssl.key.password"):
        _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_encrypted_pem,
                              "ssl.key.password": "wrong"})  # fmt: skip
    with open(pki.client_key) as key, open(pki.broker_pem) as chain, pytest.raises(
            ConfigError, match="^ssl.keystore.key: no usable private key"):  # the key of another certificate
        _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.key": key.read(),
                              "ssl.keystore.certificate.chain": chain.read()})  # fmt: skip
    with pytest.raises(ConfigError, match="^ssl.keystore.location: no usable private key"):  # no prompt either
        _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_encrypted_pem})
    with pytest.raises(ConfigError, match="^ssl.keystore.key: give it together with ssl.keystore.certificate.chain"):
        _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.key": "x"})


@pytest.mark.parametrize("kind", ["PKCS12", "JKS"])  # Java reads a PKCS12 file named as a JKS store too
def test_pkcs12_keystore_and_truststore(tmp_path, pki, kind):
    context = _context(tmp_path, **{
        "ssl.keystore.type": kind, "ssl.keystore.location": pki.broker_p12, "ssl.keystore.password": STORE_PASSWORD,
        "ssl.truststore.type": kind, "ssl.truststore.location": pki.truststore_p12,
        "ssl.truststore.password": STORE_PASSWORD, "ssl.client.auth": "required"})  # fmt: skip
    assert context.verify_mode == ssl.CERT_REQUIRED and _certs(context) == ["minibroker test CA"]
    with pytest.raises(ConfigError, match="^ssl.keystore.password: cannot open the PKCS12 store"):
        _context(tmp_path, **{"ssl.keystore.type": kind, "ssl.keystore.location": pki.broker_p12,
                              "ssl.keystore.password": "wrong"})  # fmt: skip
    with pytest.raises(ConfigError, match="^ssl.keystore.location: the PKCS12 store holds no private key"):
        _context(tmp_path, **{"ssl.keystore.type": kind, "ssl.keystore.location": pki.truststore_p12,
                              "ssl.keystore.password": STORE_PASSWORD})  # fmt: skip


def test_a_java_jks_file_is_refused_with_the_conversion_command(tmp_path, pki):
    jks = tmp_path / "old.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    with pytest.raises(ConfigError, match="^ssl.keystore.location: a JKS-format store.*keytool -importkeystore"):
        _context(tmp_path, **{"ssl.keystore.location": str(jks), "ssl.keystore.password": "x"})
    with pytest.raises(ConfigError, match="^ssl.truststore.location: a JKS-format store"):
        _context(tmp_path, **_pem_keystore(pki), **{"ssl.truststore.location": str(jks)})


@pytest.mark.skipif(shutil.which("keytool") is None, reason="no JDK keytool")
def test_stores_that_keytool_writes(tmp_path, pki):
    """A keytool key pair store (PKCS12, Java's default since 9) and a keytool truststore of the CA."""
    store, trust = tmp_path / "kafka.server.keystore.jks", tmp_path / "kafka.server.truststore.jks"
    common = ["-storepass", STORE_PASSWORD, "-noprompt"]
    subprocess.run(["keytool", "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-dname", "CN=localhost",
                    "-keystore", str(store), "-keypass", STORE_PASSWORD, *common], check=True, capture_output=True)
    subprocess.run(["keytool", "-importcert", "-alias", "ca", "-file", pki.ca_pem, "-keystore", str(trust), *common],
                   check=True, capture_output=True)  # fmt: skip
    context = _context(tmp_path, **{
        "ssl.keystore.location": str(store), "ssl.keystore.password": STORE_PASSWORD,
        "ssl.key.password": STORE_PASSWORD, "ssl.truststore.location": str(trust),
        "ssl.truststore.password": STORE_PASSWORD, "ssl.client.auth": "requested"})  # fmt: skip
    assert context.verify_mode == ssl.CERT_OPTIONAL and _certs(context) == ["minibroker test CA"]


def test_pem_truststores_file_and_inline(tmp_path, pki):
    context = _context(tmp_path, **_pem_keystore(pki), **{"ssl.truststore.type": "PEM",
                                                         "ssl.truststore.location": pki.ca_pem})  # fmt: skip
    assert _certs(context) == ["minibroker test CA"]
    with open(pki.other_ca_pem) as f:
        inline = f.read()
    context = _context(tmp_path, **_pem_keystore(pki), **{"ssl.truststore.type": "PEM",
                                                         "ssl.truststore.certificates": inline})  # fmt: skip
    assert _certs(context) == ["other CA"]
    with pytest.raises(ConfigError, match="^ssl.truststore.location: holds no PEM certificate"):
        _context(tmp_path, **_pem_keystore(pki), **{"ssl.truststore.type": "PEM",
                                                   "ssl.truststore.location": pki.broker_key})  # fmt: skip
    with pytest.raises(ConfigError, match="^ssl.truststore.certificates: needs ssl.truststore.type=PEM"):
        _context(tmp_path, **_pem_keystore(pki), **{"ssl.truststore.certificates": inline})


@pytest.mark.parametrize(("props", "message"), [
    ({}, "^ssl.keystore.location: an SSL listener needs a keystore"),
    ({"ssl.keystore.location": "/nonexistent/ks.p12"}, "^ssl.keystore.location: cannot read '/nonexistent/ks.p12'"),
    ({"ssl.keystore.type": "BKS", "ssl.keystore.location": "/etc/hostname"}, "^ssl.keystore.type: 'BKS' is not"),
    ({"PEM": 1, "ssl.client.auth": "required"}, "^ssl.client.auth=required needs a truststore"),
    ({"PEM": 1, "ssl.client.auth": "always"}, "^ssl.client.auth: expected none, requested or required"),
    ({"PEM": 1, "ssl.enabled.protocols": "TLSv1.2,SSLv3"}, "^ssl.enabled.protocols: expected TLS versions"),
    ({"PEM": 1, "ssl.cipher.suites": "TLS_FOO_WITH_BAR"}, "^ssl.cipher.suites: none of 'TLS_FOO_WITH_BAR'"),
    ({"PEM": 1, "ssl.engine.factory.class": "com.example.Factory"}, "^ssl.engine.factory.class: a Java SSL engine"),
    ({"PEM": 1, "listener.name.ssl.ssl.client.auth": "required"},
     "^listener.name.ssl.ssl.client.auth=required needs a truststore"),
    ({"listener.name.ssl.ssl.keystore.location": "/nonexistent"}, "^listener.name.ssl.ssl.keystore.location: cannot"),
    ({"listener.name.ssl.ssl.keystore.passwd": "x"}, "^listener.name.ssl.ssl.keystore.passwd: unknown configuration"),
])  # fmt: skip
def test_bad_settings_stop_the_start_naming_the_key(tmp_path, pki, props, message):
    if props.pop("PEM", None):
        props.update(_pem_keystore(pki))
    with pytest.raises(ConfigError, match=message):
        _context(tmp_path, **props)


def test_listener_keys_win_over_the_broker_wide_ones(tmp_path, pki):
    context = _context(tmp_path, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent",
                                    "listener.name.ssl.ssl.keystore.location": pki.broker_pair_pem,
                                    "listener.name.ssl.ssl.enabled.protocols": "TLSv1.3"})  # fmt: skip
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_3


def test_cipher_suites_by_java_name(tmp_path, pki):
    context = _context(tmp_path, **_pem_keystore(pki), **{
        "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256"})  # fmt: skip
    tls12 = [c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 == ["ECDHE-ECDSA-AES256-GCM-SHA384"]
    _context(tmp_path, **_pem_keystore(pki), **{"ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"})  # TLS 1.3 only


@pytest.mark.parametrize(("java", "openssl"), [
    ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
    ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"),
    ("TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", "DHE-RSA-AES256-GCM-SHA384"),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"),
    ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256"),
])  # fmt: skip
def test_openssl_names_of_java_suites(java, openssl):
    assert openssl_cipher_name(java) == openssl


def test_principals_as_kafkas_default_mapping_gives_them():
    subject = ((("organizationName", "minibroker"),), (("organizationalUnitName", "tests"),),
               (("commonName", "client-1"),))  # fmt: skip
    assert peer_principal({"subject": subject}) == "User:CN=client-1,OU=tests,O=minibroker"
    assert peer_principal({"subject": ((("commonName", "a,b+c"),),)}) == "User:CN=a\\,b\\+c"
    assert peer_principal({}) == peer_principal(None) == "User:ANONYMOUS"
