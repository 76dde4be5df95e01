"""``LegacyBatchView``: one magic-0/1 log entry, with the same interface as a v2 batch.

An entry is ``offset int64 | size int32 | crc uint32 | magic int8 |
attributes int8 | [timestamp int64, v1] | key bytes | value bytes`` (lengths
are int32, -1 = null). The CRC is CRC-32 (zlib) from magic to the end.
Uncompressed, an entry is one record with an absolute offset. Compressed, it is
a "wrapper" whose value is a compressed inner message set; its offset is the
*last* inner offset. Inner offsets are absolute for v0 and relative (0..n-1)
for v1, where absolute = wrapper offset - last relative + relative (a wrapper
offset of 0 means "base 0"). Under LogAppendTime (v1, attributes bit 3) every
inner record takes the wrapper's timestamp. Inner messages must have the
wrapper's magic, must not be compressed (both ``InvalidRecordError``, as is a
zstd wrapper, which only magic 2 may be: Kafka's ``DeepRecordsIterator``) and have
their own CRC checked (``CorruptRecordError``); a truncated trailing inner entry
ends the set, as in Kafka. ``base_offset`` and ``records_count`` of a wrapper
need decompression and are computed on first use.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..errors import CorruptRecordError, InvalidRecordError
from . import _downconvert_runs
from ._accel import BUILT_PLAIN_ROWS
from ._accel import crc32 as _crc32
from ._model import Codec, Record, TimestampType, codec_from_id
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from .v2 import LOG_OVERHEAD, as_byte_view

V0_HEADER = struct.Struct(
    ">"
    "q"  # offset => int64 (last inner offset for a wrapper)
    "i"  # size => int32, bytes after this field
    "I"  # crc => uint32, CRC-32 over magic..end
    "b"  # magic => int8 (0)
    "b"  # attributes => int8 (bits 0-2 codec)
)
V1_HEADER = struct.Struct(V0_HEADER.format + "q")  # + timestamp => int64 (ms, -1 = none)
RECORD_OVERHEAD = (V0_HEADER.size - LOG_OVERHEAD + 8, V1_HEADER.size - LOG_OVERHEAD + 8)  # (14, 22)
CRC_OFFSET = 12
MAGIC_OFFSET = 16
ATTRIBUTES_OFFSET = 17
TIMESTAMP_OFFSET = 18
CODEC_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")


def _read_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise InvalidRecordError("legacy message truncated in a length field")
    (n,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > end:
        raise InvalidRecordError(f"legacy message field length {n} exceeds the message")
    return bytes(buf[pos : pos + n]), pos + n


def parse_message(buf, pos: int) -> tuple[tuple, int]:
    """Parse the entry at ``pos`` (caller ensured it is complete).

    Returns ``((offset, crc, magic, attributes, timestamp, key, value), end)``.
    """
    offset, size, crc, magic, attributes = V0_HEADER.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + size
    if magic == 1:
        timestamp = _INT64.unpack_from(buf, pos + TIMESTAMP_OFFSET)[0]
        kpos = pos + V1_HEADER.size
    else:
        timestamp = -1
        kpos = pos + V0_HEADER.size
    key, vpos = _read_bytes(buf, kpos, end)
    value, stop = _read_bytes(buf, vpos, end)
    if stop != end:
        raise InvalidRecordError(f"legacy message has {end - stop} bytes after its value")
    return (offset, crc, magic, attributes, timestamp, key, value), end


class LegacyBatchView:
    """One v0/v1 entry (a message or a compressed wrapper), starting at its 12-byte prefix."""

    __slots__ = ("_buf", "_h", "_inner_summary")

    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1
    is_control = False
    is_transactional = False
    has_delete_horizon = False
    delete_horizon_ms = None

    def __init__(self, buffer) -> None:
        mv = as_byte_view(buffer)
        if len(mv) < V0_HEADER.size:
            raise CorruptRecordError(f"legacy message truncated: {len(mv)} bytes")
        header = V0_HEADER.unpack_from(mv, 0)
        magic = header[3]
        if magic not in (0, 1):
            raise CorruptRecordError(f"not a legacy message (magic {magic})")
        size = header[1] + LOG_OVERHEAD
        if header[1] < RECORD_OVERHEAD[magic]:
            raise CorruptRecordError(f"legacy v{magic} message size {header[1]} below its overhead")
        if size > len(mv):
            raise CorruptRecordError(f"legacy message truncated: size {size}, only {len(mv)} bytes")
        self._buf = mv if size == len(mv) else mv[:size]
        self._h = header
        self._inner_summary: tuple[int, int] | None = None

    magic = property(lambda self: self._h[3], doc="0 or 1.")
    crc = property(lambda self: self._h[2], doc="Stored CRC-32.")
    attributes = property(lambda self: self._h[4] & 0xFF, doc="Raw attributes byte.")
    last_offset = property(lambda self: self._h[0], doc="The entry's offset (last inner offset of a wrapper).")
    next_offset = property(lambda self: self._h[0] + 1)
    size_in_bytes = property(lambda self: self._h[1] + LOG_OVERHEAD)
    batch_length = property(lambda self: self._h[1])
    buffer = property(lambda self: self._buf, doc="The entry's bytes.")

    @property
    def compression(self) -> Codec:
        return codec_from_id(self._h[4] & CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self._h[3] == 0:
            return TimestampType.NO_TIMESTAMP
        if self._h[4] & TIMESTAMP_TYPE_FLAG:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def timestamp(self) -> int:
        """The entry's own timestamp (-1 for v0)."""
        return _INT64.unpack_from(self._buf, TIMESTAMP_OFFSET)[0] if self._h[3] == 1 else -1

    max_timestamp = timestamp

    @property
    def base_offset(self) -> int:
        if self._h[4] & CODEC_MASK == 0:
            return self._h[0]
        return self._summary()[0]

    @property
    def records_count(self) -> int:
        return 1 if self._h[4] & CODEC_MASK == 0 else self._summary()[1]

    def _summary(self) -> tuple[int, int]:
        if self._inner_summary is None:
            records = self._inner_records(DEFAULT_MAX_DECOMPRESSED_SIZE)
            self._inner_summary = (records[0][0], len(records))
        return self._inner_summary

    def __repr__(self) -> str:
        return f"LegacyBatchView(magic={self.magic}, offset={self.last_offset}, size_in_bytes={self.size_in_bytes})"

    def compute_crc(self) -> int:
        return _crc32(self._buf[MAGIC_OFFSET:])

    def is_valid(self) -> bool:
        return self.size_in_bytes >= LOG_OVERHEAD + RECORD_OVERHEAD[self._h[3]] and self._h[2] == self.compute_crc()

    def ensure_valid(self) -> None:
        if not self.is_valid():
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self._h[2]}, computed crc = {self.compute_crc()})"
            )

    # -- patching ---------------------------------------------------------------

    def set_last_offset(self, offset: int) -> None:
        """Rewrite the entry offset in place (outside the CRC)."""
        _INT64.pack_into(self._buf, 0, offset)
        self._h = V0_HEADER.unpack_from(self._buf, 0)
        self._inner_summary = None

    def set_log_append_time(self, timestamp: int) -> None:
        """v1 only: set LogAppendTime with ``timestamp`` and recompute the CRC."""
        if self._h[3] != 1:
            raise InvalidRecordError("magic 0 messages have no timestamp")
        self._buf[ATTRIBUTES_OFFSET] = (self._h[4] | TIMESTAMP_TYPE_FLAG) & 0xFF
        _INT64.pack_into(self._buf, TIMESTAMP_OFFSET, timestamp)
        _UINT32.pack_into(self._buf, CRC_OFFSET, self.compute_crc())
        self._h = V0_HEADER.unpack_from(self._buf, 0)

    # -- records ----------------------------------------------------------------

    def iter_records(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
        return (Record(*t) for t in self.iter_tuples(max_decompressed_size=max_decompressed_size))

    def __iter__(self) -> Iterator[Record]:
        return self.iter_records()

    def iter_tuples(self, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[tuple]:
        """``(offset, timestamp, key, value, headers, attributes)`` tuples, like the v2 view."""
        if self._h[4] & CODEC_MASK == 0:
            (offset, _, _, _, timestamp, key, value), _ = parse_message(self._buf, 0)
            return iter(((offset, timestamp, key, value, (), 0),))
        return iter(self._inner_records(max_decompressed_size))

    def _inner_records(self, max_size: int) -> list[tuple]:
        magic = self._h[3]
        (wrapper_offset, _, _, attributes, wrapper_ts, _, value), _ = parse_message(self._buf, 0)
        codec = codec_from_id(attributes & CODEC_MASK)
        if codec is Codec.ZSTD:  # Kafka's DeepRecordsIterator refuses it before looking at the value
            raise InvalidRecordError("Invalid wrapper compressionType found in legacy deep record iterator")
        if value is None:
            raise InvalidRecordError("compressed wrapper message has a null value")
        data = decompress(codec, value, magic=magic, max_size=max_size)
        inner = _parse_inner_set(data, magic)
        append_time = wrapper_ts if magic == 1 and attributes & TIMESTAMP_TYPE_FLAG else None
        shift = 0
        if magic == 1 and wrapper_offset != 0:
            last_relative = inner[-1][0]
            if wrapper_offset < last_relative:
                raise InvalidRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset '{last_relative}'"
                )
            shift = wrapper_offset - last_relative
        if shift == 0 and append_time is None:
            return inner
        return [
            (off + shift, ts if append_time is None else append_time, key, val, (), 0)
            for off, ts, key, val, _, _ in inner
        ]


def _parse_inner_set(data: bytes, magic: int) -> list[tuple]:
    """Inner messages of a wrapper as ``(offset, timestamp, key, value, (), 0)``."""
    if (rows := _c_rows(data, -1, True, magic)) is not None:
        return rows
    inner = []
    pos = 0
    end = len(data)
    mv = memoryview(data)
    while end - pos >= LOG_OVERHEAD:
        size = _INT32.unpack_from(data, pos + 8)[0]
        if size < RECORD_OVERHEAD[0]:
            raise CorruptRecordError(f"inner message size {size} below the minimum overhead")
        nxt = pos + LOG_OVERHEAD + size
        if nxt > end:
            break  # truncated trailing inner message: ignored, as Kafka does
        row = _plain_row(mv, pos, nxt, nxt - pos, lat_ok=True) if data[pos + MAGIC_OFFSET] == magic else None
        inner.append(row or _checked_inner(data, pos, magic))
        pos = nxt
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records")
    return inner


def _checked_inner(data: bytes, pos: int, magic: int) -> tuple:
    """The inner message at ``pos`` the slow way, raising the error that describes what is wrong."""
    size = _INT32.unpack_from(data, pos + 8)[0]
    inner_magic = data[pos + MAGIC_OFFSET]
    if inner_magic != magic:
        raise InvalidRecordError(f"inner message magic {inner_magic} differs from wrapper magic {magic}")
    if size < RECORD_OVERHEAD[magic]:
        raise CorruptRecordError(f"inner v{magic} message size {size} below its overhead")
    (offset, crc, _, attributes, timestamp, key, value), nxt = parse_message(data, pos)
    if crc != _crc32(memoryview(data)[pos + MAGIC_OFFSET : nxt]):
        raise CorruptRecordError(f"inner message at offset {offset} is corrupt (CRC mismatch)")
    if attributes & CODEC_MASK:
        raise InvalidRecordError("Compressed outer record has an inner record that is also compressed")
    return offset, timestamp, key, value, (), 0


def plain_rows(buffer, max_entry_size: int) -> list[tuple] | None:
    """Rows ``(offset, timestamp, key, value, (), 0)`` of a set of plain legacy messages, or None.

    The fast way through the common up-conversion input: every complete entry an uncompressed
    message of the first entry's magic, at most ``max_entry_size`` bytes, CRC intact, not
    LogAppendTime, well formed (a partial trailing entry ends the set, as in ``iter_batches``).
    Anything else, and an empty set, gives None: the caller then takes the general path
    (``iter_batches`` and the views), which reports the problem exactly.
    """
    if (found := _c_rows(buffer, max_entry_size, False, -1)) is not None:
        return found
    mv = as_byte_view(buffer)
    end, pos, first, rows = len(mv), 0, -1, []
    while end - pos >= LOG_OVERHEAD:
        size = _INT32.unpack_from(mv, pos + 8)[0]
        if size < RECORD_OVERHEAD[0]:
            return None
        if end - pos < MAGIC_OFFSET + 1 or end - pos < size + LOG_OVERHEAD:
            break
        row = _plain_row(mv, pos, pos + LOG_OVERHEAD + size, max_entry_size, lat_ok=False)
        if row is None or (first >= 0 and mv[pos + MAGIC_OFFSET] != first):
            return None
        first = mv[pos + MAGIC_OFFSET]
        rows.append(row)
        pos += LOG_OVERHEAD + size
    return rows or None


def _c_rows(buffer, max_entry_size: int, lat_ok: bool, magic: int) -> list[tuple] | None:
    """The C accelerator's rows for a set of plain messages (``_clegacy.c``), or None: it is off,
    or it left the set to the Python loops (which convert it their general way or raise)."""
    c_rows = _downconvert_runs.accelerated(BUILT_PLAIN_ROWS)
    return None if c_rows is None else c_rows(buffer, max_entry_size, lat_ok, magic)


_PLAIN_HEADS = (struct.Struct(V0_HEADER.format + "i"), struct.Struct(V1_HEADER.format + "i"))  # + key length


def _plain_row(mv, pos: int, end: int, max_entry_size: int, *, lat_ok: bool) -> tuple | None:
    """The well-formed plain message ``mv[pos:end]`` as a row, else None (LogAppendTime too unless ``lat_ok``)."""
    magic = mv[pos + MAGIC_OFFSET]
    if magic > 1 or end - pos > max_entry_size or end - pos < LOG_OVERHEAD + RECORD_OVERHEAD[magic]:
        return None
    head = _PLAIN_HEADS[magic]
    if magic:
        offset, _, crc, _, attributes, timestamp, klen = head.unpack_from(mv, pos)
    else:
        (offset, _, crc, _, attributes, klen), timestamp = head.unpack_from(mv, pos), -1
    if attributes & CODEC_MASK or (magic and not lat_ok and attributes & TIMESTAMP_TYPE_FLAG):
        return None
    if crc != _crc32(mv[pos + MAGIC_OFFSET : end]):
        return None
    kpos = pos + head.size
    vpos = kpos + max(klen, 0)
    if vpos + 4 > end:
        return None
    vlen = _INT32.unpack_from(mv, vpos)[0]
    if vpos + 4 + max(vlen, 0) != end:
        return None
    key = None if klen < 0 else bytes(mv[kpos:vpos])
    value = None if vlen < 0 else bytes(mv[vpos + 4 : end])
    return offset, timestamp, key, value, (), 0
