"""DeleteTopics (key 20): we serve v0-6; flexible from v4.

Version notes:

* v0-5 name the topics in the flat ``topic_names`` list.
* v1 adds ``throttle_time_ms``; v2 has the same layout (KIP-219
  throttling); v3 may answer TOPIC_DELETION_DISABLED.
* v4 is the first flexible version.
* v5 adds a per-topic ``error_message`` and may answer
  THROTTLING_QUOTA_EXCEEDED (KIP-599).
* v6 (KIP-516) replaces ``topic_names`` with ``topics``, each named by
  ``name`` or by ``topic_id`` (the other left null/zero); the answer carries
  both and its ``name`` may be null.

Kafka 4.0 no longer serves v0 (KIP-896); we still do.
"""

from ..schema import INT16, INT32, STRING, UUID, Api, F, Struct

API = Api(
    20,
    "DeleteTopics",
    (0, 6),
    flexible=4,
    request=Struct(
        F("topics", [Struct(
            F("name", STRING, null="6+", default=None),
            F("topic_id", UUID),
            name="DeleteTopicState",
        )], v="6+"),
        F("topic_names", [STRING], v="0-5"),
        F("timeout_ms", INT32),
    ),
    response=Struct(
        F("throttle_time_ms", INT32, v="1+"),
        F("responses", [Struct(
            F("name", STRING, null="6+"),
            F("topic_id", UUID, v="6+"),
            F("error_code", INT16),
            F("error_message", STRING, v="5+", null="5+", default=None),
            name="DeletableTopicResult",
        )]),
    ),
)
