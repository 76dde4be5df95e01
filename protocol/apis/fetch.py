"""Fetch (key 1): we serve v0-18; flexible from v12.

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
* v13 (KIP-516) names topics by ``topic_id`` instead of name, in the request,
  its forgotten topics and the response; v14 has the same layout (KIP-405's
  tiered-storage error).
* v15 (KIP-903) moves the follower's ``replica_id`` into the tagged
  ``replica_state`` (with its epoch); v16 (KIP-951) adds the tagged
  ``node_endpoints`` answer for leader changes.
* v17 (KIP-853) adds the follower's tagged ``replica_directory_id``, v18
  (KIP-1166) the follower's tagged ``high_watermark``, per partition.

Kafka 4.0 no longer serves v0-3 (KIP-896); we still do.
"""

from ..schema import INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Api, F, Struct

API = Api(
    1,
    "Fetch",
    (0, 18),
    flexible=12,
    request=Struct(
        F("cluster_id", STRING, v="12+", null="12+", tag=0, default=None),
        F("replica_id", INT32, v="0-14", default=-1),
        F("replica_state", Struct(
            F("replica_id", INT32, default=-1),
            F("replica_epoch", INT64, default=-1),
            name="ReplicaState",
        ), v="15+", tag=1),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, v="3+", default=0x7FFFFFFF),
        F("isolation_level", INT8, v="4+"),
        F("session_id", INT32, v="7+"),
        F("session_epoch", INT32, v="7+", default=-1),
        F("topics", [Struct(
            F("topic", STRING, v="0-12"),
            F("topic_id", UUID, v="13+"),
            F("partitions", [Struct(
                F("partition", INT32),
                F("current_leader_epoch", INT32, v="9+", default=-1),
                F("fetch_offset", INT64),
                F("last_fetched_epoch", INT32, v="12+", default=-1),
                F("log_start_offset", INT64, v="5+", default=-1),
                F("partition_max_bytes", INT32),
                F("replica_directory_id", UUID, v="17+", tag=0),
                F("high_watermark", INT64, v="18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
                name="FetchPartition",
            )]),
            name="FetchTopic",
        )]),
        F("forgotten_topics_data", [Struct(
            F("topic", STRING, v="7-12"),
            F("topic_id", UUID, v="13+"),
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
            F("topic", STRING, v="0-12"),
            F("topic_id", UUID, v="13+"),
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
        F("node_endpoints", [Struct(
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, null="16+", default=None),
            name="NodeEndpoint",
        )], v="16+", tag=0),
    ),
)
