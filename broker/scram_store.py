"""The SCRAM credentials of every user, kept in the first log dir, and ``serve --add-scram``.

Kafka keeps them in its metadata log (``UserScramCredentialRecord``: user,
mechanism, salt, stored key, server key, iterations). Here they live in
``<first log dir>/__scram_credentials.json``, the same fields with bytes in
base64, never a password. The file is rewritten whole through a temporary
file, fsynced and renamed (``storage.topic_store.atomic_write``) on every
change (AlterUserScramCredentials: one change at a time, on a worker thread,
before logins see it: ``store_saves.py``), so a crash leaves the old or the
new set; it is read at start, and a
file that cannot be read stops the start (``CredentialFileError``) rather
than leave every user locked out unnoticed.

``--add-scram`` takes Kafka's ``kafka-storage format --add-scram`` argument:
``SCRAM-SHA-256=[name=alice,password=alice-secret]``, optionally with
``iterations=8192``, or ``salt=<base64>`` with ``saltedpassword=<base64>``
instead of ``password``; values may be double-quoted. Like a format, which
runs once on a new log dir, it only adds: a user that already has a
credential for that mechanism (from an earlier start or from
AlterUserScramCredentials) keeps it. The users are added as the broker
starts, once the log dirs are validated and locked (``Broker``), so a start
refused there (a dir that is a file, one another broker holds) reads and
writes no credentials.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
from pathlib import Path
from typing import Callable

import attrs

from storage.topic_store import atomic_write

from .config import ConfigError
from .scram import MECHANISMS, ScramCredential, ScramMechanism, credential_from_salted
from .store_saves import StoreSaves

log = logging.getLogger(__name__)
CREDENTIALS_FILE = "__scram_credentials.json"
_FIELDS = ("salt", "stored_key", "server_key")


class CredentialFileError(ValueError):
    """The credentials file exists but cannot be read, or ``--add-scram``'s cannot be written; the message
    names it."""


@attrs.define
class ScramStore:
    path: Path | None  # None: kept in memory only
    credentials: dict[tuple[str, str], ScramCredential] = attrs.Factory(dict)  # (user, mechanism name)
    on_metadata_change: Callable[[], None] = attrs.field(default=lambda: None, eq=False, repr=False)  # after a save
    saves: StoreSaves = attrs.field(factory=StoreSaves, eq=False, repr=False)  # one change at a time, off the loop

    @classmethod
    def load(cls, log_dir: str | Path) -> "ScramStore":
        store = cls(Path(log_dir) / CREDENTIALS_FILE)
        try:
            raw = json.loads(store.path.read_text(encoding="utf-8"))  # type: ignore[union-attr]
        except FileNotFoundError:
            return store
        except (OSError, ValueError) as exc:
            raise CredentialFileError(f"{store.path}: cannot read the SCRAM credentials ({exc})") from None
        try:
            for user, by_mechanism in raw["credentials"].items():
                for name, fields in by_mechanism.items():
                    if name not in MECHANISMS:
                        raise ValueError(f"unknown mechanism {name!r}")
                    keys = [base64.b64decode(fields[f], validate=True) for f in _FIELDS]
                    store.credentials[(user, name)] = ScramCredential(*keys, int(fields["iterations"]))
        except (KeyError, TypeError, AttributeError, ValueError, binascii.Error) as exc:
            raise CredentialFileError(f"{store.path}: malformed SCRAM credentials ({exc!r})") from None
        return store

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def users(self) -> list[str]:
        return sorted({user for user, _ in self.credentials})

    def infos(self, user: str) -> list[tuple[int, int]]:
        """The user's credentials as (mechanism type, iterations), by type."""
        return sorted((MECHANISMS[m].type, c.iterations) for (u, m), c in self.credentials.items() if u == user)

    def save(self) -> None:
        """Save the credentials in memory on the calling thread (``--add-scram``, before the broker serves)."""
        self._write(self.credentials)

    async def replace(self, credentials: dict[tuple[str, str], ScramCredential]) -> None:
        """Make ``credentials`` the set: saved on a worker thread, then made (``NotStored``: the disk refused
        it, nothing changes). The caller has the store's turn (``async with store.saves``) from its checks."""
        await self.saves.save_or_refuse("SCRAM credentials", self.path, self._write, credentials)
        self.credentials = credentials

    def _write(self, credentials: dict[tuple[str, str], ScramCredential]) -> None:
        """Save ``credentials`` (any thread: it fsyncs), and count the change in the metadata quorum."""
        raw: dict[str, dict] = {}
        for (user, name), cred in sorted(credentials.items()):
            fields = {f: base64.b64encode(getattr(cred, f)).decode() for f in _FIELDS}
            raw.setdefault(user, {})[name] = {**fields, "iterations": cred.iterations}
        if self.path is not None:
            atomic_write(self.path, json.dumps({"version": 1, "credentials": raw}, indent=1, sort_keys=True))
            self.on_metadata_change()


@attrs.frozen
class AddScram:
    """One ``--add-scram`` argument, parsed."""

    mechanism: ScramMechanism
    name: str
    iterations: int
    password: str | None = None
    salt: bytes | None = None
    salted_password: bytes | None = None


def parse_add_scram(argument: str) -> AddScram:
    """Read ``MECHANISM=[key=value,...]`` as Kafka's ``ScramParser`` does; errors are Kafka's texts."""
    text = argument.strip()
    mechanism_name, sep, config = text.partition("=")
    if not sep:
        raise ConfigError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = MECHANISMS.get(mechanism_name)
    if mechanism is None:
        raise ConfigError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise ConfigError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ConfigError("Expected configuration string to end with ]")
    parts = dict(_component(item) for item in config[1:-1].split(","))
    return _add_scram(mechanism, parts)


def _component(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise ConfigError(f"No equals sign found in SCRAM component: {item}")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return key, value


def _add_scram(mechanism: ScramMechanism, parts: dict[str, str]) -> AddScram:
    name = parts.pop("name", None)
    if name is None:
        raise ConfigError("You must supply 'name' to add-scram")
    salt = _b64(parts.pop("salt"), "salt") if "salt" in parts else None
    iterations = parts.pop("iterations", "4096")
    if not iterations.lstrip("-").isdigit():
        raise ConfigError(f"Failed to parse iterations count: {iterations}")
    password, salted = parts.pop("password", None), parts.pop("saltedpassword", None)
    if password is None and salted is None:
        raise ConfigError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if password is None and salt is None:
        raise ConfigError("You must supply 'salt' with 'saltedpassword' to add-scram")
    if parts:
        raise ConfigError(f"Unknown SCRAM configurations: {', '.join(sorted(parts))}")
    count = int(iterations)
    if count < mechanism.min_iterations:
        raise ConfigError(f"The 'iterations' value must be >= {mechanism.min_iterations} for add-scram using "
                          f"{mechanism.name}")  # fmt: skip
    if count > mechanism.max_iterations:
        raise ConfigError(f"The 'iterations' value must be <= {mechanism.max_iterations} for add-scram using "
                          f"{mechanism.name}")  # fmt: skip
    if password == "":
        raise ConfigError(f"add-scram: the password of {name} is empty")
    salted_password = None if password is not None else _b64(salted or "", "saltedPassword")
    return AddScram(mechanism, name, count, password, salt, salted_password)


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"Failed to decode given {what}: {text}") from None


def credential_of(entry: AddScram) -> ScramCredential:
    salt = entry.salt if entry.salt is not None else secrets.token_bytes(24)
    salted = entry.salted_password
    if entry.password is not None:
        salted = entry.mechanism.salted_password(entry.password, salt, entry.iterations)
    try:
        return credential_from_salted(entry.mechanism, salt, salted or b"", entry.iterations)
    except ValueError:
        raise ConfigError(f"add-scram: the salted password of {entry.name} is empty") from None


def add_scram(log_dir: str | Path, entries: list[AddScram]) -> ScramStore:
    """Add each entry whose user has no credential for its mechanism yet; save if anything was added."""
    store = ScramStore.load(log_dir)
    added = False
    for entry in entries:
        if store.get(entry.name, entry.mechanism.name) is not None:
            log.info("--add-scram: %s already has a %s credential; keeping it", entry.name, entry.mechanism.name)
            continue
        store.credentials[(entry.name, entry.mechanism.name)] = credential_of(entry)
        added = True
        log.info("--add-scram: added the %s credential of %s", entry.mechanism.name, entry.name)
    if added:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        try:
            store.save()
        except OSError as exc:
            raise CredentialFileError(f"{store.path}: cannot write the SCRAM credentials ({exc})") from None
    return store
