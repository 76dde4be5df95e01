"""Metadata (key 3): we serve v0-13; flexible from v9.

Version notes:

* v0: an empty ``topics`` list asks for every topic. From v1 the list may be
  null, and null means every topic while an empty list means none.
* v1 adds each broker's ``rack``, the ``controller_id`` and each topic's
  ``is_internal``; v2 adds ``cluster_id``; v3 adds ``throttle_time_ms``.
* v4 adds ``allow_auto_topic_creation`` (true unless the client says no).
* v5 adds ``offline_replicas`` per partition; v6 has the same layout (KIP-219
  throttling).
* v7 adds the partition ``leader_epoch`` (KIP-320).
* v8 (KIP-430) lets the client ask for authorized-operation bit sets, for
  topics and for the cluster (INT32 -2147483648 means "not computed").
* v9 is the first flexible version.
* v10 adds ``topic_id`` (KIP-516) and lets a requested topic name be null,
  though brokers only honour lookup by id from v12.
* v11 drops the cluster's authorized operations (moved to DescribeCluster,
  KIP-700); v12 lets a response topic name be null.
* v13 adds a top-level ``error_code`` to the response (KIP-1102), which lets
  a broker tell the client to re-bootstrap (REBOOTSTRAP_REQUIRED).
"""

from ..schema import BOOL, INT16, INT32, STRING, UUID, Api, F, Struct

_NO_OPERATIONS = -2147483648

API = Api(
    3,
    "Metadata",
    (0, 13),
    flexible=9,
    request=Struct(
        F("topics", [Struct(
            F("topic_id", UUID, v="10+"),
            F("name", STRING, null="10+"),
            name="MetadataRequestTopic",
        )], null="1+"),
        F("allow_auto_topic_creation", BOOL, v="4+", default=True),
        F("include_cluster_authorized_operations", BOOL, v="8-10"),
        F("include_topic_authorized_operations", BOOL, v="8+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="3+"),
        F("brokers", [Struct(
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, v="1+", null="1+", default=None),
            name="MetadataResponseBroker",
        )]),
        F("cluster_id", STRING, v="2+", null="2+", default=None),
        F("controller_id", INT32, v="1+", default=-1),
        F("topics", [Struct(
            F("error_code", INT16),
            F("name", STRING, null="12+"),
            F("topic_id", UUID, v="10+"),
            F("is_internal", BOOL, v="1+"),
            F("partitions", [Struct(
                F("error_code", INT16),
                F("partition_index", INT32),
                F("leader_id", INT32),
                F("leader_epoch", INT32, v="7+", default=-1),
                F("replica_nodes", [INT32]),
                F("isr_nodes", [INT32]),
                F("offline_replicas", [INT32], v="5+"),
                name="MetadataResponsePartition",
            )]),
            F("topic_authorized_operations", INT32, v="8+", default=_NO_OPERATIONS),
            name="MetadataResponseTopic",
        )]),
        F("cluster_authorized_operations", INT32, v="8-10", default=_NO_OPERATIONS),
        F("error_code", INT16, v="13+"),
    ),
)
