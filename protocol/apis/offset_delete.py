"""OffsetDelete (key 47): we serve v0 (the only version; not flexible).

Deletes committed offsets of a group (KIP-496), e.g.
``kafka-consumer-groups --delete-offsets``: a group-level ``error_code`` and
one per partition.
"""

from ..schema import INT16, INT32, STRING, Api, F, Struct

API = Api(
    47,
    "OffsetDelete",
    (0, 0),
    flexible=None,
    request=Struct(
        F("group_id", STRING),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(F("partition_index", INT32), name="OffsetDeleteRequestPartition")]),
            name="OffsetDeleteRequestTopic",
        )]),
    ),
    response=Struct(
        F("error_code", INT16),
        F("throttle_time_ms", INT32),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                name="OffsetDeleteResponsePartition",
            )]),
            name="OffsetDeleteResponseTopic",
        )]),
    ),
)
