"""Plain data of the record layer: codecs, timestamp types, ``Record`` and the tombstone rule.

``Record`` is what every format (v0, v1, v2) decodes to, so storage, the
cleaner and fetch code never branch on magic. ``attributes`` is the v2
per-record attributes byte, which Kafka leaves unused; this product gives bit 0
a meaning (KIP-87, never adopted upstream): an explicit tombstone flag.
``is_tombstone`` is the one rule storage and the cleaner share.
"""

from __future__ import annotations

import enum

import attrs

from ..errors import UnknownCodecError

TOMBSTONE_FLAG = 0x01  # v2 record attributes bit 0: explicit tombstone (KIP-87)


class Codec(enum.IntEnum):
    """Compression codec ids (attributes bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(enum.IntEnum):
    """How a record's timestamp was set; NO_TIMESTAMP only for magic 0."""

    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


_CODECS = tuple(Codec)


def codec_from_id(codec_id: int) -> Codec:
    """Map attributes bits 0-2 to a Codec; ids 5-7 are not codecs."""
    if 0 <= codec_id <= 4:
        return _CODECS[codec_id]
    raise UnknownCodecError(f"Unknown compression type id: {codec_id}")


@attrs.frozen(slots=True)
class Record:
    """One record, with its absolute offset and effective timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


def is_tombstone(record: Record) -> bool:
    """A delete marker: null value, or the explicit KIP-87 flag. ``b""`` is not one."""
    return record.value is None or bool(record.attributes & TOMBSTONE_FLAG)
