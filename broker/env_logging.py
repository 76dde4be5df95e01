"""The apache/kafka image's logging variables, set on the broker's Python loggers.

The image writes two variables into its log4j configuration, and
``log_settings`` reads them the same way:

* ``KAFKA_LOG4J_ROOT_LOGLEVEL``: the root logger's level (the image's
  ``log4j.rootLogger=<level>, stdout``); ``serve --log-level``, when given,
  wins over it; without either the root level is INFO;
* ``KAFKA_LOG4J_LOGGERS``: ``name=level`` pairs separated by commas
  (``kafka.authorizer.logger=WARN,kafka.controller=INFO``), each a logger's
  level (the image's ``log4j.logger.<name>=<level>``).

A name is a Python logger's: Kafka's own where the broker logs under it
(``kafka.authorizer.logger``), else the broker's modules (``broker.connection``,
``broker.handlers.produce``, ``minibroker`` ...). A logger the broker has not
made yet is made, as log4j makes it, and is listed by DescribeConfigs of
BROKER_LOGGER. Levels are log4j's (``log_levels.py``: FATAL, ERROR, WARN,
INFO, DEBUG, TRACE, and OFF and ALL), in any case as log4j reads them. A
level that is none of them, or a pair without ``=``, stops the start naming
the variable (log4j would take DEBUG instead). ``KAFKA_TOOLS_LOG4J_LOGLEVEL`` sets the level of the
image's command-line tools: nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .config import ConfigError
from .log_levels import LOG4J_LEVELS, python_logger

ROOT_LEVEL = "KAFKA_LOG4J_ROOT_LOGLEVEL"
LOGGERS = "KAFKA_LOG4J_LOGGERS"


@attrs.frozen
class LogSettings:
    root: int | None  # the root logger's level, if a variable sets it
    loggers: tuple[tuple[str, int], ...] = ()  # (logger name, level), in the variable's order

    def apply(self) -> None:
        """Set each named logger's level (the root's is for ``logging.basicConfig``)."""
        for name, level in self.loggers:
            python_logger(name).setLevel(level)


def log_settings(environ: Mapping[str, str]) -> LogSettings:
    """The levels the image's variables set; ``ConfigError`` names a variable that is not understood."""
    root_text = environ.get(ROOT_LEVEL, "").strip()
    root = level_of(ROOT_LEVEL, root_text) if root_text else None
    loggers = []
    for item in environ.get(LOGGERS, "").split(","):
        if not item.strip():
            continue
        name, sep, level = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{LOGGERS}: {item.strip()!r} is not logger=level")
        loggers.append((name.strip(), level_of(LOGGERS, level.strip(), name.strip())))
    return LogSettings(root, tuple(loggers))


def level_of(variable: str, text: str, logger: str = "") -> int:
    """The logging level of a log4j level name (any case); ``ConfigError`` naming ``variable`` otherwise."""
    if text.upper() not in LOG4J_LEVELS:
        where = f" (logger {logger})" if logger else ""
        raise ConfigError(f"{variable}: {text!r}{where} is not a log level; valid log levels are "
                          f"{', '.join(sorted(LOG4J_LEVELS))}")  # fmt: skip
    return LOG4J_LEVELS[text.upper()]
