"""AddPartitionsToTxn (key 24): we serve v0-3; flexible from v3.

A transactional producer names the partitions it is about to write to
before its first Produce to each of them (KIP-98); the coordinator adds them
to the ongoing transaction so that EndTxn knows where to write markers.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 has the same layout; its client understands PRODUCER_FENCED.
* v3 is the first flexible version.
* v4+ (KIP-890: brokers verifying batches of transactions, a top-level
  error code) are not served.

Kafka's JSON names the v0-3 fields ``V3AndBelowTransactionalId`` ... and
the response array ``ResultsByTopicV3AndBelow`` only because v4 moved them
into a per-transaction array. Serving v0-3 alone, we use the plain names
(kafka-python's aliases for the request do the same); names don't reach the
wire, and ``tests/protocol`` maps them when comparing with Kafka's JSON.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    24,
    "AddPartitionsToTxn",
    (0, 3),
    flexible=3,
    request=Struct(
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [INT32]),
            name="AddPartitionsToTxnTopic",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("results_by_topic", [Struct(
            F("name", STRING),
            F("results_by_partition", [Struct(
                F("partition_index", INT32),
                F("partition_error_code", INT16),
                name="AddPartitionsToTxnPartitionResult",
            )]),
            name="AddPartitionsToTxnTopicResult",
        )]),
    ),
)
