"""Our declarations against Apache Kafka's own JSON message definitions, version by version.

kafka-python 3.0 ships Kafka's message definitions as JSON
(``kafka/protocol/schemas/resources/<Name>Request.json``). They are read here
at test time from the installed package, never copied into the repository;
the few it lacks (the delegation token APIs) from the kafka-clients jar the
Java tests use (``tests/java_jars.py`` fetches it on first use).

For every API we declare and every version in *our* range, both sides are
flattened into ``{path: shape}`` where ``path`` is ``topics[].partitions[].index``
and ``shape`` holds the type, the array depth, the nullability in that version
and the tag when the field is tagged in that version. The two dicts must be
equal, and the untagged fields must come in the same order (the wire order),
so a missing, extra, renamed, retyped, reordered, wrongly nullable or wrongly
tagged field fails with a readable diff. A second test compares the defaults
(the value a field takes in versions where it is absent, and what a tagged
field is compared with before being written). A third checks the first
flexible version.

Kafka 4 dropped some old versions from ``validVersions`` (KIP-896) but kept
the fields' version ranges, so the JSON still describes the versions we serve
below its own minimum. In those versions only, a field of ours the JSON lacks
is tolerated if ``REMOVED_ONLY`` lists it (no entry is needed today);
``test_removed_versions`` checks the same versions against kafka-python's
hand-written legacy schemas. Top-level fields we name otherwise than the JSON
(AddPartitionsToTxn's ``V3AndBelow`` prefixes) are listed in ``RENAMED`` and
compared under our names. Without kafka-python installed these tests skip.
"""

from __future__ import annotations

import json
import re
import zipfile
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

from protocol.apis import API_BY_KEY
from protocol.messages import default_value
from protocol.schema import BOOL, RECORDS, Api, ArrayOf, F, Struct, Versions

from ..java_jars import jars

_COMMENT = re.compile(r"(?m)^\s*//.*$")
_ZERO_UUID = uuid.UUID(int=0)


def _resources() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.origin is None:
        pytest.skip("kafka-python (the source of Kafka's JSON definitions) is not installed")
    return Path(spec.origin).parent / "protocol" / "schemas" / "resources"


# Top-level fields we name differently from Kafka's JSON: ``{(api name, is_request): {theirs: ours}}``.
# Kafka prefixes AddPartitionsToTxn's v0-3 fields only because v4 (which we don't serve) moved them
# into a per-transaction array; the names never reach the wire, and the shapes are still compared.
RENAMED: dict[tuple[str, bool], dict[str, str]] = {
    ("AddPartitionsToTxn", True): {
        "V3AndBelowTransactionalId": "TransactionalId",
        "V3AndBelowProducerId": "ProducerId",
        "V3AndBelowProducerEpoch": "ProducerEpoch",
        "V3AndBelowTopics": "Topics",
    },
    ("AddPartitionsToTxn", False): {"ResultsByTopicV3AndBelow": "ResultsByTopic"},
}


def _kafka_json(name: str) -> str:
    path = _resources() / name
    if path.is_file():
        return path.read_text(encoding="utf-8")
    # kafka-clients 4.3.0 (the Java end-to-end tests' jar) carries the definitions kafka-python lacks
    # (the delegation token APIs); fetched into .cache/java on first use, or the test skips.
    (clients_jar,) = jars(("kafka-clients-4.3.0.jar",))
    with zipfile.ZipFile(clients_jar) as jar:
        if f"common/message/{name}" in jar.namelist():
            return jar.read(f"common/message/{name}").decode("utf-8")
    pytest.skip(f"neither kafka-python nor the kafka-clients jar has {name}")


def load_kafka_schema(api: Api, is_request: bool) -> dict:
    """Kafka's JSON definition of the request or response, comments stripped, common structs inlined."""
    text = _kafka_json(f"{api.name}{'Request' if is_request else 'Response'}.json")
    data = json.loads(_COMMENT.sub("", text))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    _inline_common(data["fields"], common)
    renamed = RENAMED.get((api.name, is_request), {})
    for f in data["fields"]:
        f["name"] = renamed.get(f["name"], f["name"])
    return data


def _inline_common(fields: list[dict], common: dict[str, list]) -> None:
    for f in fields:
        base = f["type"].removeprefix("[]")
        if "fields" not in f and base in common:
            f["fields"] = common[base]
        if "fields" in f:
            _inline_common(f["fields"], common)


def snake(name: str) -> str:
    """``ZkMigrationReady`` -> ``zk_migration_ready``; ``ProducerID`` -> ``producer_id``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


@attrs.frozen
class Shape:
    type: str  # a primitive name, or "struct"
    array: bool
    nullable: bool
    tag: int | None


# ---------------------------------------------------------------- our side


def _our_shapes(struct: Struct, version: int, flexible: bool, prefix: str = "") -> dict[str, Shape]:
    out: dict[str, Shape] = {}
    for f in struct.fields:
        if version not in f.versions or (f.tag is not None and not flexible):
            continue
        t = f.type.item if isinstance(f.type, ArrayOf) else f.type
        path = prefix + f.name
        kind = "struct" if isinstance(t, Struct) else t
        out[path] = Shape(kind, isinstance(f.type, ArrayOf), version in f.nullable, f.tag)
        if isinstance(t, Struct):
            out.update(_our_shapes(t, version, flexible, path + ("[]." if f.is_array else ".")))
    return out


def _our_defaults(struct: Struct, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in struct.fields:
        t = f.type.item if isinstance(f.type, ArrayOf) else f.type
        path = prefix + f.name
        if isinstance(t, Struct):
            out.update(_our_defaults(t, path + ("[]." if f.is_array else ".")))
        elif not isinstance(f.type, ArrayOf):
            out[path] = default_value(f)
    return out


# ---------------------------------------------------------------- Kafka's side


def _in(text: str | None, version: int) -> bool:
    return version in Versions.parse(text)


def _their_shapes(fields: list[dict], version: int, flexible: bool, prefix: str = "") -> dict[str, Shape]:
    out: dict[str, Shape] = {}
    for f in fields:
        if not _in(f["versions"], version):
            continue
        tagged = "tag" in f and _in(f.get("taggedVersions"), version)
        if tagged and not flexible:
            continue
        is_array = f["type"].startswith("[]")
        path = prefix + snake(f["name"])
        kind = "struct" if "fields" in f else f["type"].removeprefix("[]")
        out[path] = Shape(kind, is_array, _in(f.get("nullableVersions"), version), f["tag"] if tagged else None)
        if "fields" in f:
            out.update(_their_shapes(f["fields"], version, flexible, path + ("[]." if is_array else ".")))
    return out


def _their_default(f: dict) -> Any:
    kind, text = f["type"], str(f.get("default", ""))
    if text == "null":
        return None
    if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(text, 0) if text else 0
    if kind == "bool":
        return text.lower() == "true"
    if kind == "float64":
        return float(text) if text else 0.0
    if kind == "uuid":
        return uuid.UUID(text) if text else _ZERO_UUID
    if kind == "bytes":
        return b""
    if kind == RECORDS:
        return None  # Kafka's generated code starts a records field at null
    assert kind == "string", kind
    return text


def _their_defaults(fields: list[dict], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        is_array = f["type"].startswith("[]")
        path = prefix + snake(f["name"])
        if "fields" in f:
            out.update(_their_defaults(f["fields"], path + ("[]." if is_array else ".")))
        elif not is_array:
            out[path] = _their_default(f)
    return out


# ---------------------------------------------------------------- tests

CASES = [
    (api.key, is_request) for api in sorted(API_BY_KEY.values(), key=lambda a: a.key) for is_request in (True, False)
]
IDS = [f"{API_BY_KEY[k].name}{'Request' if r else 'Response'}" for k, r in CASES]


# Fields of versions Kafka has removed (below the JSON's ``validVersions``) that the
# JSON no longer declares: ``{(api name, is_request): {path: versions}}``. Only in
# those versions may our declaration have them without the JSON; every field the
# JSON still declares there must match as in any other version. Empty today: Kafka
# 4.3 still declares every field of every removed version we serve, and
# test_removed_versions checks those versions against kafka-python's hand-written
# legacy schemas as well.
REMOVED_ONLY: dict[tuple[str, bool], dict[str, str]] = {}


def _allowed_removed_only(api: Api, is_request: bool, version: int, kafka: dict, allow: dict) -> set[str]:
    if version >= Versions.parse(kafka["validVersions"]).low:
        return set()
    entries = allow.get((api.name, is_request), {})
    return {path for path, versions in entries.items() if version in Versions.parse(versions)}


def _under(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith((r + ".", r + "[].")) for r in roots)


def struct_shape_mismatches(
    api: Api, is_request: bool, kafka: dict, allow: dict = REMOVED_ONLY
) -> dict[int, tuple[dict, dict]]:
    """``{version: (ours_only, theirs_only)}`` for every version of our range that differs."""
    struct = api.request if is_request else api.response
    flexible_from = Versions.parse(kafka.get("flexibleVersions"))
    diffs = {}
    for version in range(api.min_version, api.max_version + 1):
        flexible = version in flexible_from
        removed_only = _allowed_removed_only(api, is_request, version, kafka, allow)
        ours = {p: s for p, s in _our_shapes(struct, version, flexible).items() if not _under(p, removed_only)}
        theirs = _their_shapes(kafka["fields"], version, flexible)
        if ours != theirs:
            items_o, items_t = set(ours.items()), set(theirs.items())
            diffs[version] = (dict(items_o - items_t), dict(items_t - items_o))
        elif _wire_order(ours) != _wire_order(theirs):
            diffs[version] = ({"<order>": _wire_order(ours)}, {"<order>": _wire_order(theirs)})
    return diffs


def _wire_order(shapes: dict[str, Shape]) -> list[str]:
    """Untagged fields in declaration order: the order they are written in."""
    return [path for path, shape in shapes.items() if shape.tag is None]


@pytest.mark.parametrize("key,is_request", CASES, ids=IDS)
def test_fields_match_kafka_in_every_version(key, is_request):
    api = API_BY_KEY[key]
    kafka = load_kafka_schema(api, is_request)
    assert kafka["apiKey"] == api.key
    assert struct_shape_mismatches(api, is_request, kafka) == {}


@pytest.mark.parametrize("key,is_request", CASES, ids=IDS)
def test_flexible_version_matches_kafka(key, is_request):
    api = API_BY_KEY[key]
    kafka_flexible = Versions.parse(load_kafka_schema(api, is_request).get("flexibleVersions"))
    for version in range(api.min_version, api.max_version + 1):
        assert api.is_flexible(version) == (version in kafka_flexible), version


@pytest.mark.parametrize("key,is_request", CASES, ids=IDS)
def test_defaults_match_kafka(key, is_request):
    api = API_BY_KEY[key]
    struct = api.request if is_request else api.response
    ours = _our_defaults(struct)
    theirs = _their_defaults(load_kafka_schema(api, is_request)["fields"])
    # Fields Kafka added after our newest version have no counterpart here.
    shared = ours.keys() & theirs.keys()
    assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}


def test_a_broken_declaration_is_caught():
    """The comparison is not vacuous: renaming, retyping or un-tagging one field is reported."""
    api = API_BY_KEY[18]
    kafka = load_kafka_schema(api, False)
    assert struct_shape_mismatches(api, False, kafka) == {}
    broken_fields = [
        attrs.evolve(f, name="error") if f.name == "error_code" else f for f in api.response.fields
    ]
    broken = attrs.evolve(api, response=Struct(*broken_fields))
    diffs = struct_shape_mismatches(broken, False, kafka)
    assert set(diffs) == set(range(api.min_version, api.max_version + 1))
    assert "error" in diffs[0][0] and "error_code" in diffs[0][1]
    untagged = [attrs.evolve(f, tag=None) if f.name == "zk_migration_ready" else f for f in api.response.fields]
    diffs = struct_shape_mismatches(attrs.evolve(api, response=Struct(*untagged)), False, kafka)
    assert set(diffs) == {3, 4} and diffs[3][0]["zk_migration_ready"].tag is None
    swapped = list(api.response.fields)
    swapped[0], swapped[1] = swapped[1], swapped[0]  # error_code after api_keys
    diffs = struct_shape_mismatches(attrs.evolve(api, response=Struct(*swapped)), False, kafka)
    assert diffs[0][0]["<order>"][:2] == ["api_keys", "api_keys[].api_key"]


def test_removed_only_fields_are_tolerated_only_where_allow_listed():
    """A field the JSON lacks passes only in removed versions, and only when allow-listed."""
    produce = API_BY_KEY[0]  # Kafka 4 removed Produce v0-2
    kafka = load_kafka_schema(produce, True)
    extra = attrs.evolve(produce, request=Struct(*produce.request.fields, F("legacy_flag", BOOL, v="0-3")))
    assert set(struct_shape_mismatches(extra, True, kafka, allow={})) == {0, 1, 2, 3}
    allow = {("Produce", True): {"legacy_flag": "0-3"}}
    # v3 is inside Kafka's validVersions, where the JSON is authoritative.
    assert set(struct_shape_mismatches(extra, True, kafka, allow=allow)) == {3}
