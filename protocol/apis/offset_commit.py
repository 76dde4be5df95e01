"""OffsetCommit (key 8): we serve v0-10; flexible from v8.

Version notes:

* v0 commits by group and partition only (offsets Kafka once kept in
  ZooKeeper).
* v1 adds ``generation_id_or_member_epoch`` and ``member_id``, and a
  per-partition ``commit_timestamp`` that exists in v1 alone.
* v2-4 carry a request-wide ``retention_time_ms`` (-1 = the broker's
  offsets.retention.minutes) instead; v5 drops it again (KIP-211).
* v3 adds ``throttle_time_ms`` to the response; v4 has the same layout and
  marks a client that knows the broker throttles after answering (KIP-219).
* v6 adds ``committed_leader_epoch`` per partition (KIP-320).
* v7 adds ``group_instance_id`` for static members (KIP-345).
* v8 is the first flexible version.
* v9 has the v8 layout and is the first a KIP-848 consumer may use
  (``generation_id_or_member_epoch`` then carries its member epoch); it may
  answer STALE_MEMBER_EPOCH, and GROUP_ID_NOT_FOUND for a group that does
  not exist.
* v10 names each topic by ``topic_id`` instead of ``name``, in the request
  and in the response (KIP-848), and may answer UNKNOWN_TOPIC_ID.

Kafka 4.0 no longer serves v0-1 (KIP-896); we still do, so their fields are
declared here.
"""

from ..schema import INT16, INT32, INT64, STRING, UUID, Api, F, Struct

API = Api(
    8,
    "OffsetCommit",
    (0, 10),
    flexible=8,
    request=Struct(
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, v="1+", default=-1),
        F("member_id", STRING, v="1+"),
        F("group_instance_id", STRING, v="7+", null="7+", default=None),
        F("retention_time_ms", INT64, v="2-4", default=-1),
        F("topics", [Struct(
            F("name", STRING, v="0-9"),
            F("topic_id", UUID, v="10+"),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("committed_offset", INT64),
                F("committed_leader_epoch", INT32, v="6+", default=-1),
                F("commit_timestamp", INT64, v="1", default=-1),
                F("committed_metadata", STRING, null="0+"),
                name="OffsetCommitRequestPartition",
            )]),
            name="OffsetCommitRequestTopic",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="3+"),
        F("topics", [Struct(
            F("name", STRING, v="0-9"),
            F("topic_id", UUID, v="10+"),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                name="OffsetCommitResponsePartition",
            )]),
            name="OffsetCommitResponseTopic",
        )]),
    ),
)
