"""ElectLeaders (key 43): we serve v0-2; flexible from v2.

Asks the controller to elect partition leaders (KIP-460): the preferred
replica (election type 0) or, if a partition has no leader, any replica
(type 1, unclean). A null ``topic_partitions`` means every partition.

Version notes: v1 adds ``election_type`` (v0 is preferred only) and the
top-level ``error_code``; v2 is the first flexible version.
"""

from ..schema import INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    43,
    "ElectLeaders",
    (0, 2),
    flexible=2,
    request=Struct(
        F("election_type", INT8, v="1+", default=0),
        F("topic_partitions", [Struct(
            F("topic", STRING),
            F("partitions", [INT32]),
            name="TopicPartitions",
        )], null="0+"),
        F("timeout_ms", INT32, default=60000),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16, v="1+", default=0),
        F("replica_election_results", [Struct(
            F("topic", STRING),
            F("partition_result", [Struct(
                F("partition_id", INT32),
                F("error_code", INT16),
                F("error_message", STRING, null="0+"),
                name="PartitionResult",
            )]),
            name="ReplicaElectionResult",
        )]),
    ),
)
