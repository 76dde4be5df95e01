"""DescribeTransactions (key 65): we serve v0; flexible from v0 (always).

The coordinator's view of transactional ids (KIP-664, what
``kafka-transactions.sh describe`` shows): state name, timeout, start time
of the open transaction, producer id and epoch, and its partitions by topic.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    65,
    "DescribeTransactions",
    (0, 0),
    flexible=0,
    request=Struct(F("transactional_ids", [STRING])),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("transaction_states", [Struct(
            F("error_code", INT16),
            F("transactional_id", STRING),
            F("transaction_state", STRING),
            F("transaction_timeout_ms", INT32),
            F("transaction_start_time_ms", INT64),
            F("producer_id", INT64),
            F("producer_epoch", INT16),
            F("topics", [Struct(F("topic", STRING), F("partitions", [INT32]), name="TopicData")]),
            name="TransactionState",
        )]),
    ),
)
