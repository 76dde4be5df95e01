"""Heartbeat (key 12): we serve v0-4; flexible from v4.

Version notes:

* v1 adds ``throttle_time_ms`` to the response; v2 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v3 adds ``group_instance_id`` for static members (KIP-345).
* v4 is the first flexible version.
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    12,
    "Heartbeat",
    (0, 4),
    flexible=4,
    request=Struct(
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, v="3+", null="3+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16),
    ),
)
