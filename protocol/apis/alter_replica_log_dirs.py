"""AlterReplicaLogDirs (key 34): we serve v0-2; flexible from v2.

Asks the broker to move partitions' logs to other directories of its
``log.dirs`` (what ``kafka-reassign-partitions.sh`` sends for a JBOD move):
one entry per destination path with the topics and partition indexes to move
there; one error code per partition in the answer.

Version notes:

* v1 has the v0 layout (KIP-219 throttling); Kafka 4 removed v0 (KIP-896).
* v2 is the first flexible version.
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    34,
    "AlterReplicaLogDirs",
    (0, 2),
    flexible=2,
    request=Struct(
        F("dirs", [Struct(
            F("path", STRING),
            F("topics", [Struct(
                F("name", STRING),
                F("partitions", [INT32]),
                name="AlterReplicaLogDirTopic",
            )]),
            name="AlterReplicaLogDir",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results", [Struct(
            F("topic_name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                name="AlterReplicaLogDirPartitionResult",
            )]),
            name="AlterReplicaLogDirTopicResult",
        )]),
    ),
)
