"""SyncGroup (key 14): we serve v0-5; flexible from v4.

Version notes:

* v1 adds ``throttle_time_ms`` to the response; v2 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v3 adds ``group_instance_id`` for static members (KIP-345).
* v4 is the first flexible version.
* v5 (KIP-559) adds ``protocol_type`` and ``protocol_name`` to both the
  request (for the coordinator to check) and the response.
"""

from ..schema import BYTES, INT16, INT32, STRING, Api, F, Struct

API = Api(
    14,
    "SyncGroup",
    (0, 5),
    flexible=4,
    request=Struct(
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, v="3+", null="3+", default=None),
        F("protocol_type", STRING, v="5+", null="5+", default=None),
        F("protocol_name", STRING, v="5+", null="5+", default=None),
        F("assignments", [Struct(
            F("member_id", STRING),
            F("assignment", BYTES),
            name="SyncGroupRequestAssignment",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16),
        F("protocol_type", STRING, v="5+", null="5+", default=None),
        F("protocol_name", STRING, v="5+", null="5+", default=None),
        F("assignment", BYTES),
    ),
)
