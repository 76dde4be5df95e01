"""WriteTxnMarkers (key 27): we serve v0-2; flexible from v1.

The transaction coordinator's request to a partition leader (KIP-98): for
each marker (producer id and epoch, COMMIT when ``transaction_result`` is
true, ABORT otherwise, the coordinator's epoch) write a control batch ending
that producer's transaction in every partition listed. Admin clients send it
too (``Admin.abortTransaction``, ``kafka-transactions.sh abort``, KIP-664) to
end a hanging transaction. The response lists the errors per producer id,
topic and partition; it has no ``throttle_time_ms``.

Version notes:

* v1 has the v0 layout and is the first flexible version.
* v2 adds each marker's ``transaction_version`` (KIP-1228): 0 or 1 for
  Kafka's first transaction protocol, 2 for KIP-890 part 2, whose markers
  come with an epoch the coordinator has already bumped.
"""

from ..schema import BOOL, INT8, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    27,
    "WriteTxnMarkers",
    (0, 2),
    flexible=1,
    request=Struct(
        F("markers", [Struct(
            F("producer_id", INT64),
            F("producer_epoch", INT16),
            F("transaction_result", BOOL),
            F("topics", [Struct(
                F("name", STRING),
                F("partition_indexes", [INT32]),
                name="WritableTxnMarkerTopic",
            )]),
            F("coordinator_epoch", INT32),
            F("transaction_version", INT8, v="2+"),
            name="WritableTxnMarker",
        )]),
    ),
    response=Struct(
        F("markers", [Struct(
            F("producer_id", INT64),
            F("topics", [Struct(
                F("name", STRING),
                F("partitions", [Struct(
                    F("partition_index", INT32),
                    F("error_code", INT16),
                    name="WritableTxnMarkerPartitionResult",
                )]),
                name="WritableTxnMarkerTopicResult",
            )]),
            name="WritableTxnMarkerResult",
        )]),
    ),
)
