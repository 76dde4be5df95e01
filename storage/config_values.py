"""Kafka's config value types and the words of its refusals, for ``storage.config``.

Each parser takes a value's text and returns the value, or raises a
``ValueError`` whose text is Kafka's ``ConfigDef`` reason ("Not a number of type
LONG", "String must be one of: ..."); ``invalid_value`` turns that into the
whole ConfigException message naming the key. ``java_text`` writes a value the
way Java's ``toString`` does, for DescribeConfigs. ``check_cleaner_memory`` is
Kafka's cross-check of the cleaner's dedupe buffer against its thread count.
"""

from __future__ import annotations

import decimal
import logging
import math
import re
from typing import Any, Callable

from .errors import ConfigError

_VERSION = re.compile(r"(0\.(8|9|10|11)\.\d|[1-4]\.\d{1,2})(\.\d+)?(-IV\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")  # Integer.parseInt / Long.parseLong (any Unicode digits, as Java)
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")  # parseDouble
_POLICIES = ("compact", "delete")


class Refused(ValueError):
    """Kafka's reason for refusing a value; ``value`` is the part refused when not the whole text (a list item)."""

    def __init__(self, reason: str, value: Any = None) -> None:
        super().__init__(reason)
        self.value = value


class ListRefused(ValueError):
    """A refusal that names the key but no value, as Kafka's ``ValidList``: "Configuration 'k' <reason>"."""


def invalid_value(key: str, text: Any, exc: ValueError) -> str:
    """Kafka's ConfigException text for ``key`` set to ``text``: "Invalid value v for configuration k: reason"."""
    if isinstance(exc, ListRefused):
        return f"Configuration '{key}' {exc}"
    value = exc.value if isinstance(exc, Refused) and exc.value is not None else text
    return f"Invalid value {java_text(value)} for configuration {key}: {exc}"


def java_text(value: Any) -> str:
    """``value`` as Java's ``toString`` writes it: ``true``, ``1.0E-5``, ``Infinity``; other values as ``str``."""
    if isinstance(value, bool):
        return str(value).lower()
    if not isinstance(value, float):
        return str(value)
    if math.isinf(value) or math.isnan(value):
        return {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, "NaN")
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    digits = decimal.Decimal(repr(value)).normalize()
    sign, numerals, _ = digits.as_tuple()
    mantissa = "".join(map(str, numerals))
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{digits.adjusted()}"


def _check_range(value: Any, low: float | None, high: float | None) -> None:
    """Kafka's ``ConfigDef.Range``; NaN, which Kafka lets through, is refused here."""
    if low is not None and value < low:
        raise Refused(f"Value must be at least {low}", value)
    if high is not None and value > high:
        raise Refused(f"Value must be no more than {high}", value)
    if isinstance(value, float) and math.isnan(value):
        raise Refused("Value must be a number", value)


def _at_least(parse: Callable[[str], Any], low: int) -> Callable[[str], Any]:
    """``parse`` followed by Kafka's ``Range.atLeast(low)``."""

    def checked(text: str) -> Any:
        value = parse(text)
        _check_range(value, low, None)
        return value

    return checked


def _integer(text: str, bits: int, kind: str) -> int:
    try:
        value = int(text) if _INTEGER.fullmatch(text) else None
    except ValueError:  # more digits than Python converts: far outside any Java integer
        value = None
    if value is None or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"Not a number of type {kind}")
    return value


def _int(text: str) -> int:
    """Kafka's INT: a 32-bit integer."""
    return _integer(text, 32, "INT")


def _long(text: str) -> int:
    """Kafka's LONG: a 64-bit integer."""
    return _integer(text, 64, "LONG")


def _double(text: str) -> float:
    """Kafka's DOUBLE, in Java's ``Double.parseDouble`` syntax (decimal only)."""
    if not _DOUBLE.fullmatch(text):
        raise ValueError("Not a number of type DOUBLE")
    return float(text.rstrip("fFdD"))


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return text.lower() == "true"


def _format_version(text: str) -> int:
    if text != "2":
        raise ValueError("the only record format to upgrade to is 2")
    return 2


def _gzip_level(text: str) -> int:
    """``compression.gzip.level``: Kafka takes zlib's 1-9, or -1 for zlib's default."""
    level = _int(text)
    if level != -1 and not 1 <= level <= 9:
        raise Refused("Value must be between 1 and 9 or equal to -1", level)
    return level


def _policy(text: str) -> tuple[str, ...]:
    """``cleanup.policy``, a LIST kept in the order given (``delete,compact`` stays so), checked as Kafka's
    ``ValidList``: no duplicates, no empty items, each one of compact or delete. An empty list is no policy."""
    items = tuple(item.strip() for item in text.split(",")) if text else ()
    if len(set(items)) != len(items):
        raise ListRefused("values must not be duplicated.")
    for item in items:
        if not item:
            raise ListRefused("values must not be empty.")
        if item not in _POLICIES:
            raise Refused(f"String must be one of: {', '.join(_POLICIES)}", item)
    return items


def _throttled_replicas(name: str) -> Callable[[str], tuple[str, ...]]:
    """``leader.`` and ``follower.replication.throttled.replicas``: ``*`` or ``partition:broker`` items, as
    Kafka's ``ThrottledReplicaListValidator`` checks them (its message names the key and shows the list)."""

    def parse(text: str) -> tuple[str, ...]:
        items = tuple(item.strip() for item in text.split(",")) if text.strip() else ()
        if "".join(items) != "*" and not all(re.fullmatch(r"([0-9]+:[0-9]+)?", item) for item in items):
            raise Refused(f"{name} must be the literal '*' or a list of replicas in the following format: "
                          "[partitionId]:[brokerId],[partitionId]:[brokerId],...", "[" + ", ".join(items) + "]")
        return items

    return parse


def _metadata_version(text: str) -> str:
    """Kafka's MetadataVersion strings (``0.10.2``, ``2.8``, ``3.0-IV1``): accepted, then ignored (KIP-724)."""
    if not _VERSION.fullmatch(text):
        raise ValueError(f"Version {text} is not a valid version")
    return text


def one_of(*choices: str) -> Callable[[str], str]:
    """Kafka's ``ValidString``: one of ``choices``, case included."""

    def parse(text: str) -> str:
        if text not in choices:
            raise Refused(f"String must be one of: {', '.join(choices)}", text)
        return text

    return parse


# The parser of each Kafka ConfigDef type a value may be checked as (STRING: any text).
TYPE_PARSERS: dict[str, Callable[[str], Any]] = {"INT": _int, "LONG": _long, "DOUBLE": _double, "BOOLEAN": _bool,
                                                 "STRING": str}  # fmt: skip


def check_cleaner_memory(other: dict[str, Any]) -> None:
    """Kafka's ``KafkaConfig.validateValues`` requirement that each cleaner thread's share of
    ``log.cleaner.dedupe.buffer.size`` (integer division) be over 1 MiB. With 0 threads Kafka's division
    fails ("/ by zero"); here that is refused in words that name the key."""
    threads = other.get("log.cleaner.threads", 1)
    if threads == 0:
        raise ConfigError("log.cleaner.threads must be at least 1: log.cleaner.dedupe.buffer.size is shared among them")
    if other.get("log.cleaner.dedupe.buffer.size", 128 << 20) // threads <= 1 << 20:
        raise ConfigError("requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")


def warn_ignored_format(text: str | None, topic: str | None = None) -> None:
    """Kafka's warning (``LogConfig.MessageFormatVersion.shouldWarn``) for a message.format.version before 0.11.0,
    whose newest record format is before v2, which is ignored: the broker's key, or ``topic``'s. A later version,
    or none, says nothing."""
    if text is None or re.match(r"0\.(8|9|10)\.", text.strip()) is None:
        return
    if topic is None:
        setting = f"Broker configuration log.message.format.version with value {text.strip()} is ignored"
    else:
        setting = f"Topic configuration message.format.version with value `{text.strip()}` is ignored for `{topic}`"
    logging.getLogger("storage.config").warning(
        "%s because the inter-broker protocol version is 3.0 or later: records are always stored as v2. "
        "This configuration is deprecated (KIP-724).", setting)
