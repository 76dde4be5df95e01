"""DeleteGroups (key 42): we serve v0-2; flexible from v2.

Version notes:

* v0 (KIP-229) deletes empty groups by name; every version answers one
  ``DeletableGroupResult`` per group and has ``throttle_time_ms``.
* v1 has the same layout and marks a client that knows the broker throttles
  after answering (KIP-219).
* v2 is the first flexible version.

The request field really is ``groups_names`` (Kafka's spelling).
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    42,
    "DeleteGroups",
    (0, 2),
    flexible=2,
    request=Struct(
        F("groups_names", [STRING]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("group_id", STRING),
            F("error_code", INT16),
            name="DeletableGroupResult",
        )]),
    ),
)
