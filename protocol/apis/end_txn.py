"""EndTxn (key 26): we serve v0-4; flexible from v3.

A transactional producer commits (``committed`` true) or aborts its ongoing
transaction; the coordinator then writes a COMMIT or ABORT marker to every
partition of the transaction (KIP-98).

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 has the same layout; its client understands PRODUCER_FENCED.
* v3 is the first flexible version.
* v4 has the same layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890).
* v5 (KIP-890 part 2: a new epoch for every transaction, returned in the
  response) is not served.
"""

from ..schema import BOOL, INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    26,
    "EndTxn",
    (0, 4),
    flexible=3,
    request=Struct(
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("committed", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
)
