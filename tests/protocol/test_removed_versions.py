"""The wire layout of every version we serve, against kafka-python's hand-written schemas.

Kafka 4 removed some versions we still serve (Produce v0-2, Fetch v0-3,
ListOffsets v0, OffsetForLeaderEpoch v0-1, CreateTopics v0-1, DeleteTopics v0,
DescribeConfigs v0, OffsetCommit v0-1, OffsetFetch v0). For those versions the
JSON definitions that ``test_schema_conformance`` compares against are only
what Kafka happened to keep, so this test adds a second, independent witness:
kafka-python's legacy ``kafka.protocol.old`` modules, where each version of
each message was written out by hand (``ProduceRequest_v0.SCHEMA`` ...) long
before the JSON was imported.

Both sides are reduced to a *wire skeleton*: the sequence of encodings in
wire order (``int32``, ``string``, ``compact string``, ``array(...)``,
``tags`` for a flexible struct's tagged-field buffer), with structs inlined,
since a struct adds nothing on the wire. Names are left out: the legacy
modules use older names (``topics`` for ``topic_data`` ...), and names are
the JSON comparison's job. Every (api, version, direction) that both we and
the legacy modules know is compared, removed versions included.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from typing import Any

import attrs
import pytest

from protocol.apis import API_BY_KEY
from protocol.schema import BYTES, RECORDS, STRING, Api, ArrayOf, Struct

legacy = pytest.importorskip("kafka.protocol.old")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.protocol.old import types as lt
    from kafka.protocol.old.api import Request, Response


def _legacy_classes() -> dict[tuple[int, int, bool], type]:
    found: dict[tuple[int, int, bool], type] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.iter_modules(legacy.__path__):
            module = importlib.import_module(f"{legacy.__name__}.{info.name}")
            for value in vars(module).values():
                if not (isinstance(value, type) and issubclass(value, (Request, Response))):
                    continue
                key, version = getattr(value, "API_KEY", None), getattr(value, "API_VERSION", None)
                if isinstance(key, int) and isinstance(version, int):
                    found[(key, version, issubclass(value, Request))] = value
    return found


LEGACY = _legacy_classes()
# Hand-written mistakes of the legacy modules: DescribeLogDirsRequest v0 has the v1 layout (KIP-219
# changed only throttling), whose topics carry an array of partition indexes (``[]int32`` in Kafka's
# JSON, checked by test_schema_conformance); the legacy module wrote a single int32. DescribeAcls v2 is
# flexible (its legacy classes say "Enable flexible version" but reuse the v1 schema, without compact
# strings or tagged fields).
LEGACY_MISTAKES = {(35, 0, True), (29, 2, True), (29, 2, False)}
CASES = sorted(
    (key, version, is_request)
    for key, version, is_request in LEGACY
    if key in API_BY_KEY and API_BY_KEY[key].min_version <= version <= API_BY_KEY[key].max_version
    and (key, version, is_request) not in LEGACY_MISTAKES
)


# ---------------------------------------------------------------- our side


def our_skeleton(struct: Struct, version: int, flexible: bool) -> list[Any]:
    """Wire skeleton of one of our structs at ``version``."""
    out: list[Any] = []
    for f in struct.fields:
        if version in f.versions and f.tag is None:
            out.extend(_our_type(f.type, version, flexible))
    if flexible:
        out.append("tags")
    return out


def _our_type(t: Any, version: int, flexible: bool) -> list[Any]:
    compact = "compact " if flexible else ""
    if isinstance(t, ArrayOf):
        return [(compact + "array", tuple(_our_type(t.item, version, flexible)))]
    if isinstance(t, Struct):
        return our_skeleton(t, version, flexible)
    if t in (STRING, BYTES, RECORDS):
        return [compact + ("string" if t == STRING else "bytes")]
    return [t]


# ---------------------------------------------------------------- kafka-python's legacy side

_FIXED = {
    lt.Int8: "int8",
    lt.Int16: "int16",
    lt.Int32: "int32",
    lt.Int64: "int64",
    lt.Float64: "float64",
    lt.Boolean: "bool",
    lt.UUID: "uuid",
    lt.BitField: "int32",  # authorized-operations sets travel as an int32
    lt.Bytes: "bytes",
    lt.CompactBytes: "compact bytes",
    lt.TaggedFields: "tags",
}


def legacy_skeleton(t: Any) -> list[Any]:
    """Wire skeleton of a legacy ``Schema`` (or of one of its field types)."""
    if isinstance(t, lt.Schema):
        return [token for field in t.fields for token in legacy_skeleton(field)]
    if isinstance(t, lt.CompactArray):
        return [("compact array", tuple(legacy_skeleton(t.array_of)))]
    if isinstance(t, lt.Array):
        return [("array", tuple(legacy_skeleton(t.array_of)))]
    if isinstance(t, lt.CompactString):
        return ["compact string"]
    if isinstance(t, lt.String):
        return ["string"]
    return [_FIXED[t]]


# ---------------------------------------------------------------- tests


def _skeletons(api: Api, version: int, is_request: bool) -> tuple[list[Any], list[Any]]:
    struct = api.request if is_request else api.response
    ours = our_skeleton(struct, version, api.is_flexible(version))
    theirs = legacy_skeleton(LEGACY[(api.key, version, is_request)].SCHEMA)
    return ours, theirs


def _case_id(case: tuple[int, int, bool]) -> str:
    key, version, is_request = case
    return f"{API_BY_KEY[key].name}{'Request' if is_request else 'Response'}-v{version}"


@pytest.mark.parametrize("key,version,is_request", CASES, ids=[_case_id(c) for c in CASES])
def test_wire_layout_matches_kafka_pythons_hand_written_schema(key, version, is_request):
    ours, theirs = _skeletons(API_BY_KEY[key], version, is_request)
    assert ours == theirs


REMOVED_IN_KAFKA_4 = {
    "Produce": [0, 1, 2],
    "Fetch": [0, 1, 2, 3],
    "ListOffsets": [0],
    "OffsetForLeaderEpoch": [0, 1],
    "CreateTopics": [0, 1],
    "DeleteTopics": [0],
    "DescribeConfigs": [0],
    "OffsetCommit": [0, 1],
    "OffsetFetch": [0],
}


def test_every_removed_version_we_serve_has_a_legacy_witness():
    covered = {(API_BY_KEY[k].name, v) for k, v, r in CASES if r} & {(API_BY_KEY[k].name, v) for k, v, r in CASES if not r}
    wanted = {(name, v) for name, versions in REMOVED_IN_KAFKA_4.items() for v in versions}
    assert wanted <= covered


def _swap_first_two(struct: Struct) -> Struct:
    fields = list(struct.fields)
    fields[0], fields[1] = fields[1], fields[0]
    return Struct(*fields, name=struct.name)


def test_a_wrong_declaration_is_caught():
    """Not vacuous: a reordered or retyped field in a removed version changes the skeleton."""
    produce = API_BY_KEY[0]
    assert _skeletons(produce, 0, True)[0] == _skeletons(produce, 0, True)[1]
    # Produce v0 request: acks (int16) and timeout_ms (int32) swapped.
    fields = [f for f in produce.request.fields if f.name != "transactional_id"]
    reordered = attrs.evolve(produce, request=_swap_first_two(Struct(*fields)))
    ours, theirs = _skeletons(reordered, 0, True)
    assert ours[:2] == ["int32", "int16"] and theirs[:2] == ["int16", "int32"]
    # Fetch v3 response: records declared as a string instead of records bytes.
    fetch = API_BY_KEY[1]
    retyped = attrs.evolve(fetch, response=_retype_records(fetch.response))
    ours, theirs = _skeletons(retyped, 3, False)
    assert str(ours).count("'bytes'") == 0 and str(theirs).count("'bytes'") == 1


def _retype_records(struct: Struct) -> Struct:
    fields = []
    for f in struct.fields:
        t = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(t, Struct):
            inner = _retype_records(t)
            f = attrs.evolve(f, type=ArrayOf(inner) if isinstance(f.type, ArrayOf) else inner)
        elif f.type == RECORDS:
            f = attrs.evolve(f, type=STRING)
        fields.append(f)
    return Struct(*fields, name=struct.name)
