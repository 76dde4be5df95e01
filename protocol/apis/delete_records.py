"""DeleteRecords (key 21): we serve v0-2; flexible from v2.

Moves each partition's log start offset up to ``offset`` (-1 means the high
watermark), KIP-107; the answer is the new ``low_watermark``.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 is the first flexible version.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    21,
    "DeleteRecords",
    (0, 2),
    flexible=2,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("offset", INT64),
                name="DeleteRecordsPartition",
            )]),
            name="DeleteRecordsTopic",
        )]),
        F("timeout_ms", INT32),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("low_watermark", INT64),
                F("error_code", INT16),
                name="DeleteRecordsPartitionResult",
            )]),
            name="DeleteRecordsTopicResult",
        )]),
    ),
)
