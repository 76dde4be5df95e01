"""DescribeGroups (key 15): we serve v0-6; flexible from v5.

Version notes:

* v1 adds ``throttle_time_ms`` to the response; v2 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v3 (KIP-430) adds ``include_authorized_operations``; each group then
  answers ``authorized_operations``, a bit field whose default INT32_MIN
  means "not asked for".
* v4 adds each member's ``group_instance_id`` (KIP-345).
* v5 is the first flexible version.
* v6 (KIP-1043) adds each group's nullable ``error_message``; the layout is
  otherwise v5's (what changes is how a missing group is answered).
"""

from ..schema import BOOL, BYTES, INT16, INT32, STRING, Api, F, Struct

API = Api(
    15,
    "DescribeGroups",
    (0, 6),
    flexible=5,
    request=Struct(
        F("groups", [STRING]),
        F("include_authorized_operations", BOOL, v="3+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("groups", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, v="6+", null="6+", default=None),
            F("group_id", STRING),
            F("group_state", STRING),
            F("protocol_type", STRING),
            F("protocol_data", STRING),
            F("members", [Struct(
                F("member_id", STRING),
                F("group_instance_id", STRING, v="4+", null="4+", default=None),
                F("client_id", STRING),
                F("client_host", STRING),
                F("member_metadata", BYTES),
                F("member_assignment", BYTES),
                name="DescribedGroupMember",
            )]),
            F("authorized_operations", INT32, v="3+", default=-(1 << 31)),
            name="DescribedGroup",
        )]),
    ),
)
