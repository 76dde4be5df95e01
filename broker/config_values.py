"""The broker keys' value types and checks, and the refusal of a bad value in Kafka's words.

``ConfigError`` stops the start; ``key`` is the config key it is about, when
there is one (``serve --kafka-env`` names the variable that set it).
``config_error(name, text, exc)`` is the one way a bad value is refused: Kafka's
``ConfigException(name, value, reason)`` text, "Invalid value abc for
configuration num.partitions: Not a number of type INT", where the reason is
``exc``'s (a parser's ``ValueError``, or a check's ``Refused``, which also
gives the value as parsed: "Invalid value 0 ...: Value must be at least 1").
A parser or check may raise a whole ``ConfigError`` instead, for Kafka's
refusals worded otherwise.

``INT``, ``LONG``, ``SHORT`` and ``BOOLEAN`` parse as Kafka's ``ConfigDef``
types do; ``at_least`` and ``between`` are its ``Range`` checks, ``one_of``
its ``ValidString`` (the topic configs' own, from ``storage.config_values``).
"""

from __future__ import annotations

from typing import Any, Callable

from storage.config_values import TYPE_PARSERS, Refused, invalid_value, one_of  # noqa: F401 - one_of for broker keys

INT: Callable[[str], int] = TYPE_PARSERS["INT"]
LONG: Callable[[str], int] = TYPE_PARSERS["LONG"]
BOOLEAN: Callable[[str], bool] = TYPE_PARSERS["BOOLEAN"]
Check = Callable[[Any], None]


class ConfigError(ValueError):
    """A bad or unknown configuration key; the message names the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def config_error(name: str, text: str, exc: ValueError) -> ConfigError:
    """Kafka's refusal of ``text`` as the value of ``name``, for the reason ``exc`` gives."""
    if isinstance(exc, ConfigError):
        return ConfigError(str(exc), exc.key or name)
    return ConfigError(invalid_value(name, text, exc), name)


def parse_value(name: str, text: str, parse: Callable[[str], Any], check: Check | None = None) -> Any:
    """``text`` parsed and checked as the value of ``name``; ``ConfigError`` in Kafka's words if refused."""
    try:
        value = parse(text)
        if check is not None:
            check(value)
    except ValueError as exc:
        raise config_error(name, text, exc) from None
    return value


def _short(text: str) -> int:
    """Kafka's SHORT: a 16-bit integer."""
    value = LONG(text)
    if not -(2**15) <= value < 2**15:
        raise ValueError("Not a number of type SHORT")
    return value


SHORT: Callable[[str], int] = _short


def at_least(low: int) -> Check:
    """Kafka's ``Range.atLeast``."""
    return between(low, None)


def between(low: int, high: int | None) -> Check:
    """Kafka's ``Range.between`` (no upper bound when ``high`` is None)."""

    def check(value: Any) -> None:
        if value < low:
            raise Refused(f"Value must be at least {low}", value)
        if high is not None and value > high:
            raise Refused(f"Value must be no more than {high}", value)

    return check
