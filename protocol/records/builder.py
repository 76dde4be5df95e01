"""``RecordBatchBuilder``: records in, the bytes of one v2 batch or a legacy message set out.

Magic 2: one batch. ``base_timestamp`` is the first record's timestamp, or the
delete horizon (attributes bit 6) when one is given; each record stores its
timestamp and offset as deltas from ``base_timestamp``/``base_offset``;
``max_timestamp`` is the largest record timestamp (or ``log_append_time`` under
LogAppendTime); the CRC-32C is computed last. ``RecordBatchBuilder.empty_batch``
writes the header-only batch the cleaner keeps (count 0, base_timestamp -1).

Magic 0/1: uncompressed, one message per record with its absolute offset;
compressed, one wrapper message whose value is the compressed inner set (see
``_legacy_writer``). zstd needs magic 2; headers and producer state need
magic 2 (Kafka's builder refuses them too).
"""

from __future__ import annotations

from collections.abc import Sequence

import crc32c

from ..errors import InvalidRecordError
from . import _downconvert_runs
from ._accel import BUILT_ENCODE_ROWS
from ._legacy_writer import build_legacy
from ._model import Codec, TimestampType
from ._v2_records import encode_record, encode_rows
from .compression import check_codec, compress
from .v2 import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG,
    HEADER,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
)
from .varint import java_long


def _v2_attributes(codec: int, timestamp_type: int, transactional: bool, control: bool, horizon: bool) -> int:
    attributes = int(codec)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_FLAG
    if transactional:
        attributes |= TRANSACTIONAL_FLAG
    if control:
        attributes |= CONTROL_FLAG
    if horizon:
        attributes |= DELETE_HORIZON_FLAG
    return attributes


def write_v2_batch(header_fields: tuple, records: bytes) -> bytes:
    """Header fields (crc and batch_length ignored) + encoded records -> batch bytes with CRC."""
    out = bytearray(HEADER.size + len(records))
    fields = list(header_fields)
    fields[1] = len(out) - LOG_OVERHEAD
    fields[4] = 0
    HEADER.pack_into(out, 0, *fields)
    out[HEADER.size :] = records
    crc = crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[CRC_OFFSET : CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return bytes(out)


class RecordBatchBuilder:
    """Accumulate records with ``append`` then ``build()`` the bytes."""

    def __init__(
        self,
        magic: int = 2,
        compression: Codec = Codec.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        base_offset: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = -1,
        delete_horizon_ms: int | None = None,
        *,
        log_append_time: int | None = None,
        compression_level: int | None = None,
    ) -> None:
        if magic not in (0, 1, 2):
            raise InvalidRecordError(f"unknown magic {magic}")
        self.compression = check_codec(compression, magic)
        if magic < 2 and (producer_id != -1 or is_transactional or is_control or delete_horizon_ms is not None):
            raise InvalidRecordError(f"magic {magic} has no producer state, control or delete horizon")
        self.magic = magic
        self.timestamp_type = TimestampType(timestamp_type)
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.delete_horizon_ms = delete_horizon_ms
        self.log_append_time = log_append_time
        self.compression_level = compression_level
        self._records: list[tuple] = []
        self._last_offset = base_offset - 1
        self._buf = bytearray()
        self._base_timestamp: int | None = delete_horizon_ms
        self._max_timestamp = -1

    def __len__(self) -> int:
        return len(self._records)

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        timestamp: int,
        headers: Sequence[tuple[str, bytes | None]] = (),
        offset: int | None = None,
        attributes: int = 0,
    ) -> int:
        """Add a record (offsets must increase); returns its absolute offset."""
        if offset is None:
            offset = self._last_offset + 1
        elif offset <= self._last_offset:
            raise InvalidRecordError(f"offset {offset} does not follow previous offset {self._last_offset}")
        if self.magic < 2 and headers:
            raise InvalidRecordError(f"magic {self.magic} does not support record headers")
        self._last_offset = offset
        self._max_timestamp = max(self._max_timestamp, timestamp)
        if self.magic == 2:
            if self._base_timestamp is None:
                self._base_timestamp = timestamp
            encode_record(
                self._buf, offset - self.base_offset, java_long(timestamp - self._base_timestamp),
                key, value, headers, attributes,
            )  # fmt: skip
        self._records.append((offset, timestamp, key, value))
        return offset

    def has_room_for(self, key: bytes | None, value: bytes | None, *, timestamp: int, limit: int) -> bool:
        """Would a v2 batch with this record appended next stay within ``limit`` bytes, uncompressed? An empty
        builder always has room, so one record over the limit still gets a batch of its own (Kafka's
        ``MemoryRecordsBuilder.hasRoomFor``)."""
        if not self._records:
            return True
        base = self._base_timestamp if self._base_timestamp is not None else timestamp
        record = bytearray()
        encode_record(record, self._last_offset + 1 - self.base_offset, java_long(timestamp - base), key, value, (), 0)
        return HEADER.size + len(self._buf) + len(record) <= limit

    def extend(self, rows: list[tuple]) -> None:
        """``append`` each of ``(offset, timestamp, key, value, headers, attributes)``, encoded in bulk for magic 2."""
        if self.magic == 2 and rows and self._extend_c(rows, None, None):
            return
        if self.magic < 2 or not rows or any(r[4] for r in rows):
            for offset, timestamp, key, value, headers, attributes in rows:
                self.append(key, value, timestamp=timestamp, headers=headers, offset=offset, attributes=attributes)
            return
        previous = self._last_offset
        for row in rows:
            if row[0] <= previous:
                raise InvalidRecordError(f"offset {row[0]} does not follow previous offset {previous}")
            previous = row[0]
        if self._base_timestamp is None:
            self._base_timestamp = rows[0][1]
        encode_rows(self._buf, rows, self.base_offset, self._base_timestamp)
        self._last_offset = previous
        self._max_timestamp = max(self._max_timestamp, max(r[1] for r in rows))
        self._records.extend(rows)

    def extend_renumbered(self, rows: list[tuple], timestamp: int | None = None) -> None:
        """``extend`` with the rows given the next offsets in turn (their own are not looked at) and, unless
        None, ``timestamp`` for each (an up-conversion's rows under LogAppendTime)."""
        if self.magic == 2 and rows and self._extend_c(rows, self._last_offset + 1, timestamp):
            return
        first = self._last_offset + 1
        self.extend([(first + i, ts if timestamp is None else timestamp, key, value, headers, attributes)
                     for i, (_, ts, key, value, headers, attributes) in enumerate(rows)])  # fmt: skip

    def _extend_c(self, rows: list[tuple], first: int | None, timestamp: int | None) -> bool:
        """``extend`` (``extend_renumbered`` from ``first``) of rows without headers by the accelerator;
        False when it is off or declines the rows (then nothing was written)."""
        c_encode = _downconvert_runs.accelerated(BUILT_ENCODE_ROWS)
        base = self._base_timestamp
        if base is None:
            base = rows[0][1] if timestamp is None else timestamp
        if c_encode is None or not isinstance(rows, list) or not isinstance(base, int):
            return False
        try:
            done = c_encode(self._buf, rows, self.base_offset, base, self._last_offset, first, timestamp)
        except OverflowError:  # an offset or base timestamp past 64 bits: the Python path decides
            return False
        if done is None:
            return False
        self._base_timestamp = base
        self._last_offset, top = done
        self._max_timestamp = max(self._max_timestamp, top)
        self._records.extend(rows)  # a v2 builder only counts them
        return True

    @property
    def max_timestamp(self) -> int:
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME and self.log_append_time is not None:
            return self.log_append_time
        return self._max_timestamp

    def build(self, *, last_offset: int | None = None) -> bytes:
        """The finished batch (magic 2) or message set (magic 0/1).

        For magic 2, ``last_offset`` keeps a header's value past the records written (the cleaner's
        rebuilt batch keeps its source batch's last offset, so producer sequences stay whole).
        """
        if self.magic < 2:
            if not self._records:
                return b""
            return build_legacy(
                self.magic, self.compression, self.timestamp_type, self._records,
                log_append_time=self.log_append_time, level=self.compression_level,
            )  # fmt: skip
        if not self._records:
            return self.empty_batch(
                base_offset=self.base_offset, last_offset=self.base_offset, max_timestamp=-1,
                timestamp_type=self.timestamp_type, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                is_transactional=self.is_transactional, is_control=self.is_control,
                partition_leader_epoch=self.partition_leader_epoch, delete_horizon_ms=self.delete_horizon_ms,
            )  # fmt: skip
        payload = bytes(self._buf)
        if self.compression is not Codec.NONE:
            payload = compress(self.compression, payload, magic=2, level=self.compression_level)
        attributes = _v2_attributes(
            self.compression, self.timestamp_type, self.is_transactional, self.is_control,
            self.delete_horizon_ms is not None,
        )  # fmt: skip
        fields = (
            self.base_offset, 0, self.partition_leader_epoch, 2, 0, attributes,
            (self._last_offset if last_offset is None else last_offset) - self.base_offset, self._base_timestamp,
            self.max_timestamp,
            self.producer_id, self.producer_epoch, self.base_sequence, len(self._records),
        )  # fmt: skip
        return write_v2_batch(fields, payload)

    @classmethod
    def empty_batch(
        cls,
        *,
        base_offset: int,
        last_offset: int,
        max_timestamp: int = -1,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = -1,
        delete_horizon_ms: int | None = None,
    ) -> bytes:
        """A header-only v2 batch (records_count 0), as the cleaner keeps to retain producer state."""
        attributes = _v2_attributes(
            Codec.NONE, timestamp_type, is_transactional, is_control, delete_horizon_ms is not None
        )
        fields = (
            base_offset, 0, partition_leader_epoch, 2, 0, attributes, last_offset - base_offset,
            -1 if delete_horizon_ms is None else delete_horizon_ms, max_timestamp,
            producer_id, producer_epoch, base_sequence, 0,
        )  # fmt: skip
        return write_v2_batch(fields, b"")
