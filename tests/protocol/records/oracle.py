"""Helpers wrapping kafka-python's record code, used as an independent oracle."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    # kafka-python's package import uses deprecated importlib.resources calls.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import codec as kcodec
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords

from protocol.records import Codec

ALL_CODECS = list(Codec)


def skip_unless_available(codec: Codec, magic: int) -> None:
    """kafka-python needs python-snappy / xxhash (lz4 v0) for some codecs."""
    if codec == Codec.SNAPPY and not kcodec.has_snappy():
        pytest.skip("python-snappy not installed (kafka-python oracle)")
    if codec == Codec.LZ4 and magic == 0 and kcodec.xxhash is None:
        pytest.skip("xxhash not installed (kafka-python lz4 magic-0 oracle)")


def kp_build_v2(records, codec: Codec, *, base_offset: int = 0) -> bytes:
    """records: (key, value, timestamp, headers) -> one v2 batch built by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=int(codec), is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for i, (key, value, ts, headers) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)  # outside the CRC
    return bytes(data)


def kp_build_legacy(records, codec: Codec, magic: int) -> bytes:
    """records: (key, value, timestamp) -> a legacy message set built by kafka-python (offsets 0..n-1)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value)
    return bytes(builder.build())


def kp_read(data: bytes) -> list[tuple]:
    """(offset, timestamp, key, value, headers) of every record, read by kafka-python."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        for r in batch:
            headers = tuple((k, None if v is None else bytes(v)) for k, v in r.headers)
            timestamp = -1 if r.timestamp is None else r.timestamp  # kafka-python: None for v0
            out.append((r.offset, timestamp, _b(r.key), _b(r.value), headers))
    return out


def kp_batch_info(data: bytes) -> list[tuple]:
    """(magic, compression_type, timestamp_type, crc valid) of each batch, read by kafka-python."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        out.append((batch.magic, batch.compression_type, batch.timestamp_type, batch.validate_crc()))
    return out


def _b(x):
    return None if x is None else bytes(x)
