"""Every API, every version, both directions: our codec round-trips, and kafka-python agrees.

1. ``decode_body(encode_body(x)) == x`` for objects drawn from our own
   declarations (``strategies.message``): every field, absent fields at their
   defaults, no unknown tagged fields.
2. kafka-python 3.0's protocol classes, built from Kafka's JSON definitions, are
   an independent oracle. For the same drawn object:

   * our bytes, decoded by kafka-python, hold the same field values;
   * a kafka-python object built from those values, encoded by kafka-python,
     decodes in ours to the same values (and to the very bytes we write).

   kafka-python is driven through its generic ``ApiMessage.encode``/``decode``
   (bypassing per-API client conveniences such as "an ApiVersions error answer
   is read as v0"), so only the wire format is compared. Its representation
   quirks are translated, never patched: ``authorized_operations`` bit sets
   (and their renamed fields), ``None`` for an unset uuid or tagged struct.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.apis import API_BY_KEY
from protocol.codec import decode_body, encode_body
from protocol.messages import default_value
from protocol.schema import RECORDS, UUID, Api, ArrayOf, Struct

from .strategies import message, on_wire

with warnings.catch_warnings():
    # kafka-python's message modules read their JSON with a deprecated importlib call.
    warnings.simplefilter("ignore")
    import kafka.protocol.admin
    import kafka.protocol.consumer
    import kafka.protocol.metadata
    import kafka.protocol.producer
    import kafka.protocol.sasl
    from kafka.protocol.api_message import ApiMessage

CASES = [
    (api.key, version, is_request)
    for api in sorted(API_BY_KEY.values(), key=lambda a: a.key)
    for version in range(api.min_version, api.max_version + 1)
    for is_request in (True, False)
]


def _case_id(case: tuple[int, int, bool]) -> str:
    key, version, is_request = case
    return f"{API_BY_KEY[key].name}{'Request' if is_request else 'Response'}-v{version}"


IDS = [_case_id(c) for c in CASES]
HYPOTHESIS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _struct(api: Api, is_request: bool) -> Struct:
    return api.request if is_request else api.response


def _item_struct(t: Any) -> Struct | None:
    t = t.item if isinstance(t, ArrayOf) else t
    return t if isinstance(t, Struct) else None


# ---------------------------------------------------------------- our side


def plain(obj: Any, struct: Struct, version: int, flexible: bool) -> dict[str, Any]:
    """The on-wire fields of one of our objects as nested dicts; records as bytes."""
    out: dict[str, Any] = {}
    for f in struct.fields:
        if on_wire(f, version, flexible):
            out[f.name] = _plain_value(getattr(obj, f.name), f.type, version, flexible)
    return out


def _plain_value(value: Any, t: Any, version: int, flexible: bool) -> Any:
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        return [_plain_value(v, t.item, version, flexible) for v in value]
    if isinstance(t, Struct):
        return plain(value, t, version, flexible)
    if t == RECORDS:
        return bytes(value)
    return value


def _records_as_bytes(obj: Any, struct: Struct) -> Any:
    """Decoded records are memoryviews into the frame: turn them into bytes, in place."""
    for f in struct.fields:
        value = getattr(obj, f.name)
        inner = _item_struct(f.type)
        if f.type == RECORDS and value is not None:
            setattr(obj, f.name, bytes(value))
        elif inner is not None and value is not None:
            for item in value if isinstance(f.type, ArrayOf) else [value]:
                _records_as_bytes(item, inner)
    return obj


@pytest.mark.roundtrip
@pytest.mark.parametrize("key,version,is_request", CASES, ids=IDS)
@HYPOTHESIS
@given(data=st.data())
def test_decode_of_encode_is_identity(key, version, is_request, data):
    api = API_BY_KEY[key]
    obj = data.draw(message(api, version, is_request))
    decoded = decode_body(api, version, encode_body(api, version, obj, is_request), is_request)
    assert decoded.unknown_tagged_fields == {}
    assert _records_as_bytes(decoded, _struct(api, is_request)) == obj


# ---------------------------------------------------------------- kafka-python's side


def _oracle_classes() -> dict[tuple[int, bool], type]:
    found: dict[tuple[int, bool], type] = {}
    pending = list(ApiMessage.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls._class_version is None:  # skip kafka-python's per-version wrappers
            found[(cls.API_KEY, cls.is_request())] = cls
    return found


ORACLE = _oracle_classes()
# Our names that kafka-python spells otherwise, used only where its class lacks our name.
# kafka-python renamed these fields when it turned them into bit sets (its json_patch).
_RENAMED = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
    # Kafka's JSON prefixes AddPartitionsToTxn's v0-3 fields (v4 moved them into a per-transaction
    # array); we serve v0-3 only and keep the plain names (protocol/apis/add_partitions_to_txn.py).
    "transactional_id": "v3_and_below_transactional_id",
    "producer_id": "v3_and_below_producer_id",
    "producer_epoch": "v3_and_below_producer_epoch",
    "topics": "v3_and_below_topics",
    "results_by_topic": "results_by_topic_v3_and_below",
}


def _kp_field(kp_fields: dict, name: str) -> Any:
    return kp_fields[name] if name in kp_fields else kp_fields[_RENAMED[name]]


def _is_bitfield(kp_field: Any) -> bool:
    return kp_field.type_str == "bitfield"


def _bits_to_int32(bits: set[int] | None) -> int:
    n = sum(1 << b for b in ({31} if bits is None else bits))
    return n - (1 << 32) if n >= 1 << 31 else n


def _int32_to_bits(n: int) -> set[int]:
    return {b for b in range(32) if (n & 0xFFFFFFFF) >> b & 1}


def plain_kafka_python(kp_obj: Any, struct: Struct, kp_fields: dict, version: int, flexible: bool) -> dict[str, Any]:
    """The same nested dict as ``plain``, read from a kafka-python object."""
    out: dict[str, Any] = {}
    for f in struct.fields:
        if not on_wire(f, version, flexible):
            continue
        kp_f = _kp_field(kp_fields, f.name)
        value = getattr(kp_obj, kp_f.name)
        inner = _item_struct(f.type)
        if _is_bitfield(kp_f):
            value = _bits_to_int32(value)
        elif inner is not None and value is None and f.tag is not None and version not in f.nullable:
            value = plain(default_value(f), inner, version, flexible)  # kafka-python's "tag not sent"
        elif inner is not None and value is not None:
            items = [plain_kafka_python(v, inner, kp_f.fields, version, flexible) for v in _as_list(value, f)]
            value = items if isinstance(f.type, ArrayOf) else items[0]
        elif value is None and f.type == UUID:
            value = uuid.UUID(int=0)
        elif isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        out[f.name] = value
    return out


def _as_list(value: Any, f: Any) -> list:
    return list(value) if isinstance(f.type, ArrayOf) else [value]


def build_kafka_python(obj: Any, struct: Struct, kp_class: Any, kp_fields: dict, version: int, flexible: bool) -> Any:
    """A kafka-python object holding the on-wire values of one of ours."""
    values: dict[str, Any] = {}
    for f in struct.fields:
        if not on_wire(f, version, flexible):
            continue
        value = getattr(obj, f.name)
        if f.tag is not None and value == default_value(f):
            continue  # left unset, kafka-python writes no tag either
        kp_f = _kp_field(kp_fields, f.name)
        inner = _item_struct(f.type)
        if _is_bitfield(kp_f):
            value = _int32_to_bits(value)
        elif inner is not None and value is not None:
            items = [
                build_kafka_python(v, inner, kp_f.data_class, kp_f.fields, version, flexible)
                for v in _as_list(value, f)
            ]
            value = items if isinstance(f.type, ArrayOf) else items[0]
        values[kp_f.name] = value
    return kp_class(version=version, **values)


def _kp_encode(kp_obj: Any, version: int) -> bytes:
    return bytes(ApiMessage.encode(kp_obj, version=version))


def _kp_decode(kp_class: type, data: bytes, version: int) -> Any:
    return ApiMessage.decode.__func__(kp_class, data, version=version)


ORACLE_CASES = [c for c in CASES if (c[0], c[2]) in ORACLE and c[1] <= ORACLE[(c[0], c[2])].max_version]
# kafka-python 3.0 has no delegation token messages (keys 38-41): kafka-clients 4.3.0 decodes ours
# instead, all four of them, in the Java Admin sweep (tests/e2e/test_java_admin_sweep.py). Nor has it
# KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe (68, 69): librdkafka 2.16 and kafka-clients
# 4.3.0 decode ours in tests/e2e/test_consumer_protocol.py.
NO_ORACLE = {38, 39, 40, 41, 68, 69}


def test_the_oracle_knows_every_api_and_version():
    assert ORACLE_CASES == [c for c in CASES if c[0] not in NO_ORACLE]
    assert not any(key in NO_ORACLE for key, _is_request in ORACLE)  # an oracle that appears is to be used


@pytest.mark.roundtrip
@pytest.mark.parametrize("key,version,is_request", ORACLE_CASES, ids=[_case_id(c) for c in ORACLE_CASES])
@HYPOTHESIS
@given(data=st.data())
def test_kafka_python_agrees_both_ways(key, version, is_request, data):
    api = API_BY_KEY[key]
    struct, flexible = _struct(api, is_request), api.is_flexible(version)
    kp_class = ORACLE[(key, is_request)]
    obj = data.draw(message(api, version, is_request))
    expected = plain(obj, struct, version, flexible)
    ours = encode_body(api, version, obj, is_request)

    read_by_them = _kp_decode(kp_class, ours, version)
    assert read_by_them.unknown_tags is None  # every tag we wrote is one kafka-python knows
    assert plain_kafka_python(read_by_them, struct, kp_class.fields, version, flexible) == expected

    theirs = _kp_encode(build_kafka_python(obj, struct, kp_class, kp_class.fields, version, flexible), version)
    read_by_us = decode_body(api, version, theirs, is_request)
    assert read_by_us.unknown_tagged_fields == {}
    assert plain(read_by_us, struct, version, flexible) == expected
    assert theirs == ours
