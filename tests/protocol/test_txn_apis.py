"""The transaction APIs (KIP-98) on explicit objects and hand-built bytes.

AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26) and
TxnOffsetCommit (28): each version of each direction round-trips a fully
populated object, fields absent from a version come back at Kafka's defaults
(TxnOffsetCommit's leader epoch before v2, its group membership before v3),
and two requests and two responses are checked byte for byte against frames
written field by field from Kafka's layout: a v0 AddPartitionsToTxn request,
a flexible (v3) TxnOffsetCommit request with a null group instance and a
null metadata, a flexible AddPartitionsToTxn response and a v0 EndTxn
response. ``test_roundtrip`` and ``test_schema_conformance`` cover the same
declarations against kafka-python and Kafka's JSON.
"""

from __future__ import annotations

import struct

import pytest

from protocol import (
    API_BY_NAME,
    RequestHeader,
    decode_request,
    encode_request,
    message_class,
)
from protocol.codec import decode_body, encode_body

ADD_PARTITIONS = API_BY_NAME["AddPartitionsToTxn"]
ADD_OFFSETS = API_BY_NAME["AddOffsetsToTxn"]
END_TXN = API_BY_NAME["EndTxn"]
TXN_OFFSET_COMMIT = API_BY_NAME["TxnOffsetCommit"]


def _s(text: str) -> bytes:
    """A classic string: int16 length + utf-8."""
    return struct.pack(">h", len(text)) + text.encode()


def _cs(text: str | None) -> bytes:
    """A compact string: uvarint (length + 1), 0 for null (lengths here stay below 127)."""
    return b"\x00" if text is None else bytes([len(text) + 1]) + text.encode()


@pytest.mark.parametrize(
    "name,key,versions,flexible",
    [
        ("AddPartitionsToTxn", 24, (0, 3), 3),
        ("AddOffsetsToTxn", 25, (0, 4), 3),
        ("EndTxn", 26, (0, 4), 3),
        ("TxnOffsetCommit", 28, (0, 5), 3),
    ],
)
def test_registered_with_our_ranges(name, key, versions, flexible):
    api = API_BY_NAME[name]
    assert (api.key, api.versions, api.flexible) == (key, versions, flexible)
    assert api.request_header_version(flexible - 1) == 1 and api.request_header_version(flexible) == 2
    assert api.response_header_version(flexible - 1) == 0 and api.response_header_version(flexible) == 1


# ---------------------------------------------------------------- full objects, every version


def _add_partitions(is_request: bool):
    cls = message_class(ADD_PARTITIONS, is_request)
    if is_request:
        topics = [cls.AddPartitionsToTxnTopic(name="t", partitions=[0, 2]), cls.AddPartitionsToTxnTopic(name="u")]
        return cls(transactional_id="tx", producer_id=7, producer_epoch=3, topics=topics)
    result = cls.AddPartitionsToTxnTopicResult.AddPartitionsToTxnPartitionResult
    topic = cls.AddPartitionsToTxnTopicResult(
        name="t", results_by_partition=[result(partition_index=0, partition_error_code=0),
                                        result(partition_index=2, partition_error_code=51)])  # fmt: skip
    return cls(throttle_time_ms=4, results_by_topic=[topic])


def _add_offsets(is_request: bool):
    cls = message_class(ADD_OFFSETS, is_request)
    if is_request:
        return cls(transactional_id="tx", producer_id=7, producer_epoch=3, group_id="g")
    return cls(throttle_time_ms=4, error_code=90)


def _end_txn(is_request: bool):
    cls = message_class(END_TXN, is_request)
    if is_request:
        return cls(transactional_id="tx", producer_id=7, producer_epoch=3, committed=True)
    return cls(throttle_time_ms=4, error_code=48)


def _txn_offset_commit(is_request: bool):
    cls = message_class(TXN_OFFSET_COMMIT, is_request)
    if is_request:
        part = cls.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition
        topic = cls.TxnOffsetCommitRequestTopic(
            name="t", partitions=[part(partition_index=1, committed_offset=42, committed_leader_epoch=5,
                                       committed_metadata="m"),
                                  part(partition_index=2, committed_offset=9, committed_metadata=None)])  # fmt: skip
        return cls(transactional_id="tx", group_id="g", producer_id=7, producer_epoch=3, generation_id=2,
                   member_id="member-1", group_instance_id="static-1", topics=[topic])  # fmt: skip
    part = cls.TxnOffsetCommitResponseTopic.TxnOffsetCommitResponsePartition
    topic = cls.TxnOffsetCommitResponseTopic(name="t", partitions=[part(partition_index=1, error_code=0)])
    return cls(throttle_time_ms=4, topics=[topic])


BUILDERS = {24: _add_partitions, 25: _add_offsets, 26: _end_txn, 28: _txn_offset_commit}
CASES = [
    (api.name, v, r)
    for api in (ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT)
    for v in range(api.min_version, api.max_version + 1)
    for r in (True, False)
]


def _absent_at_default(obj, version: int):
    """``obj`` as a version that lacks some fields decodes it: those fields at Kafka's defaults."""
    if type(obj).__name__ != "TxnOffsetCommitRequest":
        return obj
    if version < 3:
        obj.generation_id, obj.member_id, obj.group_instance_id = -1, "", None
    if version < 2:
        for topic in obj.topics:
            for part in topic.partitions:
                part.committed_leader_epoch = -1
    return obj


IDS = [f"{n}-v{v}-{'req' if r else 'resp'}" for n, v, r in CASES]


@pytest.mark.parametrize("name,version,is_request", CASES, ids=IDS)
def test_every_version_round_trips(name, version, is_request):
    api = API_BY_NAME[name]
    data = encode_body(api, version, BUILDERS[api.key](is_request), is_request)
    decoded = decode_body(api, version, data, is_request)
    assert decoded.unknown_tagged_fields == {}
    assert decoded == _absent_at_default(BUILDERS[api.key](is_request), version)
    assert encode_body(api, version, decoded, is_request) == data


def test_txn_offset_commit_v2_adds_the_leader_epoch_after_the_offset():
    head = _s("tx") + _s("g") + struct.pack(">qh", 7, 3) + struct.pack(">i", 1) + _s("t") + struct.pack(">i", 2)

    def partitions(epochs: bool) -> bytes:
        first = struct.pack(">iq", 1, 42) + (struct.pack(">i", 5) if epochs else b"") + _s("m")
        second = struct.pack(">iq", 2, 9) + (struct.pack(">i", -1) if epochs else b"") + struct.pack(">h", -1)
        return first + second  # committed_metadata: "m", then null (int16 -1)

    obj = _txn_offset_commit(True)
    assert encode_body(TXN_OFFSET_COMMIT, 1, obj, True) == head + partitions(False)
    assert encode_body(TXN_OFFSET_COMMIT, 2, obj, True) == head + partitions(True)


# ---------------------------------------------------------------- hand-built bytes


def test_add_partitions_to_txn_v0_request_frame():
    payload = b"".join(
        [
            struct.pack(">hhi", 24, 0, 9),  # api_key, api_version, correlation_id
            _s("cli"),  # client_id (request header v1)
            _s("tx"),  # transactional_id
            struct.pack(">q", 7),  # producer_id
            struct.pack(">h", 3),  # producer_epoch
            struct.pack(">i", 2),  # topics: int32 count
            _s("t") + struct.pack(">i", 2) + struct.pack(">ii", 0, 2),  # name, partitions [0, 2]
            _s("u") + struct.pack(">i", 0),  # name, no partitions
        ]
    )
    request = decode_request(payload)
    assert request.header == RequestHeader(24, 0, 9, "cli")
    assert request.body == _add_partitions(True)
    assert encode_request(request.header, request.body) == struct.pack(">i", len(payload)) + payload


def test_txn_offset_commit_v3_flexible_request_frame():
    cls = message_class(TXN_OFFSET_COMMIT, True)
    part = cls.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition
    partition = part(partition_index=1, committed_offset=42, committed_leader_epoch=5, committed_metadata=None)
    body = cls(transactional_id="tx", group_id="g", producer_id=7, producer_epoch=3, generation_id=2,
               member_id="m", group_instance_id=None,
               topics=[cls.TxnOffsetCommitRequestTopic(name="t", partitions=[partition])])  # fmt: skip
    payload = b"".join(
        [
            struct.pack(">hhi", 28, 3, 11) + _s("cli") + b"\x00",  # header v2: classic client_id, no tags
            _cs("tx") + _cs("g"),  # transactional_id, group_id: compact strings
            struct.pack(">qh", 7, 3),  # producer_id, producer_epoch
            struct.pack(">i", 2),  # generation_id (v3+)
            _cs("m"),  # member_id (v3+)
            _cs(None),  # group_instance_id (v3+): null
            b"\x02",  # topics: compact array, 1 + 1
            _cs("t") + b"\x02",  # name; partitions: compact array of 1
            struct.pack(">iqi", 1, 42, 5),  # partition_index, committed_offset, committed_leader_epoch
            _cs(None) + b"\x00",  # committed_metadata: null; partition's tagged fields
            b"\x00",  # topic's tagged fields
            b"\x00",  # request's tagged fields
        ]
    )
    request = decode_request(payload)
    assert request.header == RequestHeader(28, 3, 11, "cli")
    assert request.body == body
    assert encode_request(request.header, body) == struct.pack(">i", len(payload)) + payload


def test_add_partitions_to_txn_v3_flexible_response_bytes():
    data = b"".join(
        [
            struct.pack(">i", 4),  # throttle_time_ms
            b"\x02" + _cs("t"),  # results_by_topic: compact array of 1; name
            b"\x03",  # results_by_partition: compact array of 2
            struct.pack(">ih", 0, 0) + b"\x00",  # partition 0, no error, tagged fields
            struct.pack(">ih", 2, 51) + b"\x00",  # partition 2, CONCURRENT_TRANSACTIONS, tagged fields
            b"\x00",  # topic's tagged fields
            b"\x00",  # response's tagged fields
        ]
    )
    assert decode_body(ADD_PARTITIONS, 3, data, False) == _add_partitions(False)
    assert encode_body(ADD_PARTITIONS, 3, _add_partitions(False), False) == data


def test_end_txn_v0_bytes_both_directions():
    request = _s("tx") + struct.pack(">qh?", 7, 3, True)
    assert decode_body(END_TXN, 0, request, True) == _end_txn(True)
    assert encode_body(END_TXN, 0, _end_txn(True), True) == request
    response = struct.pack(">ih", 4, 48)
    assert decode_body(END_TXN, 0, response, False) == _end_txn(False)
    assert encode_body(END_TXN, 0, _end_txn(False), False) == response


def test_add_offsets_to_txn_flexible_from_v3():
    obj = _add_offsets(True)
    classic = _s("tx") + struct.pack(">qh", 7, 3) + _s("g")
    flexible = _cs("tx") + struct.pack(">qh", 7, 3) + _cs("g") + b"\x00"
    assert [encode_body(ADD_OFFSETS, v, obj, True) for v in range(5)] == [classic] * 3 + [flexible] * 2
