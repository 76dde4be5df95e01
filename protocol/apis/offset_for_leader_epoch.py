"""OffsetForLeaderEpoch (key 23): we serve v0-4; flexible from v4.

For each partition the client names a leader epoch; the answer is that
epoch's end offset (the start offset of the next larger epoch, or the log end
offset for the current one), which lets a follower or a consumer detect a log
truncation (KIP-101, KIP-320).

Version notes:

* v1 adds the answered ``leader_epoch``: the largest epoch not above the
  requested one, since the requested epoch may be unknown.
* v2 adds ``current_leader_epoch`` for fencing (KIP-320) and
  ``throttle_time_ms``.
* v3 adds ``replica_id``: -1 for a consumer, which must not see past the
  high watermark, and the default -2 for a debugging client that may. A
  request without the field (v0-2) is read as -2, as older followers need.
* v4 is the first flexible version.

Kafka 4.0 no longer serves v0-1 (KIP-896); we still do.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    23,
    "OffsetForLeaderEpoch",
    (0, 4),
    flexible=4,
    request=Struct(
        F("replica_id", INT32, v="3+", default=-2),
        F("topics", [Struct(
            F("topic", STRING),
            F("partitions", [Struct(
                F("partition", INT32),
                F("current_leader_epoch", INT32, v="2+", default=-1),
                F("leader_epoch", INT32),
                name="OffsetForLeaderPartition",
            )]),
            name="OffsetForLeaderTopic",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="2+"),
        F("topics", [Struct(
            F("topic", STRING),
            F("partitions", [Struct(
                F("error_code", INT16),
                F("partition", INT32),
                F("leader_epoch", INT32, v="1+", default=-1),
                F("end_offset", INT64, default=-1),
                name="EpochEndOffset",
            )]),
            name="OffsetForLeaderTopicResult",
        )]),
    ),
)
