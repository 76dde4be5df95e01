"""AddOffsetsToTxn (key 25): we serve v0-4; flexible from v3.

A transactional producer that will commit consumer offsets with the
transaction (``send_offsets_to_transaction``) first names the group: the
coordinator adds the group's ``__consumer_offsets`` partition to the
transaction, and TxnOffsetCommit then goes to the group coordinator.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 has the same layout; its client understands PRODUCER_FENCED.
* v3 is the first flexible version.
* v4 has the same layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890).
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    25,
    "AddOffsetsToTxn",
    (0, 4),
    flexible=3,
    request=Struct(
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("group_id", STRING),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
)
