"""DescribeQuorum (key 55): we serve v0-2; flexible from v0 (always).

Asks the KRaft metadata quorum (``__cluster_metadata`` partition 0) for its
leader, leader epoch, high watermark, voters and observers: what
``Admin.describeMetadataQuorum`` and ``kafka-metadata-quorum.sh describe``
show. The request names topics and partitions; only that one partition is
ever described.

Version notes (the request is the same in every version):

* v1 (KIP-836) adds each replica's ``last_fetch_timestamp`` and
  ``last_caught_up_timestamp`` (-1: unknown).
* v2 (KIP-853) adds the error messages (top level and per partition), each
  replica's ``replica_directory_id`` and ``nodes``: the listeners of each
  voter (name, host, port as an unsigned 16-bit integer).

The response has no ``throttle_time_ms``.
"""

from ..schema import INT16, INT32, INT64, STRING, UINT16, UUID, Api, F, Struct

_REPLICA_STATE = Struct(
    F("replica_id", INT32),
    F("replica_directory_id", UUID, v="2+"),
    F("log_end_offset", INT64),
    F("last_fetch_timestamp", INT64, v="1+", default=-1),
    F("last_caught_up_timestamp", INT64, v="1+", default=-1),
    name="ReplicaState",
)

API = Api(
    55,
    "DescribeQuorum",
    (0, 2),
    flexible=0,
    request=Struct(
        F("topics", [Struct(
            F("topic_name", STRING),
            F("partitions", [Struct(F("partition_index", INT32), name="PartitionData")]),
            name="TopicData",
        )]),
    ),
    response=Struct(
        F("error_code", INT16),
        F("error_message", STRING, v="2+", null="2+"),
        F("topics", [Struct(
            F("topic_name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, v="2+", null="2+"),
                F("leader_id", INT32),
                F("leader_epoch", INT32),
                F("high_watermark", INT64),
                F("current_voters", [_REPLICA_STATE]),
                F("observers", [_REPLICA_STATE]),
                name="PartitionData",
            )]),
            name="TopicData",
        )]),
        F("nodes", [Struct(
            F("node_id", INT32),
            F("listeners", [Struct(
                F("name", STRING),
                F("host", STRING),
                F("port", UINT16),
                name="Listener",
            )]),
            name="Node",
        )], v="2+"),
    ),
)
