"""JoinGroup (key 11): we serve v0-9; flexible from v6.

Version notes:

* v1 adds ``rebalance_timeout_ms`` (KIP-62); in v0 the session timeout is
  also the rebalance timeout.
* v2 adds ``throttle_time_ms`` to the response; v3 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v4 (KIP-394): a member joining with an empty ``member_id`` is answered
  MEMBER_ID_REQUIRED together with its new ``member_id`` and must join again
  with it.
* v5 adds ``group_instance_id`` for static members (KIP-345), in the request
  and for every member of the response.
* v6 is the first flexible version.
* v7 (KIP-559) adds ``protocol_type`` to the response, and ``protocol_name``
  becomes nullable.
* v8 adds the request's ``reason`` (KIP-800); v9 adds ``skip_assignment``
  (KIP-814) to the response.

Kafka 4.0 dropped v0-1 and 4.0.1 restored them (KAFKA-19444); we serve them.
"""

from ..schema import BOOL, BYTES, INT16, INT32, STRING, Api, F, Struct

API = Api(
    11,
    "JoinGroup",
    (0, 9),
    flexible=6,
    request=Struct(
        F("group_id", STRING),
        F("session_timeout_ms", INT32),
        F("rebalance_timeout_ms", INT32, v="1+", default=-1),
        F("member_id", STRING),
        F("group_instance_id", STRING, v="5+", null="5+", default=None),
        F("protocol_type", STRING),
        F("protocols", [Struct(
            F("name", STRING),
            F("metadata", BYTES),
            name="JoinGroupRequestProtocol",
        )]),
        F("reason", STRING, v="8+", null="8+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="2+"),
        F("error_code", INT16),
        F("generation_id", INT32, default=-1),
        F("protocol_type", STRING, v="7+", null="7+", default=None),
        F("protocol_name", STRING, null="7+"),
        F("leader", STRING),
        F("skip_assignment", BOOL, v="9+"),
        F("member_id", STRING),
        F("members", [Struct(
            F("member_id", STRING),
            F("group_instance_id", STRING, v="5+", null="5+", default=None),
            F("metadata", BYTES),
            name="JoinGroupResponseMember",
        )]),
    ),
)
