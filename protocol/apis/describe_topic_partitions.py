"""DescribeTopicPartitions (key 75): we serve v0; flexible from v0 (always).

KIP-966's paged topic description, which the Java Admin client (3.8+) uses
for ``describeTopics`` by name whenever a broker advertises it. The request
names topics (none means every topic), the most partitions one answer may
carry and an optional ``cursor`` (topic name and partition index) to resume
from; the answer describes each topic's partitions, including the eligible
leader replicas (ELR) and the last known ELR, and carries ``next_cursor``
when the partition limit cut it short (null when it did not).

``topic_authorized_operations`` is INT32_MIN when not computed. The two ELR
lists are nullable, but a broker sends them (empty when there are none): the
Java client reads them without a null check.
"""

from ..schema import BOOL, INT16, INT32, STRING, UUID, Api, F, Struct

API = Api(
    75,
    "DescribeTopicPartitions",
    (0, 0),
    flexible=0,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING),
            name="TopicRequest",
        )]),
        F("response_partition_limit", INT32, default=2000),
        F("cursor", Struct(
            F("topic_name", STRING),
            F("partition_index", INT32),
            name="Cursor",
        ), null="0+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("topics", [Struct(
            F("error_code", INT16),
            F("name", STRING, null="0+"),
            F("topic_id", UUID),
            F("is_internal", BOOL),
            F("partitions", [Struct(
                F("error_code", INT16),
                F("partition_index", INT32),
                F("leader_id", INT32),
                F("leader_epoch", INT32, default=-1),
                F("replica_nodes", [INT32]),
                F("isr_nodes", [INT32]),
                F("eligible_leader_replicas", [INT32], null="0+", default=None),
                F("last_known_elr", [INT32], null="0+", default=None),
                F("offline_replicas", [INT32]),
                name="DescribeTopicPartitionsResponsePartition",
            )]),
            F("topic_authorized_operations", INT32, default=-2147483648),
            name="DescribeTopicPartitionsResponseTopic",
        )]),
        F("next_cursor", Struct(
            F("topic_name", STRING),
            F("partition_index", INT32),
            name="Cursor",
        ), null="0+", default=None),
    ),
)
