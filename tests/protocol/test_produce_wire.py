"""The Produce shortcut (``protocol.produce_wire``) against the schema-driven codec, its oracle.

Requests of every version (random topics, partitions, records, null ids, now and then unknown
tagged fields) must decode to what ``decode_request_generic`` gives; cut, mutated or padded frames
must end the same way (same result, or same exception type and message). Answers of every version
must encode to the generic bytes, or fail with the generic exception (a None where the schema
wants a collection too: the shortcut gives up and the generic encoder raises).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import API_BY_KEY, RequestHeader, decode_request, encode_request, message_class, response_chunks
from protocol import produce_wire
from protocol.headers import decode_request_generic, response_chunks_generic
from protocol.primitives import uvarint_bytes
from tests.protocol.strategies import message

PRODUCE = API_BY_KEY[0]
VERSIONS = range(PRODUCE.min_version, PRODUCE.max_version + 1)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TAGS = st.dictionaries(st.integers(0, 300), st.binary(max_size=4), max_size=2)


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the point is to compare whatever is raised
        return type(exc).__name__, str(exc)


def _with_tags(obj: Any, draw: Any) -> Any:
    """Sprinkle unknown tagged fields over ``obj`` and the structs inside it (flexible versions)."""
    obj.unknown_tagged_fields = draw(st.one_of(st.just({}), _TAGS))
    for name in ("topic_data", "partition_data", "responses", "partition_responses", "record_errors"):
        for inner in getattr(obj, name, None) or []:
            _with_tags(inner, draw)
    return obj


@st.composite
def requests(draw: Any, tagged: bool = True) -> tuple[int, bytes]:
    version = draw(st.sampled_from(VERSIONS))
    body = draw(message(PRODUCE, version, True))
    header = RequestHeader(0, version, draw(st.integers(-(2**31), 2**31 - 1)), draw(st.none() | st.text(max_size=8)))
    if tagged and PRODUCE.is_flexible(version) and draw(st.booleans()):
        _with_tags(body, draw)
        header.unknown_tagged_fields = draw(st.one_of(st.just({}), _TAGS))
    return version, encode_request(header, body)[4:]


@given(requests())
@_SETTINGS
def test_decoded_request_is_the_generic_one(case: tuple[int, bytes]) -> None:
    frame = bytearray(case[1])
    assert _outcome(decode_request, frame) == _outcome(decode_request_generic, frame)


@given(requests(tagged=False))
@_SETTINGS
def test_ordinary_requests_take_the_shortcut(case: tuple[int, bytes]) -> None:
    assert produce_wire.decode_request(bytearray(case[1])) is not None


@given(requests(), st.data())
@_SETTINGS
def test_cut_mutated_or_padded_requests_fail_the_same_way(case: tuple[int, bytes], data: Any) -> None:
    frame = bytearray(case[1])
    how = data.draw(st.sampled_from(["cut", "flip", "pad", "negative"]))
    if how == "cut":
        frame = frame[: data.draw(st.integers(0, max(len(frame) - 1, 0)))]
    elif how == "flip":
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]) | st.integers(0, 255))
    elif how == "pad":
        frame += data.draw(st.binary(min_size=1, max_size=8))
    else:  # a run of 0xff: a negative int16/int32 length, or an overlong varint
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at : at + 4] = b"\xff\xff\xff\xff"
    assert _outcome(decode_request, bytearray(frame)) == _outcome(decode_request_generic, bytearray(frame))


Req = message_class(PRODUCE, True)


def _one_topic_frame(version: int, name: str = "Q", records: bytes | None = b"abcdef") -> bytearray:
    part = Req.TopicProduceData.PartitionProduceData(index=3, records=records)
    body = Req(acks=-1, timeout_ms=5, topic_data=[Req.TopicProduceData(name=name, partition_data=[part])])
    return bytearray(encode_request(RequestHeader(0, version, 9, "c"), body)[4:])


@pytest.mark.parametrize("version", range(13))  # v13 names topics by id
@pytest.mark.parametrize("null", [b"\xff\xff", b"\x00", b"\xff\xfe"])
def test_null_or_negative_topic_name_fails_the_same_way(version: int, null: bytes) -> None:
    frame = _one_topic_frame(version)
    at = frame.index(b"Q")
    prefix = 1 if PRODUCE.is_flexible(version) else 2
    frame[at - prefix : at + 1] = null
    generic = _outcome(decode_request_generic, bytearray(frame))
    assert _outcome(decode_request, frame) == generic
    assert generic[0] == "InvalidRequestError"


@pytest.mark.parametrize("length", [0x7FFF, 0x8000])
def test_a_compact_topic_name_over_0x7fff_bytes_fails_the_same_way(length: int) -> None:
    """Kafka refuses a string field over 0x7fff bytes, even where a compact length could say more."""
    frame = _one_topic_frame(11, name="Q" * 0x7FFF)  # no writer writes more, ours included: spliced in
    at = frame.index(b"Q")
    frame[at - 3 : at + 0x7FFF] = uvarint_bytes(length + 1) + b"Q" * length
    generic = _outcome(decode_request_generic, bytearray(frame))
    assert _outcome(decode_request, frame) == generic
    assert generic[0] == ("ok" if length == 0x7FFF else "InvalidRequestError")


@pytest.mark.parametrize("version", [8, 11])
def test_a_topic_name_not_utf8_is_decoded_with_replacement_characters(version: int) -> None:
    frame = _one_topic_frame(version)
    frame[frame.index(b"Q")] = 0xFF
    assert decode_request(frame).body.topic_data[0].name == "\ufffd"


def test_records_are_writable_views_into_the_frame() -> None:
    frame = _one_topic_frame(11)
    records = decode_request(frame).body.topic_data[0].partition_data[0].records
    records[0:1] = b"X"
    assert b"Xbcdef" in frame


def _with_nones(obj: Any, draw: Any) -> Any:
    """Now and then None where the schema wants a collection (tagged fields, node endpoints), in ``obj`` and the
    structs inside it: the generic encoder refuses it, so the shortcut must too."""
    if draw(st.integers(0, 5)) == 0:
        obj.unknown_tagged_fields = None
    if hasattr(obj, "node_endpoints") and draw(st.integers(0, 5)) == 0:
        obj.node_endpoints = None
    for name in ("responses", "partition_responses", "record_errors", "current_leader"):
        inner = getattr(obj, name, None)
        for struct in inner if isinstance(inner, list) else [] if inner is None else [inner]:
            _with_nones(struct, draw)
    return obj


@st.composite
def answers(draw: Any) -> tuple[int, Any]:
    version = draw(st.sampled_from(VERSIONS))
    body = draw(message(PRODUCE, version, False))
    if PRODUCE.is_flexible(version) and draw(st.booleans()):
        _with_tags(body, draw)
    if draw(st.integers(0, 3)) == 0:
        _with_nones(body, draw)
    return version, body


def _joined(fn: Any, version: int, body: Any) -> bytes:
    return b"".join(bytes(c) for c in fn(PRODUCE, version, 77, body))


@given(answers())
@_SETTINGS
def test_answer_bytes_are_the_generic_ones(case: tuple[int, Any]) -> None:
    version, body = case
    assert _outcome(_joined, response_chunks, version, body) == _outcome(_joined, response_chunks_generic, version, body)


R = message_class(PRODUCE, False)
T = R.TopicProduceResponse
P = T.PartitionProduceResponse


@pytest.mark.parametrize("version", VERSIONS)
def test_ordinary_answers_take_the_shortcut(version: int) -> None:
    topic = T(name="t", topic_id=uuid.uuid4(), partition_responses=[P(index=1, base_offset=5, log_start_offset=0)])
    assert produce_wire.encode_response(version, 1, R(responses=[topic])) is not None


@pytest.mark.parametrize(
    "body",
    [
        R(responses=[T(name=None, partition_responses=[])]),  # name is not nullable
        R(responses=None),
        R(responses=[T(name="t", partition_responses=[P(error_code=1 << 20)])]),
        R(responses=[T(name="t", partition_responses=[P(current_leader=P.LeaderIdAndEpoch(leader_id=-1))])]),
        R(responses=[T(name="t", partition_responses=[P(current_leader=P.LeaderIdAndEpoch(leader_id=2))])]),
        R(node_endpoints=[R.NodeEndpoint(node_id=1, host="h", port=9)]),
        R(responses=[T(name="t", partition_responses=[P(record_errors=[P.BatchIndexAndErrorMessage(1, None)])])]),
        R(responses=[T(name="t", partition_responses=[P(index=0)])], node_endpoints=None),  # not nullable (v10+)
        R(responses=[], unknown_tagged_fields=None),
        R(responses=[T(name="t", unknown_tagged_fields=None)]),
        R(responses=[T(name="t", partition_responses=[P(unknown_tagged_fields=None)])]),
        R(responses=[T(name="t", partition_responses=[P(record_errors=[P.BatchIndexAndErrorMessage(
            1, None, unknown_tagged_fields=None)])])]),  # fmt: skip
        R(responses=[T(name="t", partition_responses=[P(current_leader=P.LeaderIdAndEpoch(
            unknown_tagged_fields=None))])]),  # fmt: skip
        R(responses=[T(name="t", partition_responses=[P(error_message="x" * 0x8000)])]),  # too long to write
        R(responses=[T(name="t", partition_responses=[P(error_message="x" * 0x7FFF)])]),  # the longest written
    ],
)
@pytest.mark.parametrize("version", VERSIONS)
def test_unusual_answers_match_the_generic_encoder(body: Any, version: int) -> None:
    assert _outcome(_joined, response_chunks, version, body) == _outcome(_joined, response_chunks_generic, version, body)
