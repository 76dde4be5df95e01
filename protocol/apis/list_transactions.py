"""ListTransactions (key 66): we serve v0-2; flexible from v0 (always).

The transactional ids a coordinator knows (KIP-664, ``kafka-transactions.sh
list``), filtered by state name and producer id; v1 (KIP-994) adds
``duration_filter``: only transactions open longer than that many ms; v2
(KIP-1152) adds ``transactional_id_pattern``, a Java regular expression the
whole transactional id must match (null or empty: no filter), answered
INVALID_REGULAR_EXPRESSION when it is not one.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    66,
    "ListTransactions",
    (0, 2),
    flexible=0,
    request=Struct(
        F("state_filters", [STRING]),
        F("producer_id_filters", [INT64]),
        F("duration_filter", INT64, v="1+", default=-1),
        F("transactional_id_pattern", STRING, v="2+", null="2+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("unknown_state_filters", [STRING]),
        F("transaction_states", [Struct(
            F("transactional_id", STRING),
            F("producer_id", INT64),
            F("transaction_state", STRING),
            name="TransactionState",
        )]),
    ),
)
