"""Fetch (key 1): we serve v0-12; flexible from v12.

Version notes:

* v0 and v1 clients read magic 0 only, v2 and v3 up to magic 1, v4 and
  later magic 2 (kafka-behaviour §2.1); the response gains
  ``throttle_time_ms`` in v1.
* v3 adds the request-wide ``max_bytes``; from v3 partitions are served in
  request order.
* v4 (KIP-98) adds ``isolation_level`` and, per partition,
  ``last_stable_offset`` and ``aborted_transactions``.
* v5 adds ``log_start_offset`` in both directions; v6 has the same layout.
* v7 (KIP-227) adds fetch sessions: ``session_id``/``session_epoch``,
  ``forgotten_topics_data`` and a top-level ``error_code``; v8 has the same
  layout (KIP-219 throttling).
* v9 adds ``current_leader_epoch`` for fencing (KIP-320); v10 allows zstd
  data (KIP-110).
* v11 (KIP-392) adds the client's ``rack_id`` and the
  ``preferred_read_replica`` answer.
* v12 is the first flexible version. For KRaft replication (KIP-595) it adds
  ``last_fetched_epoch``, the tagged request ``cluster_id`` and the tagged
  ``diverging_epoch`` and ``current_leader`` answers, plus ``snapshot_id``
  (KIP-630).

Kafka 4.0 no longer serves v0-3 (KIP-896); we still do.
"""

from ..schema import INT8, INT16, INT32, INT64, RECORDS, STRING, Api, F, Struct

API = Api(
    1,
    "Fetch",
    (0, 12),
    flexible=12,
    request=Struct(
        F("cluster_id", STRING, v="12+", null="12+", tag=0, default=None),
        F("replica_id", INT32, default=-1),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, v="3+", default=0x7FFFFFFF),
        F("isolation_level", INT8, v="4+"),
        F("session_id", INT32, v="7+"),
        F("session_epoch", INT32, v="7+", default=-1),
        F("topics", [Struct(
            F("topic", STRING),
            F("partitions", [Struct(
                F("partition", INT32),
                F("current_leader_epoch", INT32, v="9+", default=-1),
                F("fetch_offset", INT64),
                F("last_fetched_epoch", INT32, v="12+", default=-1),
                F("log_start_offset", INT64, v="5+", default=-1),
                F("partition_max_bytes", INT32),
                name="FetchPartition",
            )]),
            name="FetchTopic",
        )]),
        F("forgotten_topics_data", [Struct(
            F("topic", STRING),
            F("partitions", [INT32]),
            name="ForgottenTopic",
        )], v="7+"),
        F("rack_id", STRING, v="11+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("error_code", INT16, v="7+"),
        F("session_id", INT32, v="7+"),
        F("responses", [Struct(
            F("topic", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                F("high_watermark", INT64),
                F("last_stable_offset", INT64, v="4+", default=-1),
                F("log_start_offset", INT64, v="5+", default=-1),
                F("diverging_epoch", Struct(
                    F("epoch", INT32, default=-1),
                    F("end_offset", INT64, default=-1),
                    name="EpochEndOffset",
                ), v="12+", tag=0),
                F("current_leader", Struct(
                    F("leader_id", INT32, default=-1),
                    F("leader_epoch", INT32, default=-1),
                    name="LeaderIdAndEpoch",
                ), v="12+", tag=1),
                F("snapshot_id", Struct(
                    F("end_offset", INT64, default=-1),
                    F("epoch", INT32, default=-1),
                    name="SnapshotId",
                ), v="12+", tag=2),
                F("aborted_transactions", [Struct(
                    F("producer_id", INT64),
                    F("first_offset", INT64),
                    name="AbortedTransaction",
                )], v="4+", null="4+"),
                F("preferred_read_replica", INT32, v="11+", default=-1),
                F("records", RECORDS, null="0+"),
                name="PartitionData",
            )]),
            name="FetchableTopicResponse",
        )]),
    ),
)
