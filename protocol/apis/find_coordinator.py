"""FindCoordinator (key 10): we serve v0-6; flexible from v3.

Version notes:

* v0 (once called GroupCoordinator) asks for the coordinator of one group by
  its ``key``.
* v1 adds ``key_type`` (0 = group, 1 = transaction) and, in the response,
  ``throttle_time_ms`` and ``error_message``. v2 has the same layout; it only
  marks a client that knows the broker throttles after answering (KIP-219).
* v3 is the first flexible version.
* v4 batches the lookup (KIP-699): ``coordinator_keys`` in the request, one
  ``Coordinator`` entry per key in the response, replacing the single-key
  fields of v0-3.
* v5 has the v4 layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890).
* v6 has the v4 layout and lets ``key_type`` be 2, a share group's state
  (KIP-932), whose key is ``groupId:topicId:partition``.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    10,
    "FindCoordinator",
    (0, 6),
    flexible=3,
    request=Struct(
        F("key", STRING, v="0-3"),
        F("key_type", INT8, v="1+"),
        F("coordinator_keys", [STRING], v="4+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16, v="0-3"),
        F("error_message", STRING, v="1-3", null="1-3"),
        F("node_id", INT32, v="0-3"),
        F("host", STRING, v="0-3"),
        F("port", INT32, v="0-3"),
        F("coordinators", [Struct(
            F("key", STRING, v="4+"),
            F("node_id", INT32, v="4+"),
            F("host", STRING, v="4+"),
            F("port", INT32, v="4+"),
            F("error_code", INT16, v="4+"),
            F("error_message", STRING, v="4+", null="4+"),
            name="Coordinator",
        )], v="4+"),
    ),
)
