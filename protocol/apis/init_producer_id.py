"""InitProducerId (key 22): we serve v0-5; flexible from v2.

Hands an idempotent or transactional producer its ``producer_id`` and
``producer_epoch`` (KIP-98); a null ``transactional_id`` asks for an
idempotent-only id.

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 is the first flexible version.
* v3 (KIP-360) adds the producer's current ``producer_id`` and
  ``producer_epoch`` (-1 when it has none) so it can bump its epoch after
  an error instead of being fenced.
* v4 has the same layout; its client understands PRODUCER_FENCED.
* v5 has the same layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890). (v6, two-phase commit (KIP-939), is unstable in Kafka 4.3 and
  not served.)
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    22,
    "InitProducerId",
    (0, 5),
    flexible=2,
    request=Struct(
        F("transactional_id", STRING, null="0+"),
        F("transaction_timeout_ms", INT32),
        F("producer_id", INT64, v="3+", default=-1),
        F("producer_epoch", INT16, v="3+", default=-1),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, default=-1),
        F("producer_epoch", INT16),
    ),
)
