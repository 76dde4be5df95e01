"""ListGroups v5 and DescribeGroups v6 against the versions before them.

ListGroups v5 (KIP-848) reports every group's type ("classic": the only kind
this broker runs) and filters by type as Kafka's ``GroupType.parse`` does;
DescribeGroups v6 (KIP-1043) answers a missing or deleted group with
GROUP_ID_NOT_FOUND and a message where v0-5 describe it as ``Dead`` without
error; a GROUP's authorized operations are Kafka's five.
"""

from __future__ import annotations

import struct

import pytest

from broker.handlers.api_versions import API_KEY as API_VERSIONS
from protocol import API_BY_KEY, ErrorCode, message_class
from protocol.codec import decode_body, encode_body

from ._admin_client import call, create_ok, req
from ._group_client import clock, commit, group_props, groups_broker, join_new, sync  # noqa: F401  (fixtures)

DESCRIBE, LIST = 15, 16
T = "orders"
NOT_ASKED = -(2**31)
# READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
GROUP_OPS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)


async def two_groups(broker) -> None:
    """A stable consumer group "g" and an offsets-only group "simple" (Empty)."""
    await create_ok(broker, T, 1)
    joined = await join_new(broker, "g")
    await sync(broker, "g", joined.generation_id, joined.member_id, {joined.member_id: b"x"})
    await commit(broker, "simple", {(T, 0): 1})


async def listed(broker, version: int, **filters) -> list[tuple]:
    resp = await call(broker, LIST, version, req(LIST, **filters))
    assert resp.error_code == ErrorCode.NONE
    return sorted((x.group_id, x.protocol_type, x.group_state, x.group_type) for x in resp.groups)


# -------------------------------------------------------------------------------- ListGroups


async def test_list_groups_v4_has_no_type_and_v5_reports_classic(groups_broker):
    await two_groups(groups_broker)
    assert await listed(groups_broker, 4) == [("g", "consumer", "Stable", ""), ("simple", "", "Empty", "")]
    assert await listed(groups_broker, 5) == [
        ("g", "consumer", "Stable", "classic"), ("simple", "", "Empty", "classic")]  # fmt: skip


@pytest.mark.parametrize(
    "types,expected",
    [
        ([], ["g", "simple"]),
        (["classic"], ["g", "simple"]),
        (["Classic"], ["g", "simple"]),  # what Java's GroupType.CLASSIC.toString() sends
        (["CLASSIC", "consumer"], ["g", "simple"]),
        (["consumer"], []),
        (["share", "streams"], []),
        (["no-such-type"], []),  # parses as "unknown", which no group is
        (["no-such-type", "classic"], ["g", "simple"]),
        ([" classic"], []),  # type names are not trimmed (state names are)
    ],
)
async def test_list_groups_v5_types_filter(groups_broker, types, expected):
    await two_groups(groups_broker)
    assert [x[0] for x in await listed(groups_broker, 5, types_filter=types)] == expected


async def test_list_groups_v5_types_and_states_filters_combine(groups_broker):
    await two_groups(groups_broker)
    both = await listed(groups_broker, 5, states_filter=["stable"], types_filter=["classic"])
    assert both == [("g", "consumer", "Stable", "classic")]
    assert await listed(groups_broker, 5, states_filter=["Empty"], types_filter=["consumer"]) == []


def test_list_groups_v5_frames():
    api = API_BY_KEY[LIST]
    # flexible request: states_filter, types_filter (compact arrays), no tagged fields
    frame = b"\x01" + b"\x02\x08classic" + b"\x00"
    body = decode_body(api, 5, frame, True)
    assert (body.states_filter, body.types_filter) == ([], ["classic"])
    assert encode_body(api, 5, body, True) == frame
    Resp = message_class(api, False)
    resp = Resp(groups=[Resp.ListedGroup(group_id="g", protocol_type="consumer", group_state="Stable",
                                         group_type="classic")])  # fmt: skip
    group = b"\x02g" + b"\x09consumer" + b"\x07Stable" + b"\x08classic" + b"\x00"
    assert encode_body(api, 5, resp, False) == struct.pack(">ih", 0, 0) + b"\x02" + group + b"\x00"
    assert encode_body(api, 4, resp, False) == struct.pack(">ih", 0, 0) + b"\x02" + group[:-9] + b"\x00\x00"


# ---------------------------------------------------------------------------- DescribeGroups


async def describe(broker, version: int, *groups: str, ops: bool = False):
    body = req(DESCRIBE, groups=list(groups), include_authorized_operations=ops)
    return (await call(broker, DESCRIBE, version, body)).groups


@pytest.mark.parametrize("version", range(0, 6))
async def test_describe_unknown_group_up_to_v5_is_dead_without_error(groups_broker, version):
    (nope,) = await describe(groups_broker, version, "nope", ops=True)
    assert (nope.error_code, nope.error_message, nope.group_id, nope.group_state) == (0, None, "nope", "Dead")
    assert nope.authorized_operations == (GROUP_OPS if version >= 3 else NOT_ASKED)


async def test_describe_unknown_group_v6_is_group_id_not_found(groups_broker):
    nope, empty = await describe(groups_broker, 6, "nope", "", ops=True)
    assert (nope.error_code, nope.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert (nope.group_id, nope.group_state, nope.protocol_type, nope.protocol_data, nope.members) == (
        "nope", "Dead", "", "", [])  # fmt: skip
    assert nope.authorized_operations == NOT_ASKED  # Kafka fills operations in only for groups without error
    assert (empty.error_code, empty.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group  not found.")


async def test_describe_deleted_group_v5_dead_v6_not_found(groups_broker):
    await two_groups(groups_broker)
    deleted = await call(groups_broker, 42, 2, req(42, groups_names=["simple"]))
    assert deleted.results[0].error_code == ErrorCode.NONE
    (v5,) = await describe(groups_broker, 5, "simple")
    assert (v5.error_code, v5.group_state) == (ErrorCode.NONE, "Dead")
    (v6,) = await describe(groups_broker, 6, "simple")
    assert (v6.error_code, v6.error_message, v6.group_state) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group simple not found.", "Dead")  # fmt: skip


async def test_describe_existing_groups_v6_as_v5(groups_broker):
    await two_groups(groups_broker)
    v5 = await describe(groups_broker, 5, "g", "simple", ops=True)
    v6 = await describe(groups_broker, 6, "g", "simple", ops=True)
    assert v6 == v5
    g, simple = v6
    assert (g.error_code, g.error_message, g.group_state, g.protocol_data) == (0, None, "Stable", "range")
    assert (simple.error_code, simple.error_message, simple.group_state) == (0, None, "Empty")
    assert g.authorized_operations == simple.authorized_operations == GROUP_OPS


async def test_group_authorized_operations_bitfield(groups_broker):
    await two_groups(groups_broker)
    assert GROUP_OPS == 0b1101_0100_1000
    for version, ops, expected in [(2, True, NOT_ASKED), (3, False, NOT_ASKED), (3, True, GROUP_OPS),
                                   (5, True, GROUP_OPS), (6, True, GROUP_OPS)]:  # fmt: skip
        (g,) = await describe(groups_broker, version, "g", ops=ops)
        assert g.authorized_operations == expected, (version, ops)


def test_describe_groups_v6_frame_places_error_message_after_error_code():
    api = API_BY_KEY[DESCRIBE]
    Resp = message_class(api, False)
    found = Resp.DescribedGroup(error_code=69, error_message="Group x not found.", group_id="x", group_state="Dead")
    tail = b"\x02x" + b"\x05Dead" + b"\x01" + b"\x01" + b"\x01" + struct.pack(">i", NOT_ASKED) + b"\x00"
    head = struct.pack(">i", 0) + b"\x02" + struct.pack(">h", 69)
    assert encode_body(api, 6, Resp(groups=[found]), False) == head + b"\x13Group x not found." + tail + b"\x00"
    ok = Resp.DescribedGroup(group_id="x", group_state="Dead")
    no_message = struct.pack(">i", 0) + b"\x02" + struct.pack(">h", 0) + b"\x00"  # null: compact length 0
    assert encode_body(api, 6, Resp(groups=[ok]), False) == no_message + tail + b"\x00"
    assert decode_body(api, 6, head + b"\x13Group x not found." + tail + b"\x00", False) == Resp(groups=[found])


async def test_api_versions_advertise_the_new_ranges(groups_broker):
    resp = await call(groups_broker, API_VERSIONS, 3, req(API_VERSIONS, client_software_name="t",
                                                          client_software_version="1"))  # fmt: skip
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert (ranges[DESCRIBE], ranges[LIST]) == ((0, 6), (0, 5))
