"""DescribeProducers (key 61): we serve v0; flexible from v0 (always).

The active producers of each partition asked for (KIP-664, what
``kafka-transactions.sh describe-producers`` shows): producer id and epoch,
the last sequence and timestamp written, the transaction coordinator's epoch
and the first offset of an open transaction (-1 when none).
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    61,
    "DescribeProducers",
    (0, 0),
    flexible=0,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING),
            F("partition_indexes", [INT32]),
            name="TopicRequest",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, null="0+", default=None),
                F("active_producers", [Struct(
                    F("producer_id", INT64),
                    F("producer_epoch", INT32),
                    F("last_sequence", INT32, default=-1),
                    F("last_timestamp", INT64, default=-1),
                    F("coordinator_epoch", INT32),
                    F("current_txn_start_offset", INT64, default=-1),
                    name="ProducerState",
                )]),
                name="PartitionResponse",
            )]),
            name="TopicResponse",
        )]),
    ),
)
