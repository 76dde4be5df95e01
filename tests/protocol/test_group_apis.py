"""Group-coordination APIs on hand-annotated byte vectors.

Each vector is written field by field from Kafka's wire layout of that version,
so the tests show the version-specific facts of our declarations: fields that
appear, move or disappear (JoinGroup v1's rebalance timeout, OffsetCommit v1's
per-partition timestamp and v2-4's retention, LeaveGroup v3's batch,
OffsetFetch v8's groups), nullability that starts in a later version, compact
encodings and tagged-field buffers in flexible versions. Every vector is
checked both ways: decoding gives the expected object, encoding gives the
bytes.
"""

from __future__ import annotations

import struct

import pytest

from protocol import (
    API_BY_NAME,
    ErrorCode,
    InvalidRequestError,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    message_class,
)
from protocol.codec import decode_body, encode_body

JOIN_GROUP = API_BY_NAME["JoinGroup"]
LEAVE_GROUP = API_BY_NAME["LeaveGroup"]
OFFSET_COMMIT = API_BY_NAME["OffsetCommit"]
OFFSET_FETCH = API_BY_NAME["OffsetFetch"]
FIND_COORDINATOR = API_BY_NAME["FindCoordinator"]
DESCRIBE_GROUPS = API_BY_NAME["DescribeGroups"]


def _both_ways(api, version: int, obj, data: bytes, is_request: bool) -> None:
    assert decode_body(api, version, data, is_request) == obj
    assert encode_body(api, version, obj, is_request) == data


@pytest.mark.parametrize(
    "name,key,versions,flexible",
    [
        ("OffsetCommit", 8, (0, 10), 8),
        ("OffsetFetch", 9, (0, 10), 6),
        ("FindCoordinator", 10, (0, 6), 3),
        ("JoinGroup", 11, (0, 9), 6),
        ("Heartbeat", 12, (0, 4), 4),
        ("LeaveGroup", 13, (0, 5), 4),
        ("SyncGroup", 14, (0, 5), 4),
        ("DescribeGroups", 15, (0, 6), 5),
        ("ListGroups", 16, (0, 5), 3),
        ("DeleteGroups", 42, (0, 2), 2),
    ],
)
def test_registered_with_our_ranges(name, key, versions, flexible):
    api = API_BY_NAME[name]
    assert (api.key, api.versions, api.flexible) == (key, versions, flexible)
    assert api.request_header_version(flexible - 1) == 1 and api.request_header_version(flexible) == 2


def test_join_group_v0_request_frame():
    Req = message_class(JOIN_GROUP, True)
    body = Req(
        group_id="g1",
        session_timeout_ms=30000,
        member_id="",
        protocol_type="consumer",
        protocols=[Req.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01\x02")],
    )
    payload = b"".join(
        [
            struct.pack(">h", 11),  # api_key: JoinGroup
            struct.pack(">h", 0),  # api_version
            struct.pack(">i", 7),  # correlation_id
            struct.pack(">h", 6) + b"client",  # client_id (request header v1)
            struct.pack(">h", 2) + b"g1",  # group_id: int16 length + utf-8
            struct.pack(">i", 30000),  # session_timeout_ms (no rebalance_timeout_ms before v1)
            struct.pack(">h", 0),  # member_id: empty on a first join
            struct.pack(">h", 8) + b"consumer",  # protocol_type
            struct.pack(">i", 1),  # protocols: int32 count
            struct.pack(">h", 5) + b"range",  # protocols[0].name
            struct.pack(">i", 3) + b"\x00\x01\x02",  # protocols[0].metadata: int32 length + bytes
        ]
    )
    request = decode_request(payload)
    assert request.header == RequestHeader(11, 0, 7, "client")
    assert request.body == body
    assert request.body.rebalance_timeout_ms == -1  # absent in v0: Kafka's default
    assert encode_request(request.header, body) == struct.pack(">i", len(payload)) + payload


def test_join_group_v1_inserts_rebalance_timeout_after_session_timeout():
    Req = message_class(JOIN_GROUP, True)
    body = Req(group_id="g", session_timeout_ms=10, rebalance_timeout_ms=20, member_id="m", protocol_type="c")
    v0 = encode_body(JOIN_GROUP, 0, body, True)
    cut = 2 + 1 + 4  # group_id "g" (int16 length + 1 byte), session_timeout_ms
    assert encode_body(JOIN_GROUP, 1, body, True) == v0[:cut] + struct.pack(">i", 20) + v0[cut:]


def _join_group_v6_member(member_id: bytes, instance: bytes | None, metadata: bytes) -> bytes:
    return b"".join(
        [
            bytes([len(member_id) + 1]) + member_id,  # member_id: compact string (uvarint len + 1)
            b"\x00" if instance is None else bytes([len(instance) + 1]) + instance,  # group_instance_id: 0 = null
            bytes([len(metadata) + 1]) + metadata,  # metadata: compact bytes
            b"\x00",  # member's tagged fields: none
        ]
    )


def test_join_group_v6_flexible_response_with_members():
    Resp = message_class(JOIN_GROUP, False)
    body = Resp(
        throttle_time_ms=5,
        error_code=0,
        generation_id=3,
        protocol_name="range",
        leader="m-1",
        member_id="m-2",
        members=[
            Resp.JoinGroupResponseMember(member_id="m-1", group_instance_id=None, metadata=b"\xaa"),
            Resp.JoinGroupResponseMember(member_id="m-2", group_instance_id="i2", metadata=b""),
        ],
    )
    payload = b"".join(
        [
            struct.pack(">i", 99),  # correlation_id
            b"\x00",  # response header v1: tagged fields, none
            struct.pack(">i", 5),  # throttle_time_ms
            struct.pack(">h", 0),  # error_code
            struct.pack(">i", 3),  # generation_id
            b"\x06" + b"range",  # protocol_name: compact string (protocol_type only from v7)
            b"\x04" + b"m-1",  # leader
            b"\x04" + b"m-2",  # member_id
            b"\x03",  # members: compact array, 2 entries (count + 1)
            _join_group_v6_member(b"m-1", None, b"\xaa"),
            _join_group_v6_member(b"m-2", b"i2", b""),
            b"\x00",  # body tagged fields: none
        ]
    )
    assert decode_response(payload, JOIN_GROUP, 6) == (99, body)
    assert encode_response(JOIN_GROUP, 6, 99, body) == struct.pack(">i", len(payload)) + payload


def test_join_group_protocol_name_is_nullable_only_from_v7():
    Resp = message_class(JOIN_GROUP, False)
    body = Resp(protocol_name=None)
    prefix = struct.pack(">ihi", 0, 0, -1)  # throttle_time_ms, error_code, generation_id (default -1)
    v7 = b"".join(
        [
            prefix,
            b"\x00",  # protocol_type: compact nullable string, null (its default)
            b"\x00",  # protocol_name: null
            b"\x01",  # leader: ""
            b"\x01",  # member_id: ""
            b"\x01",  # members: empty compact array
            b"\x00",  # tagged fields
        ]
    )
    _both_ways(JOIN_GROUP, 7, body, v7, False)
    with pytest.raises(ValueError):
        encode_body(JOIN_GROUP, 6, body, False)
    v6 = prefix + b"\x00" + b"\x01\x01\x01\x00"  # protocol_name null where v6 forbids it
    with pytest.raises(InvalidRequestError):
        decode_body(JOIN_GROUP, 6, v6, False)


def test_leave_group_v3_batch_request_and_response():
    Req = message_class(LEAVE_GROUP, True)
    request = Req(
        group_id="g",
        members=[
            Req.MemberIdentity(member_id="m1", group_instance_id=None),
            Req.MemberIdentity(member_id="", group_instance_id="i2"),
        ],
    )
    request_bytes = b"".join(
        [
            struct.pack(">h", 1) + b"g",  # group_id (no single member_id from v3)
            struct.pack(">i", 2),  # members: int32 count
            struct.pack(">h", 2) + b"m1",  # members[0].member_id
            struct.pack(">h", -1),  # members[0].group_instance_id: null
            struct.pack(">h", 0),  # members[1].member_id: "" (a static member leaves by instance id)
            struct.pack(">h", 2) + b"i2",  # members[1].group_instance_id
        ]
    )
    _both_ways(LEAVE_GROUP, 3, request, request_bytes, True)

    Resp = message_class(LEAVE_GROUP, False)
    response = Resp(
        throttle_time_ms=0,
        error_code=0,
        members=[
            Resp.MemberResponse(member_id="m1", group_instance_id=None, error_code=0),
            Resp.MemberResponse(member_id="", group_instance_id="i2", error_code=ErrorCode.UNKNOWN_MEMBER_ID),
        ],
    )
    response_bytes = b"".join(
        [
            struct.pack(">i", 0),  # throttle_time_ms
            struct.pack(">h", 0),  # error_code (top level)
            struct.pack(">i", 2),  # members: int32 count
            struct.pack(">h", 2) + b"m1" + struct.pack(">h", -1) + struct.pack(">h", 0),  # m1, null, NONE
            struct.pack(">h", 0) + struct.pack(">h", 2) + b"i2",  # "", "i2"
            struct.pack(">h", ErrorCode.UNKNOWN_MEMBER_ID),  # per-member error_code
        ]
    )
    _both_ways(LEAVE_GROUP, 3, response, response_bytes, False)


def test_leave_group_v2_names_one_member():
    Req = message_class(LEAVE_GROUP, True)
    data = struct.pack(">h", 1) + b"g" + struct.pack(">h", 2) + b"m1"  # group_id, member_id
    _both_ways(LEAVE_GROUP, 2, Req(group_id="g", member_id="m1"), data, True)


def _offset_commit_request(partition_tail: bytes, retention: bytes) -> bytes:
    return b"".join(
        [
            struct.pack(">h", 1) + b"g",  # group_id
            struct.pack(">i", 4),  # generation_id_or_member_epoch (v1+)
            struct.pack(">h", 1) + b"m",  # member_id (v1+)
            retention,  # retention_time_ms: v2-4 only
            struct.pack(">i", 1),  # topics: one
            struct.pack(">h", 1) + b"t",  # topics[0].name
            struct.pack(">i", 1),  # partitions: one
            struct.pack(">i", 0),  # partition_index
            struct.pack(">q", 42),  # committed_offset
            partition_tail,
        ]
    )


def test_offset_commit_v1_timestamp_and_v2_retention():
    Req = message_class(OFFSET_COMMIT, True)
    Topic = Req.OffsetCommitRequestTopic

    def topics(**partition):
        p = Topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=42, **partition)
        return [Topic(name="t", partitions=[p])]

    member = {"group_id": "g", "generation_id_or_member_epoch": 4, "member_id": "m"}
    v1 = Req(**member, topics=topics(commit_timestamp=1000, committed_metadata=None))
    v1_bytes = _offset_commit_request(
        struct.pack(">q", 1000) + struct.pack(">h", -1),  # commit_timestamp (v1 only), committed_metadata: null
        b"",
    )
    _both_ways(OFFSET_COMMIT, 1, v1, v1_bytes, True)
    assert decode_body(OFFSET_COMMIT, 1, v1_bytes, True).retention_time_ms == -1

    v2 = Req(**member, retention_time_ms=86400000, topics=topics(committed_metadata="x"))
    v2_bytes = _offset_commit_request(
        struct.pack(">h", 1) + b"x",  # committed_metadata (no commit_timestamp from v2)
        struct.pack(">q", 86400000),  # retention_time_ms
    )
    _both_ways(OFFSET_COMMIT, 2, v2, v2_bytes, True)
    assert decode_body(OFFSET_COMMIT, 2, v2_bytes, True).topics[0].partitions[0].commit_timestamp == -1
    assert encode_body(OFFSET_COMMIT, 5, v2, True) == _offset_commit_request(struct.pack(">h", 1) + b"x", b"")


def test_offset_fetch_v8_request_frame_with_groups():
    Req = message_class(OFFSET_FETCH, True)
    Group = Req.OffsetFetchRequestGroup
    body = Req(
        groups=[
            Group(group_id="g1", topics=[Group.OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])]),
            Group(group_id="g2", topics=None),
        ],
        require_stable=True,
    )
    payload = b"".join(
        [
            struct.pack(">h", 9),  # api_key: OffsetFetch
            struct.pack(">h", 8),  # api_version
            struct.pack(">i", 12),  # correlation_id
            struct.pack(">h", -1),  # client_id: null (int16 length even in header v2)
            b"\x00",  # request header v2: tagged fields, none
            b"\x03",  # groups: compact array, 2 entries (no top-level group_id/topics from v8)
            b"\x03" + b"g1",  # groups[0].group_id: compact string
            b"\x02",  # groups[0].topics: compact nullable array, 1 entry
            b"\x02" + b"t",  # topics[0].name
            b"\x03" + struct.pack(">ii", 0, 1),  # partition_indexes: 2 int32s
            b"\x00",  # topic's tagged fields
            b"\x00",  # group's tagged fields
            b"\x03" + b"g2",  # groups[1].group_id
            b"\x00",  # groups[1].topics: null = every committed partition
            b"\x00",  # group's tagged fields
            b"\x01",  # require_stable: true
            b"\x00",  # body tagged fields
        ]
    )
    request = decode_request(payload)
    assert request.header == RequestHeader(9, 8, 12, None) and request.header_version == 2
    assert request.body == body
    assert (request.body.group_id, request.body.topics) == ("", [])  # v0-7 fields are absent
    assert encode_request(request.header, body) == struct.pack(">i", len(payload)) + payload


def test_offset_fetch_v2_topics_null_but_not_in_v1():
    Req = message_class(OFFSET_FETCH, True)
    body = Req(group_id="g", topics=None)
    _both_ways(OFFSET_FETCH, 2, body, struct.pack(">h", 1) + b"g" + struct.pack(">i", -1), True)
    with pytest.raises(ValueError):
        encode_body(OFFSET_FETCH, 1, body, True)


def test_find_coordinator_v4_batched_response():
    Resp = message_class(FIND_COORDINATOR, False)
    body = Resp(
        throttle_time_ms=0,
        coordinators=[Resp.Coordinator(key="g", node_id=1, host="h", port=9092, error_code=0, error_message=None)],
    )
    data = b"".join(
        [
            struct.pack(">i", 0),  # throttle_time_ms (single-key fields gone from v4)
            b"\x02",  # coordinators: compact array, 1 entry
            b"\x02" + b"g",  # key
            struct.pack(">i", 1),  # node_id
            b"\x02" + b"h",  # host
            struct.pack(">i", 9092),  # port
            struct.pack(">h", 0),  # error_code
            b"\x00",  # error_message: null
            b"\x00",  # coordinator's tagged fields
            b"\x00",  # body tagged fields
        ]
    )
    _both_ways(FIND_COORDINATOR, 4, body, data, False)


def test_describe_groups_authorized_operations_only_from_v3():
    Resp = message_class(DESCRIBE_GROUPS, False)
    group = b"".join(
        [
            struct.pack(">h", 0),  # error_code
            struct.pack(">h", 1) + b"g",  # group_id
            struct.pack(">h", 5) + b"Empty",  # group_state
            struct.pack(">h", 0),  # protocol_type
            struct.pack(">h", 0),  # protocol_data
            struct.pack(">i", 0),  # members: none
        ]
    )
    head = struct.pack(">i", 0) + struct.pack(">i", 1)  # throttle_time_ms, groups: one
    v2 = decode_body(DESCRIBE_GROUPS, 2, head + group, False)
    assert v2.groups[0].authorized_operations == -(2**31)  # absent: "not asked for"
    assert v2 == Resp(groups=[Resp.DescribedGroup(group_id="g", group_state="Empty")])
    v3 = head + group + struct.pack(">i", 0x1F8)  # authorized_operations bit field
    assert decode_body(DESCRIBE_GROUPS, 3, v3, False).groups[0].authorized_operations == 0x1F8
    assert encode_body(DESCRIBE_GROUPS, 2, v2, False) == head + group
