"""LeaveGroup (key 13): we serve v0-5; flexible from v4.

Version notes:

* v0-2 remove one member, named by ``member_id``. v1 adds
  ``throttle_time_ms`` to the response; v2 has the same layout and marks a
  client that knows the broker throttles after answering (KIP-219).
* v3 (KIP-345) removes a batch: ``members`` lists ``MemberIdentity`` entries
  (member id and/or static ``group_instance_id``) and the response answers
  each one in ``members`` with its own ``error_code``, beside the top-level
  one.
* v4 is the first flexible version.
* v5 adds a per-member ``reason`` (KIP-800).
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    13,
    "LeaveGroup",
    (0, 5),
    flexible=4,
    request=Struct(
        F("group_id", STRING),
        F("member_id", STRING, v="0-2"),
        F("members", [Struct(
            F("member_id", STRING, v="3+"),
            F("group_instance_id", STRING, v="3+", null="3+", default=None),
            F("reason", STRING, v="5+", null="5+", default=None),
            name="MemberIdentity",
        )], v="3+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16),
        F("members", [Struct(
            F("member_id", STRING, v="3+"),
            F("group_instance_id", STRING, v="3+", null="3+"),
            F("error_code", INT16, v="3+"),
            name="MemberResponse",
        )], v="3+"),
    ),
)
