"""Declarative message schemas: the data every codec in this package is built from.

A Kafka message is declared once for all its versions, the way Kafka's own
message definitions are, but as compact Python data of our own::

    PRODUCE = Api(0, "Produce", (0, 11), flexible=9,
        request=Struct(
            F("transactional_id", STRING, v="3+", null="3+"),
            F("acks", INT16),
            F("topic_data", [Struct(
                F("name", STRING),
                F("partition_data", [Struct(
                    F("index", INT32),
                    F("records", RECORDS, null="0+"),
                )]),
            )]),
        ),
        response=Struct(...))

Rules, matching Kafka's schema semantics:

* ``v`` is the version range a field is present in: ``"3+"``, ``"0-4"`` or
  ``"none"``; fields absent from a version decode to their default and are not
  written.
* ``null`` is the range in which the field may be null (strings, bytes, arrays,
  records, structs).
* ``tag`` makes the field a tagged field (only in flexible versions); its ``v``
  is then the tagged-versions range. A tagged field is written only when its
  value differs from its default.
* A field type is a primitive name (``INT32`` ...), a ``Struct``, or a
  one-element list ``[T]`` meaning an array of ``T``.
* ``default`` overrides the type's natural default (0, "", b"", [], None).

``Api`` ties a request and response struct to an API key, a supported version
range and the first flexible version. Codecs (``protocol.codec``) and the attrs
classes (``protocol.messages``) are derived from these declarations and cached.
"""

from __future__ import annotations

import re
from typing import Any, Union

import attrs

INT8 = "int8"
INT16 = "int16"
UINT16 = "uint16"
INT32 = "int32"
UINT32 = "uint32"
INT64 = "int64"
FLOAT64 = "float64"
BOOL = "bool"
STRING = "string"
BYTES = "bytes"
UUID = "uuid"
RECORDS = "records"

PRIMITIVES = frozenset({INT8, INT16, UINT16, INT32, UINT32, INT64, FLOAT64, BOOL, STRING, BYTES, UUID, RECORDS})
NULLABLE_KINDS = frozenset({STRING, BYTES, RECORDS})

_RANGE = re.compile(r"^(\d+)(\+|-(\d+))?$")
_MAX = 1 << 15


@attrs.frozen
class Versions:
    """An inclusive version range; ``Versions.parse("3+")`` is 3..32767."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NONE_VERSIONS
        m = _RANGE.match(text.strip())
        if not m:
            raise ValueError(f"bad version range {text!r}")
        low = int(m.group(1))
        if m.group(2) is None:
            return cls(low, low)
        if m.group(2) == "+":
            return cls(low, _MAX)
        return cls(low, int(m.group(3)))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high


NONE_VERSIONS = Versions(1, 0)


@attrs.frozen
class Field:
    """One field of a struct: name, type, and the versions that shape it."""

    name: str
    type: Any  # primitive name, Struct, or ArrayOf
    versions: Versions
    nullable: Versions
    tag: int | None
    default: Any

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayOf)

    @property
    def is_struct(self) -> bool:
        return isinstance(self.type, Struct)


@attrs.frozen
class ArrayOf:
    """The type of an array field; ``item`` is a primitive name or a Struct."""

    item: Any


@attrs.frozen(eq=False)
class Struct:
    """An ordered list of fields; ``name`` becomes the generated class name."""

    fields: tuple[Field, ...]
    name: str | None = None

    def __init__(self, *fields: Field, name: str | None = None) -> None:
        self.__attrs_init__(tuple(fields), name)


TypeSpec = Union[str, Struct, list]


def F(
    name: str,
    type: TypeSpec,
    v: str = "0+",
    *,
    null: str | None = None,
    tag: int | None = None,
    default: Any = attrs.NOTHING,
) -> Field:
    """Declare a field (see the module docstring for the meaning of each argument)."""
    resolved = _resolve_type(type)
    return Field(
        name=name,
        type=resolved,
        versions=Versions.parse(v),
        nullable=Versions.parse(null),
        tag=tag,
        default=default,
    )


def _resolve_type(type: TypeSpec) -> Any:
    if isinstance(type, list):
        if len(type) != 1:
            raise ValueError("an array type is a one-element list")
        return ArrayOf(_resolve_type(type[0]))
    if isinstance(type, Struct):
        return type
    if type not in PRIMITIVES:
        raise ValueError(f"unknown type {type!r}")
    return type


@attrs.frozen(eq=False)
class Api:
    """An API key with its request/response schemas and supported versions."""

    key: int
    name: str
    versions: tuple[int, int]
    flexible: int | None
    request: Struct
    response: Struct

    @property
    def min_version(self) -> int:
        return self.versions[0]

    @property
    def max_version(self) -> int:
        return self.versions[1]

    def is_flexible(self, version: int) -> bool:
        return self.flexible is not None and version >= self.flexible

    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions responses always use header v0 so that a client that sent a
        # too-new version can still read the error (Kafka's KIP-511 quirk).
        if self.key == 18:
            return 0
        return 1 if self.is_flexible(version) else 0
