"""OffsetFetch (key 9): we serve v0-10; flexible from v6.

Version notes:

* v0 and v1 share one layout (v0 once read offsets kept in ZooKeeper).
* v2 (KIP-88) adds a top-level ``error_code`` to the response and lets
  ``topics`` be null, meaning every partition the group has committed.
* v3 adds ``throttle_time_ms`` to the response; v4 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v5 adds ``committed_leader_epoch`` per partition (KIP-320).
* v6 is the first flexible version.
* v7 adds ``require_stable`` (KIP-447): partitions with pending
  transactional offsets answer UNSTABLE_OFFSET_COMMIT instead.
* v8 (KIP-709) asks for several groups at once: the single-group fields of
  v0-7 give way to ``groups`` in both directions, each group with its own
  (nullable) topic list and its own ``error_code``.
* v9 adds each group's ``member_id`` and ``member_epoch``, which a KIP-848
  consumer fills in (null and -1 otherwise); it may answer UNKNOWN_MEMBER_ID
  and STALE_MEMBER_EPOCH.
* v10 names each topic by ``topic_id`` instead of ``name``, in the request
  and in the response (KIP-848), and may answer UNKNOWN_TOPIC_ID.

Kafka 4.0 no longer serves v0 (KIP-896); we still do.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, UUID, Api, F, Struct

API = Api(
    9,
    "OffsetFetch",
    (0, 10),
    flexible=6,
    request=Struct(
        F("group_id", STRING, v="0-7"),
        F("topics", [Struct(
            F("name", STRING, v="0-7"),
            F("partition_indexes", [INT32], v="0-7"),
            name="OffsetFetchRequestTopic",
        )], v="0-7", null="2-7"),
        F("groups", [Struct(
            F("group_id", STRING, v="8+"),
            F("member_id", STRING, v="9+", null="9+", default=None),
            F("member_epoch", INT32, v="9+", default=-1),
            F("topics", [Struct(
                F("name", STRING, v="8-9"),
                F("topic_id", UUID, v="10+"),
                F("partition_indexes", [INT32], v="8+"),
                name="OffsetFetchRequestTopics",
            )], v="8+", null="8+"),
            name="OffsetFetchRequestGroup",
        )], v="8+"),
        F("require_stable", BOOL, v="7+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="3+"),
        F("topics", [Struct(
            F("name", STRING, v="0-7"),
            F("partitions", [Struct(
                F("partition_index", INT32, v="0-7"),
                F("committed_offset", INT64, v="0-7"),
                F("committed_leader_epoch", INT32, v="5-7", default=-1),
                F("metadata", STRING, v="0-7", null="0-7"),
                F("error_code", INT16, v="0-7"),
                name="OffsetFetchResponsePartition",
            )], v="0-7"),
            name="OffsetFetchResponseTopic",
        )], v="0-7"),
        F("error_code", INT16, v="2-7"),
        F("groups", [Struct(
            F("group_id", STRING, v="8+"),
            F("topics", [Struct(
                F("name", STRING, v="8-9"),
                F("topic_id", UUID, v="10+"),
                F("partitions", [Struct(
                    F("partition_index", INT32, v="8+"),
                    F("committed_offset", INT64, v="8+"),
                    F("committed_leader_epoch", INT32, v="8+", default=-1),
                    F("metadata", STRING, v="8+", null="8+"),
                    F("error_code", INT16, v="8+"),
                    name="OffsetFetchResponsePartitions",
                )], v="8+"),
                name="OffsetFetchResponseTopics",
            )], v="8+"),
            F("error_code", INT16, v="8+"),
            name="OffsetFetchResponseGroup",
        )], v="8+"),
    ),
)
