"""CreatePartitions (key 37): we serve v0-3; flexible from v2.

Raises a topic's partition count to ``count`` (KIP-195); ``assignments``
may give the replicas of each new partition, or be null to let the broker
place them.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 is the first flexible version.
* v3 has the same layout and may answer THROTTLING_QUOTA_EXCEEDED
  (KIP-599).
"""

from ..schema import BOOL, INT16, INT32, STRING, Api, F, Struct

API = Api(
    37,
    "CreatePartitions",
    (0, 3),
    flexible=2,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING),
            F("count", INT32),
            F("assignments", [Struct(
                F("broker_ids", [INT32]),
                name="CreatePartitionsAssignment",
            )], null="0+"),
            name="CreatePartitionsTopic",
        )]),
        F("timeout_ms", INT32),
        F("validate_only", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("name", STRING),
            F("error_code", INT16),
            F("error_message", STRING, null="0+", default=None),
            name="CreatePartitionsTopicResult",
        )]),
    ),
)
