"""AlterPartitionReassignments (key 45): we serve v0-1; flexible from v0 (always).

Starts or cancels partition reassignments (KIP-455): per partition the
target replicas, or null to cancel the reassignment in progress.

Version notes: v1 (KIP-860) adds ``allow_replication_factor_change`` to the
request and echoes it in the response (default true).
"""

from ..schema import BOOL, INT16, INT32, STRING, Api, F, Struct

API = Api(
    45,
    "AlterPartitionReassignments",
    (0, 1),
    flexible=0,
    request=Struct(
        F("timeout_ms", INT32, default=60000),
        F("allow_replication_factor_change", BOOL, v="1+", default=True),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("replicas", [INT32], null="0+", default=None),
                name="ReassignablePartition",
            )]),
            name="ReassignableTopic",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("allow_replication_factor_change", BOOL, v="1+", default=True),
        F("error_code", INT16),
        F("error_message", STRING, null="0+", default=""),
        F("responses", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, null="0+", default=""),
                name="ReassignablePartitionResponse",
            )]),
            name="ReassignableTopicResponse",
        )]),
    ),
)
