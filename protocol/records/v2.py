"""``RecordBatchView``: a zero-copy view over one magic-2 record batch.

The 61-byte header is read with one precompiled ``struct.Struct`` when the view
is made; the records region is not touched until iterated. The CRC-32C covers
``attributes`` to the end of the batch, so ``base_offset`` and
``partition_leader_epoch`` can be patched in place without touching it, while
``set_max_timestamp`` (which also changes the attributes' timestamp-type bit)
recomputes it. Patching needs a writable buffer (a memoryview of a bytearray
or mmap).

Iteration decompresses the records region as one stream when the codec is not
NONE (bounded by ``max_decompressed_size``), and under LogAppendTime every
record's timestamp is the batch ``max_timestamp`` (Kafka ignores the deltas).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import crc32c

from ..errors import CorruptRecordError
from ._model import Codec, Record, TimestampType, codec_from_id
from ._v2_records import RecordTuple, decode_record_tuples
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress

HEADER = struct.Struct(
    ">"
    "q"  # base_offset => int64: offset of the first record
    "i"  # batch_length => int32: bytes after this field
    "i"  # partition_leader_epoch => int32, stamped by the leader (-1 = none)
    "b"  # magic => int8, always 2 here
    "I"  # crc => uint32, CRC-32C over attributes..end of batch
    "h"  # attributes => int16 (codec, timestamp type, transactional, control, delete horizon)
    "i"  # last_offset_delta => int32
    "q"  # base_timestamp => int64 (the delete horizon when attributes bit 6 is set)
    "q"  # max_timestamp => int64
    "q"  # producer_id => int64 (-1 = none)
    "h"  # producer_epoch => int16 (-1 = none)
    "i"  # base_sequence => int32 (-1 = none)
    "i"  # records_count => int32
)
RECORD_BATCH_OVERHEAD = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length
PARTITION_LEADER_EPOCH_OFFSET = struct.calcsize(">qi")
MAGIC_OFFSET = struct.calcsize(">qii")
CRC_OFFSET = MAGIC_OFFSET + 1
ATTRIBUTES_OFFSET = CRC_OFFSET + 4
MAX_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhiq")

CODEC_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def as_byte_view(buffer) -> memoryview:
    """A flat unsigned-byte memoryview over any buffer."""
    mv = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _field(index: int, doc: str) -> property:
    return property(lambda self: self._h[index], doc=doc)


class RecordBatchView:
    """One v2 batch, starting at its 12-byte offset/length prefix."""

    __slots__ = ("_buf", "_h")

    def __init__(self, buffer) -> None:
        mv = as_byte_view(buffer)
        if len(mv) < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"record batch truncated: {len(mv)} bytes, header needs 61")
        header = HEADER.unpack_from(mv, 0)
        size = header[1] + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"record batch size {size} is smaller than its 61-byte header")
        if size > len(mv):
            raise CorruptRecordError(f"record batch truncated: size {size}, only {len(mv)} bytes")
        if header[3] != 2:
            raise CorruptRecordError(f"not a v2 record batch (magic {header[3]})")
        self._buf = mv if size == len(mv) else mv[:size]
        self._h = header

    base_offset = _field(0, "Offset of the first record.")
    batch_length = _field(1, "Bytes after the batch_length field.")
    partition_leader_epoch = _field(2, "Leader epoch stamped by the broker.")
    magic = _field(3, "Always 2.")
    crc = _field(4, "Stored CRC-32C.")
    attributes = _field(5, "Raw int16 attributes.")
    last_offset_delta = _field(6, "last_offset - base_offset.")
    base_timestamp = _field(7, "First timestamp (or delete horizon when bit 6 is set).")
    max_timestamp = _field(8, "Max record timestamp, or the append time under LogAppendTime.")
    producer_id = _field(9, "Producer id (-1 = none).")
    producer_epoch = _field(10, "Producer epoch (-1 = none).")
    base_sequence = _field(11, "First sequence number (-1 = none).")
    records_count = _field(12, "Declared number of records.")

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (exactly ``size_in_bytes`` long)."""
        return self._buf

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1

    @property
    def size_in_bytes(self) -> int:
        return self._h[1] + LOG_OVERHEAD

    @property
    def compression(self) -> Codec:
        return codec_from_id(self._h[5] & CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self._h[5] & TIMESTAMP_TYPE_FLAG:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._h[5] & DELETE_HORIZON_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self._h[7] if self._h[5] & DELETE_HORIZON_FLAG else None

    def __repr__(self) -> str:
        return (
            f"RecordBatchView(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"records_count={self.records_count}, size_in_bytes={self.size_in_bytes}, "
            f"attributes={self.attributes:#x})"
        )

    # -- CRC -------------------------------------------------------------------

    def compute_crc(self) -> int:
        """CRC-32C of attributes..end, as Kafka computes it."""
        return crc32c.crc32c(self._buf[ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        """Size at least the header and stored CRC matches."""
        return self.size_in_bytes >= RECORD_BATCH_OVERHEAD and self._h[4] == self.compute_crc()

    def ensure_valid(self) -> None:
        """Raise ``CorruptRecordError`` unless ``is_valid()``."""
        if not self.is_valid():
            raise CorruptRecordError(
                f"Record batch is corrupt (stored crc = {self._h[4]}, computed crc = {self.compute_crc()})"
            )

    # -- patching (needs a writable buffer) ------------------------------------------

    def set_base_offset(self, base_offset: int) -> None:
        """Rewrite base_offset in place; not covered by the CRC."""
        _INT64.pack_into(self._buf, 0, base_offset)
        self._h = HEADER.unpack_from(self._buf, 0)

    def set_last_offset(self, last_offset: int) -> None:
        """Set base_offset so that the batch ends at ``last_offset`` (Kafka's setLastOffset)."""
        self.set_base_offset(last_offset - self._h[6])

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Rewrite partition_leader_epoch in place; not covered by the CRC."""
        _INT32.pack_into(self._buf, PARTITION_LEADER_EPOCH_OFFSET, epoch)
        self._h = HEADER.unpack_from(self._buf, 0)

    def set_max_timestamp(self, max_timestamp: int, timestamp_type: TimestampType) -> None:
        """Set max_timestamp and the timestamp-type bit, then recompute the CRC."""
        attributes = self._h[5] & ~TIMESTAMP_TYPE_FLAG
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_FLAG
        _INT16.pack_into(self._buf, ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(self._buf, MAX_TIMESTAMP_OFFSET, max_timestamp)
        _UINT32.pack_into(self._buf, CRC_OFFSET, self.compute_crc())
        self._h = HEADER.unpack_from(self._buf, 0)

    # -- records ---------------------------------------------------------------

    @property
    def records_section(self) -> memoryview:
        """The records region as stored (compressed if the batch is)."""
        return self._buf[RECORD_BATCH_OVERHEAD:]

    def records_payload(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        """The records region as bytes, decompressed if the batch is compressed."""
        raw = self.records_section
        codec = self.compression
        if codec is Codec.NONE:
            return bytes(raw)
        return decompress(codec, raw, magic=2, max_size=max_decompressed_size)

    def records_readable(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE):
        """The records region to read: in place (a memoryview, nothing copied) when uncompressed,
        else decompressed bytes."""
        if self.compression is Codec.NONE:
            return self.records_section
        return self.records_payload(max_decompressed_size=max_decompressed_size)

    def iter_tuples(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[RecordTuple]:
        """Fast path: ``(offset, timestamp, key, value, headers, attributes)`` tuples."""
        h = self._h
        data = self.records_payload(max_decompressed_size=max_decompressed_size)
        append_time = h[8] if h[5] & TIMESTAMP_TYPE_FLAG else None
        return decode_record_tuples(data, h[12], h[0], h[7], append_time)

    def iter_records(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
        """Lazily yield ``Record`` objects; malformed records raise ``InvalidRecordError``."""
        make = Record
        for t in self.iter_tuples(max_decompressed_size=max_decompressed_size):
            yield make(*t)

    def __iter__(self) -> Iterator[Record]:
        return self.iter_records()
