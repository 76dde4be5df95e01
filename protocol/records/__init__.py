"""Kafka record formats v0, v1 and v2: views, iteration, builders and codecs (sans-IO).

* ``iter_batches(buffer)`` walks concatenated log entries of any magic and
  yields ``RecordBatchView`` (v2) or ``LegacyBatchView`` (v0/v1) over each
  complete entry, sharing one interface (offsets, sizes, codec, timestamps,
  CRC checks, in-place patching, record iteration);
* ``RecordBatchBuilder`` writes a v2 batch or a legacy message set;
* ``compress``/``decompress`` implement Kafka's codecs, bounded on decompress;
* ``Record`` is the decoded record of every format; ``is_tombstone`` is the
  shared delete-marker rule (null value or the KIP-87 attributes flag).
"""

from ._model import TOMBSTONE_FLAG, Codec, Record, TimestampType, codec_from_id, is_tombstone
from .batches import (
    HEADER_SIZE_UP_TO_MAGIC, Batch, is_single_v2_batch, iter_batches, next_entry_size, peek_magic, valid_bytes,
)
from .builder import RecordBatchBuilder
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, compress, decompress
from ._downconvert_runs import set_accelerated
from .convert import DownConverted, down_convert, legacy_to_v2_batch, legacy_to_v2_batches, upgrade_to_v2
from .legacy import LegacyBatchView
from .v2 import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, RecordBatchView

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "HEADER_SIZE_UP_TO_MAGIC",
    "LOG_OVERHEAD",
    "RECORD_BATCH_OVERHEAD",
    "TOMBSTONE_FLAG",
    "Batch",
    "Codec",
    "LegacyBatchView",
    "Record",
    "RecordBatchBuilder",
    "RecordBatchView",
    "TimestampType",
    "codec_from_id",
    "compress",
    "decompress",
    "is_tombstone",
    "is_single_v2_batch",
    "iter_batches",
    "next_entry_size",
    "peek_magic",
    "valid_bytes",
    "DownConverted",
    "down_convert",
    "set_accelerated",
    "legacy_to_v2_batch",
    "legacy_to_v2_batches",
    "upgrade_to_v2",
]
