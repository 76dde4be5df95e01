"""ListOffsets (key 2): we serve v0-11; flexible from v6.

Version notes:

* v0 asks for up to ``max_num_offsets`` offsets before ``timestamp`` and is
  answered with ``old_style_offsets``, newest first (segment base offsets,
  led by the log end offset when asking for the latest, -1). From v1 exactly
  one ``offset`` is answered, with its ``timestamp``.
* v2 adds ``isolation_level`` (KIP-98) and ``throttle_time_ms``; v3 has the
  same layout (KIP-219 throttling).
* v4 adds ``current_leader_epoch`` for fencing and the answered
  ``leader_epoch`` (KIP-320); v5 has the same layout and may answer
  OFFSET_NOT_AVAILABLE.
* v6 is the first flexible version.
* v7 accepts timestamp -3, "the offset of the largest timestamp" (KIP-734);
  v8 accepts -4, "the local log start offset" (KIP-405). Same layout.
* v9 accepts -5, "the latest tiered offset" (KIP-1005); same layout.
* v10 adds ``timeout_ms`` at the end of the request, how long a broker may
  wait for tiered storage to answer (KIP-1075); the response is unchanged.
* v11 accepts -6, "the earliest offset pending upload" (KIP-1023); same
  layout.

Kafka 4.0 no longer serves v0 (KIP-896); we still do.
"""

from ..schema import INT8, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    2,
    "ListOffsets",
    (0, 11),
    flexible=6,
    request=Struct(
        F("replica_id", INT32),
        F("isolation_level", INT8, v="2+"),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("current_leader_epoch", INT32, v="4+", default=-1),
                F("timestamp", INT64),
                F("max_num_offsets", INT32, v="0", default=1),
                name="ListOffsetsPartition",
            )]),
            name="ListOffsetsTopic",
        )]),
        F("timeout_ms", INT32, v="10+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="2+"),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                F("old_style_offsets", [INT64], v="0"),
                F("timestamp", INT64, v="1+", default=-1),
                F("offset", INT64, v="1+", default=-1),
                F("leader_epoch", INT32, v="4+", default=-1),
                name="ListOffsetsPartitionResponse",
            )]),
            name="ListOffsetsTopicResponse",
        )]),
    ),
)
