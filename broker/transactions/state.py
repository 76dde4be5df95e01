"""A transactional id's metadata, its states, and its records in ``__transaction_state``.

``TxnMetadata`` is what the coordinator knows of one ``transactional.id``
(Kafka's TransactionMetadata): the producer id and epoch it hands out, the
previous ones (so a retried InitProducerId is recognised), the transaction
timeout, the state and the partitions of the open transaction.

States carry Kafka's numbers, which are what the log stores:

    Empty -> Ongoing          (AddPartitionsToTxn / AddOffsetsToTxn)
    Ongoing -> PrepareCommit | PrepareAbort   (EndTxn, a timeout, a fencing InitProducerId)
    Prepare* -> Complete*     (every marker written)
    Complete* | Empty -> Empty (InitProducerId bumps the epoch) or Ongoing

Each change is written to ``__transaction_state`` before it takes effect:
the key is ``TransactionLogKey`` v0 (version int16 0, transactional id), the
value ``TransactionLogValue`` v0 (producer id, epoch, timeout, status,
partitions by topic, last update and start timestamps); a null value is a
forgotten (expired) id. Both are Kafka's layouts, declared with our schema
DSL, so Kafka's own tools can read the topic.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from protocol.codec import decode_struct, encode_struct
from protocol.messages import struct_class
from protocol.primitives import Reader
from protocol.schema import INT8, INT16, INT32, INT64, STRING, F, Struct

EPOCH_MAX = 32767  # Short.MAX_VALUE


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state (``PrepareCommit`` ...), as DescribeTransactions and ListTransactions give it."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @classmethod
    def by_kafka_name(cls, name: str) -> "TxnState | None":
        return next((s for s in cls if s.kafka_name == name), None)

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.EMPTY)


@attrs.define
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = attrs.field(factory=set)
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = -1
    last_producer_epoch: int = -1

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= EPOCH_MAX - 1

    def partitions_by_topic(self) -> dict[str, list[int]]:
        """The transaction's partitions as topic -> sorted partition indexes (how Kafka lists them)."""
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(index)
        return by_topic

    def value(self) -> Any:
        parts = [_Value.PartitionsSchema(topic=t, partition_ids=ids) for t, ids in self.partitions_by_topic().items()]
        return _Value(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                      transaction_timeout_ms=self.timeout_ms, transaction_status=int(self.state),
                      transaction_partitions=parts if self.state != TxnState.EMPTY else None,
                      transaction_last_update_timestamp_ms=self.last_update_ms,
                      transaction_start_timestamp_ms=self.start_ms)  # fmt: skip


TXN_KEY = Struct(F("transactional_id", STRING), name="TransactionLogKey")
TXN_VALUE = Struct(
    F("producer_id", INT64),
    F("producer_epoch", INT16),
    F("transaction_timeout_ms", INT32),
    F("transaction_status", INT8),
    F("transaction_partitions", [Struct(F("topic", STRING), F("partition_ids", [INT32]), name="PartitionsSchema")],
      null="0+"),  # fmt: skip
    F("transaction_last_update_timestamp_ms", INT64),
    F("transaction_start_timestamp_ms", INT64),
    name="TransactionLogValue",
)
_Key = struct_class(TXN_KEY)
_Value = struct_class(TXN_VALUE)


def key_bytes(transactional_id: str) -> bytes:
    return (0).to_bytes(2, "big") + encode_struct(TXN_KEY, 0, _Key(transactional_id))


def value_bytes(meta: TxnMetadata) -> bytes:
    return (0).to_bytes(2, "big") + encode_struct(TXN_VALUE, 0, meta.value())


def parse_key(data: bytes) -> str | None:
    """The transactional id of a record key; None for a key version we do not know."""
    if Reader(data).int16() != 0:
        return None
    return decode_struct(TXN_KEY, 0, memoryview(data)[2:]).transactional_id


def parse_value(transactional_id: str, data: bytes) -> TxnMetadata:
    """A record value back into metadata (v0, or v1's flexible layout; unknown tags are skipped)."""
    version = Reader(data).int16()
    if version not in (0, 1):
        raise ValueError(f"unknown transaction log value version {version}")
    v = decode_struct(TXN_VALUE, 0, memoryview(data)[2:], flexible=version >= 1)
    partitions = {(p.topic, i) for p in v.transaction_partitions or () for i in p.partition_ids}
    return TxnMetadata(transactional_id, v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                       TxnState(v.transaction_status), partitions, v.transaction_last_update_timestamp_ms,
                       v.transaction_start_timestamp_ms)  # fmt: skip
