"""CreateTopics (key 19): we serve v0-7; flexible from v5.

Version notes:

* v1 adds ``validate_only`` and a per-topic ``error_message``; v2 adds
  ``throttle_time_ms``; v3 has the same layout (KIP-219 throttling).
* v4 (KIP-464): ``num_partitions`` and ``replication_factor`` may be -1,
  meaning the broker defaults, even without explicit ``assignments``.
* v5 is the first flexible version and answers the created topic's
  ``num_partitions``, ``replication_factor`` and ``configs`` (KIP-525); a
  failure to describe those configs goes in the tagged
  ``topic_config_error_code``.
* v6 has the same layout and may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
* v7 answers the new topic's ``topic_id`` (KIP-516).

Kafka 4.0 no longer serves v0-1 (KIP-896); we still do.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, F, Struct

API = Api(
    19,
    "CreateTopics",
    (0, 7),
    flexible=5,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING),
            F("num_partitions", INT32),
            F("replication_factor", INT16),
            F("assignments", [Struct(
                F("partition_index", INT32),
                F("broker_ids", [INT32]),
                name="CreatableReplicaAssignment",
            )]),
            F("configs", [Struct(
                F("name", STRING),
                F("value", STRING, null="0+"),
                name="CreatableTopicConfig",
            )]),
            name="CreatableTopic",
        )]),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOL, v="1+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="2+"),
        F("topics", [Struct(
            F("name", STRING),
            F("topic_id", UUID, v="7+"),
            F("error_code", INT16),
            F("error_message", STRING, v="1+", null="1+"),
            F("topic_config_error_code", INT16, v="5+", tag=0),
            F("num_partitions", INT32, v="5+", default=-1),
            F("replication_factor", INT16, v="5+", default=-1),
            F("configs", [Struct(
                F("name", STRING),
                F("value", STRING, null="5+"),
                F("read_only", BOOL),
                F("config_source", INT8, default=-1),
                F("is_sensitive", BOOL),
                name="CreatableTopicConfigs",
            )], v="5+", null="5+"),
            name="CreatableTopicResult",
        )]),
    ),
)
