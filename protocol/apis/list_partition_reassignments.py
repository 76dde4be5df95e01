"""ListPartitionReassignments (key 46): we serve v0; flexible from v0 (always).

The partition reassignments in progress (KIP-455): for each, the target
replicas and the replicas being added and removed. A null ``topics`` asks
for every reassignment.
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    46,
    "ListPartitionReassignments",
    (0, 0),
    flexible=0,
    request=Struct(
        F("timeout_ms", INT32, default=60000),
        F("topics", [Struct(
            F("name", STRING),
            F("partition_indexes", [INT32]),
            name="ListPartitionReassignmentsTopics",
        )], null="0+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+", default=""),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("replicas", [INT32]),
                F("adding_replicas", [INT32]),
                F("removing_replicas", [INT32]),
                name="OngoingPartitionReassignment",
            )]),
            name="OngoingTopicReassignment",
        )]),
    ),
)
