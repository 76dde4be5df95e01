"""A throwaway certificate authority for the TLS tests: a CA, a broker certificate and a client certificate.

``make_pki(directory)`` writes, with ``cryptography``:

* ``ca.pem``: the CA certificate (clients trust it; the broker checks client
  certificates against it), ``ca.key`` its key (``issue_broker_pair`` signs
  rotated broker keystores with it); ``other-ca.pem``: a CA that signed nothing here;
* ``broker-pair.pem`` (key, then certificate chain), ``broker.key`` /
  ``broker.pem`` apart, ``broker-encrypted.pem`` (key encrypted with
  ``KEY_PASSWORD``), ``broker.p12`` (PKCS12, ``STORE_PASSWORD``), for
  ``CN=localhost`` with ``localhost`` and ``127.0.0.1`` as subject names;
* ``truststore.p12``: the CA certificate alone, PKCS12 with ``STORE_PASSWORD``;
* ``client.key`` / ``client.pem`` / ``client.p12``: a client certificate,
  ``CN=client-1,OU=tests,O=minibroker``, signed by the CA.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

KEY_PASSWORD = "key-secret"
STORE_PASSWORD = "store-secret"
CLIENT_PRINCIPAL = "User:CN=client-1,OU=tests,O=minibroker"


@attrs.frozen
class Pki:
    directory: Path

    def __getattr__(self, name: str) -> str:  # pki.ca_pem -> ".../ca.pem"
        stem, _, ext = name.rpartition("_")
        return str(self.directory / f"{stem.replace('_', '-')}.{ext}")


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in parts.items()])  # ASN.1 order: most general first


def _certificate(subject: x509.Name, key, issuer: x509.Name, signer, *, ca: bool = False,
                 names: list | None = None) -> x509.Certificate:  # fmt: skip
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
               .not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))  # fmt: skip
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key, password: str | None = None) -> bytes:
    crypt = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, crypt)


def _p12(name: bytes, key, cert, cas: list) -> bytes:
    crypt = serialization.BestAvailableEncryption(STORE_PASSWORD.encode())
    return pkcs12.serialize_key_and_certificates(name, key, cert, cas or None, crypt)


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, other_key, broker_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(4))
    ca_name = _name(CN="minibroker test CA")
    ca = _certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    other = _certificate(_name(CN="other CA"), other_key, _name(CN="other CA"), other_key, ca=True)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    broker = _certificate(_name(CN="localhost"), broker_key, ca_name, ca_key, names=names)
    client = _certificate(_name(O="minibroker", OU="tests", CN="client-1"), client_key, ca_name, ca_key)
    files = {
        "ca.pem": _pem(ca), "ca.key": _key_pem(ca_key), "other-ca.pem": _pem(other),
        "broker.key": _key_pem(broker_key), "broker.pem": _pem(broker) + _pem(ca),
        "broker-pair.pem": _key_pem(broker_key) + _pem(broker) + _pem(ca),
        "broker-encrypted.pem": _key_pem(broker_key, KEY_PASSWORD) + _pem(broker) + _pem(ca),
        "broker.p12": _p12(b"broker", broker_key, broker, [ca]),
        "truststore.p12": pkcs12.serialize_key_and_certificates(
            None, None, None, [ca], serialization.BestAvailableEncryption(STORE_PASSWORD.encode())),
        "client.key": _key_pem(client_key), "client.pem": _pem(client), "client.p12": _p12(b"client", client_key,
                                                                                            client, [ca]),
    }  # fmt: skip
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return Pki(directory)


def issue_broker_pair(pki: Pki, path: Path, common_name: str = "localhost") -> Path:
    """A new key pair for the broker, signed by ``pki``'s CA, with the subject names of ``make_pki``'s
    (unless ``common_name`` differs), as a PEM pair (key, certificate, CA) at ``path``: a rotated keystore."""
    ca = x509.load_pem_x509_certificate(Path(pki.ca_pem).read_bytes())
    ca_key = serialization.load_pem_private_key(Path(pki.ca_key).read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = _certificate(_name(CN=common_name), key, ca.subject, ca_key, names=names)
    path.write_bytes(_key_pem(key) + _pem(cert) + _pem(ca))
    return path
