"""Produce (key 0): we serve v0-13; flexible from v9.

Version notes:

* v0 and v1 carry magic 0 message sets, v2 magic 1, v3 and later magic 2
  record batches (kafka-behaviour §2.1).
* The response gains ``throttle_time_ms`` in v1 and ``log_append_time_ms``
  in v2.
* v3 adds ``transactional_id`` (KIP-98). v4 has the same layout but the
  client must handle KAFKA_STORAGE_ERROR.
* v5 adds ``log_start_offset`` to the response, so an idempotent producer
  can tell a log trimmed by retention from a real sequence gap; v6 has the
  same layout (KIP-219 throttling); v7 allows zstd batches (KIP-110).
* v8 (KIP-467) adds ``record_errors`` and ``error_message`` so a rejected
  batch can name the offending records.
* v9 is the first flexible version; v10 (KIP-951) adds the tagged
  ``current_leader`` per partition and ``node_endpoints`` so a client can
  follow a leader change without a Metadata round trip.
* v11 has the v10 layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890).
* v12 has the v11 layout (KIP-890 part 2): from it a transactional produce
  also adds its partitions to the producer's transaction, so a producer on
  transaction protocol v2 sends no AddPartitionsToTxn.
* v13 names each topic by ``topic_id`` instead of ``name``, in the request
  and in the response (KIP-516).

A request with ``acks`` 0 gets no response at all. Kafka 4.0 rejects v0-2
(KIP-896) while still advertising them (KAFKA-18659); we serve them.
"""

from ..schema import INT16, INT32, INT64, RECORDS, STRING, UUID, Api, F, Struct

API = Api(
    0,
    "Produce",
    (0, 13),
    flexible=9,
    request=Struct(
        F("transactional_id", STRING, v="3+", null="3+", default=None),
        F("acks", INT16),
        F("timeout_ms", INT32),
        F("topic_data", [Struct(
            F("name", STRING, v="0-12"),
            F("topic_id", UUID, v="13+"),
            F("partition_data", [Struct(
                F("index", INT32),
                F("records", RECORDS, null="0+"),
                name="PartitionProduceData",
            )]),
            name="TopicProduceData",
        )]),
    ),
    response=Struct(
        F("responses", [Struct(
            F("name", STRING, v="0-12"),
            F("topic_id", UUID, v="13+"),
            F("partition_responses", [Struct(
                F("index", INT32),
                F("error_code", INT16),
                F("base_offset", INT64),
                F("log_append_time_ms", INT64, v="2+", default=-1),
                F("log_start_offset", INT64, v="5+", default=-1),
                F("record_errors", [Struct(
                    F("batch_index", INT32),
                    F("batch_index_error_message", STRING, null="8+", default=None),
                    name="BatchIndexAndErrorMessage",
                )], v="8+"),
                F("error_message", STRING, v="8+", null="8+", default=None),
                F("current_leader", Struct(
                    F("leader_id", INT32, default=-1),
                    F("leader_epoch", INT32, default=-1),
                    name="LeaderIdAndEpoch",
                ), v="10+", tag=0),
                name="PartitionProduceResponse",
            )]),
            name="TopicProduceResponse",
        )]),
        F("throttle_time_ms", INT32, v="1+"),
        F("node_endpoints", [Struct(
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, null="10+", default=None),
            name="NodeEndpoint",
        )], v="10+", tag=0),
    ),
)
