"""DescribeLogDirs (key 35): we serve v0-5; flexible from v2.

Lists each log directory of the broker with the partitions it holds and their
sizes in bytes (what ``kafka-log-dirs.sh`` and the topic pages of Kafka web
UIs show). A null ``topics`` asks for every partition, an empty list for none.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 is the first flexible version.
* v3 adds the top-level ``error_code``.
* v4 adds each volume's ``total_bytes`` and ``usable_bytes`` (KIP-827).
* v5 adds ``is_cordoned`` (KIP-1066).
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    35,
    "DescribeLogDirs",
    (0, 5),
    flexible=2,
    request=Struct(
        F("topics", [Struct(
            F("topic", STRING),
            F("partitions", [INT32]),
            name="DescribableLogDirTopic",
        )], null="0+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16, v="3+", default=0),
        F("results", [Struct(
            F("error_code", INT16),
            F("log_dir", STRING),
            F("topics", [Struct(
                F("name", STRING),
                F("partitions", [Struct(
                    F("partition_index", INT32),
                    F("partition_size", INT64),
                    F("offset_lag", INT64),
                    F("is_future_key", BOOL),
                    name="DescribeLogDirsPartition",
                )]),
                name="DescribeLogDirsTopic",
            )]),
            F("total_bytes", INT64, v="4+", default=-1),
            F("usable_bytes", INT64, v="4+", default=-1),
            F("is_cordoned", BOOL, v="5+", default=False),
            name="DescribeLogDirsResult",
        )]),
    ),
)
