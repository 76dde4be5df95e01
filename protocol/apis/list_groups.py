"""ListGroups (key 16): we serve v0-5; flexible from v3.

Version notes:

* v1 adds ``throttle_time_ms`` to the response; v2 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v3 is the first flexible version.
* v4 (KIP-518) adds ``states_filter`` to the request (empty = every state)
  and each listed group's ``group_state`` to the response.
* v5 (KIP-848) adds ``types_filter`` to the request (empty = every type)
  and each listed group's ``group_type`` to the response.
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    16,
    "ListGroups",
    (0, 5),
    flexible=3,
    request=Struct(
        F("states_filter", [STRING], v="4+"),
        F("types_filter", [STRING], v="5+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16),
        F("groups", [Struct(
            F("group_id", STRING),
            F("protocol_type", STRING),
            F("group_state", STRING, v="4+"),
            F("group_type", STRING, v="5+"),
            name="ListedGroup",
        )]),
    ),
)
