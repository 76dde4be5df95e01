"""Hypothesis strategies built from our own schema declarations.

``message(api, version, is_request)`` draws a valid object of the generated
class for that exact version: fields absent in the version keep their
defaults, nullable-in-version fields are sometimes None, tagged fields are
sometimes set, arrays stay small.
"""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from protocol.messages import class_for_field, default_value, message_class
from protocol.schema import (
    BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, RECORDS, STRING, UINT16, UINT32, UUID, Api, ArrayOf, Field, Struct,
)  # fmt: skip

_INTS = {INT8: 8, INT16: 16, INT32: 32, INT64: 64}
_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _primitive(t: str) -> st.SearchStrategy:
    if t in _INTS:
        bits = _INTS[t]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return {
        UINT16: st.integers(0, 2**16 - 1),
        UINT32: st.integers(0, 2**32 - 1),
        FLOAT64: st.floats(allow_nan=False),
        BOOL: st.booleans(),
        STRING: _TEXT,
        BYTES: st.binary(max_size=16),
        RECORDS: st.binary(max_size=24),
        UUID: st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
    }[t]


def _value(field: Field, t, version: int, nullable: bool) -> st.SearchStrategy:
    if isinstance(t, ArrayOf):
        inner = _value(field, t.item, version, False)
        base = st.lists(inner, max_size=3)
    elif isinstance(t, Struct):
        base = struct_of(t, class_for_field(field), version)
    else:
        base = _primitive(t)
    return st.one_of(st.none(), base) if nullable else base


def struct_of(struct: Struct, cls: type, version: int) -> st.SearchStrategy:
    fields = {}
    for f in struct.fields:
        if version not in f.versions:
            continue
        value = _value(f, f.type, version, version in f.nullable)
        if f.tag is not None:
            value = st.one_of(st.just(default_value(f)), value)
        fields[f.name] = value
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def message(api: Api, version: int, is_request: bool) -> st.SearchStrategy:
    struct = api.request if is_request else api.response
    return struct_of(struct, message_class(api, is_request), version)
