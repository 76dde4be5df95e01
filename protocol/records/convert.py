"""Format conversion between v2 batches and legacy (magic 0/1) message sets (sans-IO).

Down-conversion (``down_convert``) serves Fetch v0-v3 from a v2 log, as Kafka
3.x does (``RecordsUtil.downConvert`` and ``LazyDownConversionRecords``). The
input is a raw log slice starting at the batch that holds ``fetch_offset``; a
partial trailing batch is ignored. Each complete source batch is handled on
its own:

* control batches (transaction markers) and empty v2 batches produce nothing;
* a zstd batch raises ``UnsupportedCompressionError`` (batches past the
  ``max_bytes`` stop are never read, so one there does not);
* a batch already at or below the target magic is copied unchanged (legacy
  entries on disk); a v1 entry for a magic-0 target is converted too;
* an *uncompressed* batch becomes one legacy message per record, and records
  below ``fetch_offset`` are dropped (librdkafka relies on this);
* a *compressed* batch becomes one wrapper with the same codec holding all its
  records, even those below ``fetch_offset``. Inner offsets are relative
  (``offset - first offset``) for v1 and absolute for v0; the wrapper offset
  is the last absolute offset.

Every record loses its headers, and every batch loses its producer fields, its
transactional flag and its leader epoch. Magic 0 output has no timestamps. A
LogAppendTime batch stays LogAppendTime in v1: the messages, the wrapper and
its inner messages all get the attribute bit and the batch ``max_timestamp``.
KIP-87 (our product rule): a record that ``is_tombstone`` (null value *or* the
attributes flag) is written with a null value, so an old client sees a delete
even when the v2 record carried a payload.

Sizing is not done here: ``down_convert`` converts every complete batch it
is given (``start_down_convert`` begins that and returns the call that ends
it, so the C accelerator converts LZ4 and uncompressed batches on its helper
thread while the caller sends the previous chunk), and ``lazy_convert``
(KIP-283) decides what is converted and how the output is fitted to the size
a Fetch answer declares.
Source CRCs are verified before conversion (``CorruptRecordError``) so that
converting never re-signs corrupt data with a fresh CRC; Kafka skips this check.

Up-conversion for KIP-724 (the cleaner and the startup upgrade):
``legacy_to_v2_batch`` turns one legacy entry into one v2 batch. An
uncompressed message becomes a single-record batch, and a compressed wrapper
becomes one batch with the same codec and all inner records at their original
offsets (``base_offset`` = first inner offset). v0 records become CreateTime
with timestamp -1; LogAppendTime is kept with the entry's timestamp.
``legacy_to_v2_batches`` and ``upgrade_to_v2`` apply that to every legacy entry
of a buffer and copy v2 batches unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn

import attrs

from ..errors import InvalidRecordError, UnsupportedCompressionError
from . import _cbatches
from ._accel import crc32 as _crc32
from ._downconvert import first_offset_delta
from ._downconvert_runs import emit_records
from ._model import TOMBSTONE_FLAG, Codec, TimestampType
from .batches import Batch, iter_batches
from .builder import RecordBatchBuilder
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, compress
from .legacy import TIMESTAMP_TYPE_FLAG, LegacyBatchView
from .scan import scan_v2_records

_PREFIX_CRC = struct.Struct(">qiI")  # offset, size, crc
_HEAD_V0 = struct.Struct(">bbi")  # magic, attributes, key length
_HEAD_V1 = struct.Struct(">bbqi")  # magic, attributes, timestamp, key length
_INT32 = struct.Struct(">i")
_NULL = b"\xff\xff\xff\xff"
_NO_FETCH_OFFSET = -(1 << 63)

# A decoded record as ``iter_tuples`` gives it: (offset, timestamp, key, value, headers, attributes).
Row = tuple[int, int, "bytes | None", "bytes | None", tuple, int]


@attrs.frozen(slots=True)
class DownConverted:
    """The result of ``down_convert``."""

    records: bytes | memoryview  # the legacy message set to put in the Fetch response (C: a read-only view)
    converted_count: int  # records written in converted form (FetchMessageConversionsPerSec)
    # bytes of ``records`` per source entry, in order (0 for markers): where a cut output leaves a client
    entry_lengths: tuple = attrs.field(default=(), eq=False)


# -- legacy message encoding -------------------------------------------------------


def _encode_messages(
    out: bytearray,
    magic: int,
    attributes: int,
    rows: Iterable[Row],
    *,
    fetch_offset: int = _NO_FETCH_OFFSET,
    shift: int = 0,
) -> int:
    """Append one legacy entry per row (at ``offset - shift``) to ``out``; return how many.

    Rows with offsets below ``fetch_offset`` are skipped, headers are dropped and a row with the
    tombstone flag gets a null value. Used for legacy sources and wrappers (v2 records go through
    ``_downconvert_runs``); the CRC-32 is chained over the parts, which go straight into ``out``.
    """
    pack_prefix, pack_i32, crc32 = _PREFIX_CRC.pack, _INT32.pack, _crc32
    pack_head = _HEAD_V1.pack if magic == 1 else _HEAD_V0.pack
    v1 = magic == 1
    count = 0
    for offset, timestamp, key, value, _headers, record_attributes in rows:
        if offset < fetch_offset:
            continue
        count += 1
        klen = -1 if key is None else len(key)
        head = pack_head(1, attributes, timestamp, klen) if v1 else pack_head(0, attributes, klen)
        if key is not None:
            head += key
        if value is None or record_attributes & TOMBSTONE_FLAG:
            head += _NULL
            out += pack_prefix(offset - shift, len(head) + 4, crc32(head))
            out += head
        else:
            head += pack_i32(len(value))
            out += pack_prefix(offset - shift, len(head) + len(value) + 4, crc32(value, crc32(head)))
            out += head
            out += value
    return count


def _encode_wrapper(out: bytearray, magic: int, codec: Codec, log_append_time: int | None, rows: list[Row]) -> None:
    """Append one compressed wrapper holding ``rows`` (offsets relative for v1, absolute for v0)."""
    ts_flag = TIMESTAMP_TYPE_FLAG if magic == 1 and log_append_time is not None else 0
    inner = bytearray()
    _encode_messages(inner, magic, ts_flag, rows, shift=rows[0][0] if magic == 1 else 0)
    wrapper_ts = log_append_time if log_append_time is not None else max(r[1] for r in rows)
    value = compress(codec, inner, magic=magic)
    _encode_messages(out, magic, int(codec) | ts_flag, [(rows[-1][0], wrapper_ts, None, value, (), 0)])


# -- down-conversion -------------------------------------------------------------


def _convert_batch(batch: Batch, target_magic: int, fetch_offset: int, max_size: int) -> tuple[bytes, int, int]:
    """The entries for one source batch: ``(bytes, entries, records converted per entry)``.

    Per entry: 0 for a batch copied unchanged, 1 for messages, the record count for a wrapper.
    Under LogAppendTime the views already give every record the batch timestamp.
    """
    if batch.is_control:
        return b"", 0, 0
    codec = batch.compression
    if codec is Codec.ZSTD:
        raise UnsupportedCompressionError(
            f"batch at offset {batch.last_offset} is zstd-compressed, which magic {target_magic} cannot carry"
        )
    if batch.magic <= target_magic:
        return batch.buffer, 1, 0
    batch.ensure_valid()
    if batch.magic == 2:
        return _convert_v2(batch, target_magic, fetch_offset, max_size)
    out = bytearray()
    rows = batch.iter_tuples(max_decompressed_size=max_size)
    lat = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    if codec is not Codec.NONE:  # one wrapper with every record, even those before fetch_offset
        rows = list(rows)
        if not rows:
            return b"", 0, 0
        _encode_wrapper(out, target_magic, codec, lat, rows)
        return out, 1, len(rows)
    ts_flag = TIMESTAMP_TYPE_FLAG if lat is not None and target_magic == 1 else 0
    return out, _encode_messages(out, target_magic, ts_flag, rows, fetch_offset=fetch_offset), 1


def _convert_v2(batch, target_magic: int, fetch_offset: int, max_size: int) -> tuple[bytes, int, int]:
    """``_convert_batch`` for a v2 batch, written by the fused loop of ``_downconvert_runs``."""
    codec, count = batch.compression, batch.records_count
    payload = batch.records_readable(max_decompressed_size=max_size)  # the emit loop copies it once, into messages
    lat = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    ts_flag = TIMESTAMP_TYPE_FLAG if lat is not None and target_magic == 1 else 0
    bases, parts = (batch.base_offset, batch.base_timestamp, lat), []
    if codec is Codec.NONE:
        written, _, _ = _emit(parts, payload, count, bases, target_magic, ts_flag, fetch_offset, 0)
        return b"".join(parts), written, 1  # one part (the C loop's) is not copied by the join
    if count <= 0:  # nothing to wrap; records left over (or a negative count) still raise
        _emit(parts, payload, count, bases, target_magic, ts_flag, _NO_FETCH_OFFSET, 0)
        return b"", 0, 0
    shift = _first_offset(batch, payload, count) if target_magic == 1 else 0
    _, last, max_ts = _emit(parts, payload, count, bases, target_magic, ts_flag, _NO_FETCH_OFFSET, shift)
    value = compress(codec, b"".join(parts), magic=target_magic)
    out = bytearray()
    _encode_messages(out, target_magic, int(codec) | ts_flag, [(last, max_ts, None, value, (), 0)])
    return out, 1, count


def _emit(parts: list, payload: bytes, count: int, *args) -> tuple[int, int, int]:
    """``emit_records``, with malformed records reported exactly as the decoder reports them."""
    if count >= 0:
        try:
            written, last, max_ts, plain = emit_records(parts, payload, count, *args)
        except (IndexError, InvalidRecordError, struct.error):  # struct.error: a backstop, a field past 64 bits
            _malformed(payload, count)
        if not plain:  # records with headers: the loop skipped them, the scan checks them
            scan_v2_records(payload, count)
        return written, last, max_ts
    _malformed(payload, count)


def _first_offset(batch, payload: bytes, count: int) -> int:
    try:
        return batch.base_offset + first_offset_delta(payload)
    except (IndexError, InvalidRecordError):
        _malformed(payload, count)


def _malformed(payload, count: int) -> NoReturn:
    scan_v2_records(payload, count)  # raises the decoder's error
    raise InvalidRecordError("malformed records")  # not reached: the scan finds what the loop tripped on


def down_convert(
    data, *, target_magic: int, fetch_offset: int, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> DownConverted:
    """Convert every complete batch of a log slice for a Fetch v0-v1 (``target_magic`` 0) or v2-v3 (1) client."""
    return start_down_convert(data, target_magic=target_magic, fetch_offset=fetch_offset,
                              max_decompressed_size=max_decompressed_size, background=False)()  # fmt: skip


def start_down_convert(
    data, *, target_magic: int, fetch_offset: int, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    background: bool = True,
) -> Callable[[], DownConverted]:  # fmt: skip
    """``down_convert`` begun: the call returned gives its result, and raises its errors.

    With ``background`` the batches the C accelerator takes (LZ4 and uncompressed ones) are
    converted on its helper thread from now on, while the caller does something else; the rest
    waits for the call.
    """
    if target_magic not in (0, 1):
        raise ValueError(f"down-conversion targets magic 0 or 1, not {target_magic}")
    in_c = _cbatches.start(data, target_magic, fetch_offset, max_decompressed_size, background=background)
    return lambda: _converted(data, in_c(), target_magic, fetch_offset, max_decompressed_size)


def _converted(data, in_c, target_magic: int, fetch_offset: int, max_size: int) -> DownConverted:
    done, _, whole = in_c or ([], 0, None)
    if whole is not None:  # every entry went to the C accelerator: its buffer is the output
        return DownConverted(whole, sum(written for _, written in done), tuple(len(v) for v, _ in done))
    chunks: list = []
    converted = 0
    for i, batch in enumerate(iter_batches(data)):  # the entries C did not take, and its framing errors
        if (entry := done[i] if i < len(done) else None) is not None:  # C converted it: (entries, records)
            chunks.append(entry[0])
            converted += entry[1]
            continue
        piece, entries, per_entry = _convert_batch(batch, target_magic, fetch_offset, max_size)
        chunks.append(piece)
        converted += per_entry * entries
    one = len(chunks) == 1 and type(chunks[0]) is bytes  # the usual single-batch chunk: no copy
    return DownConverted(chunks[0] if one else b"".join(chunks), converted, tuple(len(c) for c in chunks))


# -- up-conversion (KIP-724) -----------------------------------------------------


def legacy_to_v2_batch(entry, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """One legacy entry (a ``LegacyBatchView`` or its bytes) as one v2 batch with the same records."""
    view = entry if isinstance(entry, LegacyBatchView) else LegacyBatchView(entry)
    view.ensure_valid()
    records = list(view.iter_records(max_decompressed_size=max_decompressed_size))
    lat = view.timestamp_type == TimestampType.LOG_APPEND_TIME
    builder = RecordBatchBuilder(
        magic=2,
        compression=view.compression,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        base_offset=records[0].offset,
    )  # under LogAppendTime every record already carries the entry's timestamp, so max_timestamp is it
    for r in records:
        builder.append(r.key, r.value, timestamp=r.timestamp, offset=r.offset)
    return builder.build()


def legacy_to_v2_batches(data, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> list[bytes]:
    """Every complete entry of ``data`` as v2: legacy ones rewritten, v2 batches copied unchanged.

    A partial trailing entry is left out (``valid_bytes(data)`` tells where it starts).
    """
    return list(_upgraded(data, max_decompressed_size))


def upgrade_to_v2(data, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """``legacy_to_v2_batches`` joined into one buffer (the startup upgrade of a segment)."""
    return b"".join(_upgraded(data, max_decompressed_size))


def _upgraded(data, max_size: int) -> Iterator[bytes]:
    for batch in iter_batches(data):
        if batch.magic == 2:
            yield bytes(batch.buffer)
        else:
            yield legacy_to_v2_batch(batch, max_decompressed_size=max_size)
