"""Hypothesis strategies derived from our own schema declarations.

``message(api, version, is_request)`` draws a valid object of the generated
class (``message_class``) for that exact version, by walking the declaration:

* fields not on the wire in that version (outside their ``v`` range, or tagged
  in a non-flexible version) are left out, so they keep their defaults;
* fields nullable in that version are None about half the time;
* tagged fields are at their default about half the time, else drawn freely
  (so they are sometimes written, sometimes not);
* strings are any UTF-8 text (non-ASCII included, no lone surrogates), bytes
  and records small random bytes, ints span their type's whole range, float64
  never NaN, arrays hold at most ``MAX_ITEMS`` elements.

``unknown_tagged_fields`` is never set: objects we build carry none.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from protocol.messages import class_for_field, default_value, message_class
from protocol.schema import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UINT32, UUID, Api, ArrayOf, Field, Struct,
)  # fmt: skip

MAX_ITEMS = 3

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _int_range(low: int, high: int) -> st.SearchStrategy[int]:
    # Edges are where sign and width bugs live; draw them often.
    return st.one_of(st.sampled_from([low, high, 0, -1 if low < 0 else 1]), st.integers(low, high))


PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    INT8: _int_range(-(2**7), 2**7 - 1),
    INT16: _int_range(-(2**15), 2**15 - 1),
    INT32: _int_range(-(2**31), 2**31 - 1),
    INT64: _int_range(-(2**63), 2**63 - 1),
    UINT16: _int_range(0, 2**16 - 1),
    UINT32: _int_range(0, 2**32 - 1),
    FLOAT64: st.floats(allow_nan=False),
    BOOL: st.booleans(),
    STRING: _TEXT,
    BYTES: st.binary(max_size=16),
    RECORDS: st.binary(max_size=32),
    UUID: st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
}


def on_wire(field: Field, version: int, flexible: bool) -> bool:
    """Whether ``field`` is encoded at all in this version (the codec's rule)."""
    return version in field.versions and (field.tag is None or flexible)


def _type_strategy(field: Field, t: Any, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if isinstance(t, ArrayOf):
        return st.lists(_type_strategy(field, t.item, version, flexible), max_size=MAX_ITEMS)
    if isinstance(t, Struct):
        return struct_strategy(t, class_for_field(field), version, flexible)
    return PRIMITIVES[t]


def field_strategy(field: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Values of ``field`` valid in ``version``: None when nullable, the default when tagged."""
    values = _type_strategy(field, field.type, version, flexible)
    if version in field.nullable:
        values = st.one_of(st.none(), values)
    if field.tag is not None:
        values = st.one_of(st.builds(default_value, st.just(field)), values)
    return values


def struct_strategy(struct: Struct, cls: type, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` (the class generated for ``struct``) valid in ``version``."""
    fields = {f.name: field_strategy(f, version, flexible) for f in struct.fields if on_wire(f, version, flexible)}
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))


def message(api: Api, version: int, is_request: bool) -> st.SearchStrategy[Any]:
    """A request or response body of ``api`` valid in ``version``."""
    struct = api.request if is_request else api.response
    return struct_strategy(struct, message_class(api, is_request), version, api.is_flexible(version))
