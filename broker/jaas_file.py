"""The static JAAS file of a Kafka broker: ``-Djava.security.auth.login.config=PATH`` in ``KAFKA_OPTS``.

``kafka-server-start.sh`` hands ``KAFKA_OPTS`` to the JVM unquoted, so the
shell splits it at blanks and keeps any quote characters in the words
(``system_properties``); each ``-Dname=value`` word is a Java system
property, the last of a name winning. ``minibroker serve`` reads them from
its environment as the script would, with or without ``--kafka-env``
(``JaasFile.from_kafka_opts``). Two are used:

* ``java.security.auth.login.config``: the JAAS file. ``=PATH`` or ``==PATH``
  (Java's "this file only"; a JVM has no other login configuration by
  default, so both read this one file). ``${name}`` in it is a system
  property (``${user.home}``); ``file:`` URLs are read as files, other URLs
  are refused. The file is read once, when a SASL listener first needs it
  (``sections``), as Java reads it when Kafka first asks: a file no listener
  needs is never read. A missing file stops the start with Java's
  "PATH (No such file or directory)"; one that cannot be read, or does not
  parse (``jaas.parse_file``), with Java's words and the file's name.
* ``org.apache.kafka.disallowed.login.modules``: login modules Kafka refuses
  (``com.sun.security.auth.module.JndiLoginModule`` unless set).

Option values in the file may hold ``${name}`` too: a ``-D`` property, or one
of the JVM's own (``user.home``, ``user.name``, ``user.dir``,
``java.io.tmpdir``, ``file.separator``, ``path.separator``,
``line.separator``); ``${/}`` is ``/``. An unknown name, or a value expanded
to nothing, stops the start, as Java does.
"""

from __future__ import annotations

import getpass
import os
import re
import urllib.parse
from pathlib import Path

import attrs

from .config import ConfigError
from .jaas import JaasEntry, JaasSyntaxError, parse_file

LOGIN_CONFIG = "java.security.auth.login.config"
DISALLOWED = "org.apache.kafka.disallowed.login.modules"
DISALLOWED_DEFAULT = "com.sun.security.auth.module.JndiLoginModule"
_PROPERTY = re.compile(r"\$\{(?!\{)([^}]*)\}")
_URL = re.compile(r"(?i)(file|https?|ftp|jar|jrt):")


def system_properties(kafka_opts: str) -> dict[str, str]:
    """The ``-D`` system properties a JVM started with ``$KAFKA_OPTS`` (unquoted, split at blanks) has."""
    found = {}
    for word in re.split(r"[ \t\n]+", kafka_opts):
        if word.startswith("-D") and len(word) > 2:
            name, _, value = word[2:].partition("=")
            found[name] = value
    return found


def _jvm_property(name: str) -> str | None:
    """What a JVM gives for its own system properties (those a JAAS file may name)."""
    defaults = {"user.home": os.path.expanduser("~"), "user.dir": os.getcwd(), "java.io.tmpdir": "/tmp",
                "file.separator": "/", "path.separator": ":", "line.separator": "\n"}  # fmt: skip
    if name == "user.name":
        return getpass.getuser()
    return defaults.get(name)


@attrs.define
class JaasFile:
    setting: str | None = None  # java.security.auth.login.config as given, None if not set
    properties: dict[str, str] = attrs.field(factory=dict)  # every -D property of KAFKA_OPTS
    _sections: dict[str, list[JaasEntry]] | None = None

    @classmethod
    def from_kafka_opts(cls, kafka_opts: str | None) -> "JaasFile":
        found = system_properties(kafka_opts or "")
        return cls(found.get(LOGIN_CONFIG), found)

    @property
    def disallowed(self) -> frozenset[str]:
        """The login modules Kafka refuses to load."""
        return frozenset(m.strip() for m in self.properties.get(DISALLOWED, DISALLOWED_DEFAULT).split(","))

    def expand(self, value: str) -> str:
        """``value`` with each ``${name}`` replaced by that system property; ``ValueError`` for an unknown one."""

        def replace(match: re.Match) -> str:
            name = match.group(1)
            found = "/" if name == "/" else self.properties.get(name, _jvm_property(name))
            if found is None:
                raise ValueError(f"unable to expand property {name}")
            return found

        return _PROPERTY.sub(replace, value)

    def sections(self) -> dict[str, list[JaasEntry]]:
        """The file's sections by name (none if the property is not set), read and parsed on first use."""
        if self.setting is None:
            return {}
        if self._sections is None:
            self._sections = self._read()
        return self._sections

    def path(self) -> str:
        """The file the property names."""
        setting = self.setting[1:] if self.setting and self.setting.startswith("=") else self.setting or ""
        try:
            path = self.expand(setting)
        except ValueError as exc:
            raise ConfigError(f"{LOGIN_CONFIG}={self.setting}: {exc}") from None
        scheme = _URL.match(path)
        if scheme and scheme.group(1).lower() != "file":
            raise ConfigError(f"{LOGIN_CONFIG}={self.setting}: only a file or a file: URL can be read here")
        return urllib.parse.unquote(urllib.parse.urlsplit(path).path) if scheme else path

    def _read(self) -> dict[str, list[JaasEntry]]:
        path = self.path()
        if not os.path.exists(path):
            raise ConfigError(f"{LOGIN_CONFIG}={self.setting}: {path} (No such file or directory)")
        try:
            text = Path(path).read_bytes().decode("utf-8", "replace")
        except OSError as exc:
            raise ConfigError(f"{LOGIN_CONFIG}={self.setting}: Configuration Error: No such file or directory "
                              f"({path}: {exc.strerror or exc})") from None  # fmt: skip
        try:
            return parse_file(text, self._expand_option)
        except JaasSyntaxError as exc:
            raise ConfigError(f"JAAS file {path}: {exc}") from None

    def _expand_option(self, value: str, line: int) -> str:
        if not value:
            return value
        try:
            expanded = self.expand(value)
        except ValueError as exc:
            raise JaasSyntaxError(f"Configuration Error: Line {line}: {exc}") from None
        if not expanded:
            raise JaasSyntaxError(f"Configuration Error: Line {line}: system property [{value}] expanded to "
                                  f"empty value")  # fmt: skip
        return expanded
