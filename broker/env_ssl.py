"""The apache/kafka image's SSL helper variables: key and trust stores named by file, passwords read from files.

A compose file for the image mounts a secrets directory (``/etc/kafka/secrets``)
and names files in it instead of giving paths and passwords. The image's
``configure`` script turns them into Kafka's keys when
``KAFKA_ADVERTISED_LISTENERS`` has an ``SSL://`` endpoint (any listener whose
name ends in ``SSL``: ``SSL``, ``SASL_SSL`` ...), and so does
``ssl_helper_keys``:

* ``KAFKA_SSL_KEYSTORE_FILENAME`` -> ``ssl.keystore.location`` (the file in
  the secrets directory);
* ``KAFKA_SSL_KEY_CREDENTIALS`` -> ``ssl.key.password`` and
  ``KAFKA_SSL_KEYSTORE_CREDENTIALS`` -> ``ssl.keystore.password``: the text of
  the named file, without its trailing newlines (the shell's ``$(cat file)``);
* only when ``KAFKA_SSL_CLIENT_AUTH`` contains ``required`` or ``requested``:
  ``KAFKA_SSL_TRUSTSTORE_FILENAME`` -> ``ssl.truststore.location`` and
  ``KAFKA_SSL_TRUSTSTORE_CREDENTIALS`` -> ``ssl.truststore.password``.

Each variable and file is required in that order; the first one missing (or
empty) stops the start as the script stops it, with its message
(``KAFKA_SSL_KEYSTORE_FILENAME environment variable not set``,
``/etc/kafka/secrets/kafka01.keystore.jks file does not exist``) and exit
status 1 (``ImageScriptError``). The keys made override the same keys set
directly (``KAFKA_SSL_KEYSTORE_LOCATION`` ...), as the script's exports do.
``KAFKA_SSL_CLIENT_AUTH`` and ``KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM``
are ordinary keys (``ssl.client.auth``; ``ssl.endpoint.identification.algorithm``,
which the examples set empty, is accepted). The helper variables themselves
name no Kafka key: the image passes them on as ``ssl.keystore.filename`` ...,
which Kafka ignores as unknown; here they are left out (``HELPERS``).
``serve --secrets-dir`` replaces ``/etc/kafka/secrets`` (tests, or secrets
mounted elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .config import ConfigError

SECRETS_DIR = "/etc/kafka/secrets"
HELPERS = ("KAFKA_SSL_KEYSTORE_FILENAME", "KAFKA_SSL_KEY_CREDENTIALS", "KAFKA_SSL_KEYSTORE_CREDENTIALS",
           "KAFKA_SSL_TRUSTSTORE_FILENAME", "KAFKA_SSL_TRUSTSTORE_CREDENTIALS")  # fmt: skip


class ImageScriptError(ConfigError):
    """A variable or file the image's ``configure`` script requires is missing: its message, exit status 1."""

    exit_status = 1


def ssl_helper_keys(environ: Mapping[str, str], secrets_dir: str = SECRETS_DIR) -> dict[str, str]:
    """The ``ssl.*`` keys the helper variables give, or none without an ``SSL://`` advertised listener."""
    if "SSL://" not in environ.get("KAFKA_ADVERTISED_LISTENERS", ""):
        return {}
    keys = {"ssl.keystore.location": _secret_file(environ, "KAFKA_SSL_KEYSTORE_FILENAME", secrets_dir),
            "ssl.key.password": _password(environ, "KAFKA_SSL_KEY_CREDENTIALS", secrets_dir),
            "ssl.keystore.password": _password(environ, "KAFKA_SSL_KEYSTORE_CREDENTIALS", secrets_dir)}  # fmt: skip
    client_auth = environ.get("KAFKA_SSL_CLIENT_AUTH", "")
    if "required" in client_auth or "requested" in client_auth:
        keys["ssl.truststore.location"] = _secret_file(environ, "KAFKA_SSL_TRUSTSTORE_FILENAME", secrets_dir)
        keys["ssl.truststore.password"] = _password(environ, "KAFKA_SSL_TRUSTSTORE_CREDENTIALS", secrets_dir)
    return keys


def _secret_file(environ: Mapping[str, str], variable: str, secrets_dir: str) -> str:
    """The path of the file ``variable`` names in the secrets directory, which must exist."""
    if not environ.get(variable):
        raise ImageScriptError(f"{variable} environment variable not set")
    path = f"{secrets_dir.rstrip('/')}/{environ[variable]}"
    if not os.path.exists(path):
        raise ImageScriptError(f"{path} file does not exist")
    return path


def _password(environ: Mapping[str, str], variable: str, secrets_dir: str) -> str:
    path = _secret_file(environ, variable, secrets_dir)
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\n")
    except OSError as exc:
        raise ImageScriptError(f"cat: {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ImageScriptError(f"{path}: not a text file") from None
