"""attrs classes generated from the schema declarations, one per struct.

``message_class(api, is_request)`` returns e.g. ``ProduceRequest``: a mutable
attrs class whose fields are the union of the fields of every version, each at
its default. Nested structs become classes named after their ``Struct`` name
(``ProduceRequest.TopicProduceData``) and are reachable as attributes of the
class that holds them, so handlers can write
``ProduceResponse.TopicProduceResponse(name=..., partition_responses=[...])``.

Every class also has ``unknown_tagged_fields``: tagged fields a peer sent that
we do not declare, kept as ``{tag: bytes}`` so a re-encode is byte-identical.

Classes are built once per struct (cached); the codecs in ``protocol.codec``
use ``fields_of(cls)`` to find the declaration back.
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from .primitives import ZERO_UUID
from .schema import (
    BOOL,
    BYTES,
    FLOAT64,
    RECORDS,
    STRING,
    UUID,
    Api,
    ArrayOf,
    Field,
    Struct,
)

_SCHEMA_ATTR = "__kafka_struct__"


def natural_default(field: Field) -> Any:
    """The value a field takes when it is absent from a version."""
    if field.default is not attrs.NOTHING:
        return field.default
    t = field.type
    if isinstance(t, ArrayOf):
        return attrs.Factory(list)
    if isinstance(t, Struct):
        return attrs.Factory(lambda: struct_class(t)())
    return _PRIMITIVE_DEFAULTS.get(t, 0)


_PRIMITIVE_DEFAULTS: dict[str, Any] = {
    BOOL: False,
    FLOAT64: 0.0,
    STRING: "",
    BYTES: b"",
    UUID: ZERO_UUID,
    RECORDS: None,
}


def default_value(field: Field) -> Any:
    """The concrete default (factories called) used to decide whether to write a tag."""
    d = natural_default(field)
    return d.factory() if isinstance(d, attrs.Factory) else d  # type: ignore[misc]


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def nested_structs(struct: Struct) -> list[tuple[Field, Struct]]:
    """The structs directly nested in ``struct`` (in arrays or as single fields)."""
    found = []
    for f in struct.fields:
        inner = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(inner, Struct):
            found.append((f, inner))
    return found


@functools.cache
def struct_class(struct: Struct, name: str | None = None) -> type:
    """Build (once) the attrs class for ``struct``."""
    cls_name = name or struct.name or "Anonymous"
    attributes: dict[str, Any] = {}
    for f in struct.fields:
        if f.name in attributes:
            raise ValueError(f"{cls_name}: field {f.name} declared twice")
        attributes[f.name] = attrs.field(default=natural_default(f))
    attributes["unknown_tagged_fields"] = attrs.field(factory=dict, repr=False)
    cls = attrs.make_class(cls_name, attributes, slots=True, eq=True)
    setattr(cls, _SCHEMA_ATTR, struct)
    for f, inner in nested_structs(struct):
        inner_name = inner.name or _camel(f.name)
        setattr(cls, inner_name, struct_class(inner, inner_name))
    return cls


def schema_of(cls: type) -> Struct:
    return getattr(cls, _SCHEMA_ATTR)


def message_class(api: Api, is_request: bool) -> type:
    """The request or response class of an API, e.g. ``ProduceRequest``."""
    struct = api.request if is_request else api.response
    return struct_class(struct, api.name + ("Request" if is_request else "Response"))


def class_for_field(field: Field) -> type:
    """The generated class of a struct-typed (or struct-array) field."""
    inner = field.type.item if isinstance(field.type, ArrayOf) else field.type
    return struct_class(inner, inner.name or _camel(field.name))
