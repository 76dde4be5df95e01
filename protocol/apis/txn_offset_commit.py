"""TxnOffsetCommit (key 28): we serve v0-5; flexible from v3.

A transactional producer commits consumer offsets as part of its
transaction: the group coordinator writes them to ``__consumer_offsets`` as
a transactional batch, visible only once the transaction's COMMIT marker is
written (KIP-98).

Version notes:

* v1 has the v0 layout (KIP-219 throttling).
* v2 adds ``committed_leader_epoch`` per partition (KIP-320).
* v3 is the first flexible version and adds ``generation_id``,
  ``member_id`` and ``group_instance_id`` so the coordinator can fence
  zombie group members (KIP-447).
* v4 has the same layout; its client understands TRANSACTION_ABORTABLE
  (KIP-890).
* v5 has the same layout (KIP-890 part 2): the broker itself adds the
  group's offsets partition to the transaction, so a producer on
  transaction protocol v2 sends no AddOffsetsToTxn.
"""

from ..schema import INT16, INT32, INT64, STRING, Api, F, Struct

API = Api(
    28,
    "TxnOffsetCommit",
    (0, 5),
    flexible=3,
    request=Struct(
        F("transactional_id", STRING),
        F("group_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("generation_id", INT32, v="3+", default=-1),
        F("member_id", STRING, v="3+"),
        F("group_instance_id", STRING, v="3+", null="3+", default=None),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("committed_offset", INT64),
                F("committed_leader_epoch", INT32, v="2+", default=-1),
                F("committed_metadata", STRING, null="0+"),
                name="TxnOffsetCommitRequestPartition",
            )]),
            name="TxnOffsetCommitRequestTopic",
        )]),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("topics", [Struct(
            F("name", STRING),
            F("partitions", [Struct(
                F("partition_index", INT32),
                F("error_code", INT16),
                name="TxnOffsetCommitResponsePartition",
            )]),
            name="TxnOffsetCommitResponseTopic",
        )]),
    ),
)
