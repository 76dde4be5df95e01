"""Compression codecs for record data, matching what Kafka writes and reads.

Reading stops where Kafka's own stream for the codec stops, and what it never
reads is not looked at:

* gzip: standard gzip members, read as the JDK's ``GZIPInputStream`` reads
  them (see ``_gzip``: concatenated members, bytes after a member that do not
  form a header ignored);
* snappy: written in the xerial ``SnappyOutputStream`` framing Kafka uses
  (16-byte header, then ``int32 length + raw snappy block`` per 32 KiB of
  input); read as xerial's ``SnappyInputStream`` reads it (a plain raw block
  without that header; fewer than 4 bytes after a chunk are never read; a
  concatenated stream's header starts over);
* lz4: Kafka's LZ4 frame (see ``_lz4``), with the wrong header checksum for
  magic 0; nothing after the end mark is read;
* zstd: standard zstd frames, magic 2 only, read as zstd-jni's stream reads
  them (see ``_zstd``: every frame, garbage after one an error).

Every decompression is bounded by ``max_size`` (``CorruptRecordError`` past
it), checked *before* allocating where the format states a size (snappy block
preambles, zstd frame content size) and by incremental output limits
elsewhere, so a zip bomb or a lying length cannot exhaust memory: past it,
``CorruptRecordError`` (CORRUPT_MESSAGE). Data the codec cannot read (a
library error on bad input, a stream cut short) is ``CompressedStreamError``,
whose code is Kafka's answer to its codec streams' IOException:
UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import gzip
import struct

import cramjam
import zstandard

from ..errors import CompressedStreamError, CorruptRecordError, UnsupportedCompressionError
from ._gzip import gunzip
from ._lz4 import compress_lz4, decompress_lz4
from ._zstd import unzstd
from ._model import Codec, codec_from_id

DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_MAGIC = XERIAL_HEADER[:8]
_XERIAL_HEAD = struct.unpack(">i", XERIAL_HEADER[:4])[0]  # a chunk length equal to it starts a header
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")
DEFAULT_GZIP_LEVEL = 6
DEFAULT_ZSTD_LEVEL = 3


def check_codec(codec: int, magic: int) -> Codec:
    """The Codec for ``codec``, refusing ids 5-7 and zstd below magic 2."""
    c = codec_from_id(int(codec))
    if c is Codec.ZSTD and magic < 2:
        raise UnsupportedCompressionError(f"zstd compression is not allowed with magic {magic}")
    return c


def compress(codec: int, data, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` as Kafka does for ``codec`` in a batch of ``magic``."""
    c = check_codec(codec, magic)
    if c is Codec.NONE:
        return bytes(data)
    if c is Codec.GZIP:
        return gzip.compress(data, compresslevel=DEFAULT_GZIP_LEVEL if level is None else level, mtime=0)
    if c is Codec.SNAPPY:
        return _snappy_xerial(data)
    if c is Codec.LZ4:
        return compress_lz4(bytes(data), magic=magic, level=level)
    return zstandard.ZstdCompressor(level=DEFAULT_ZSTD_LEVEL if level is None else level).compress(data)


def decompress(codec: int, data, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Inverse of ``compress``; at most ``max_size`` bytes of output."""
    c = check_codec(codec, magic)
    if c is Codec.NONE:
        if len(data) > max_size:
            raise CorruptRecordError(f"data larger than {max_size} bytes")
        return bytes(data)
    if c is Codec.GZIP:
        return gunzip(data, max_size)
    if c is Codec.SNAPPY:
        return _unsnappy(bytes(data), max_size)
    if c is Codec.LZ4:
        return decompress_lz4(data, magic=magic, max_size=max_size)
    return unzstd(data, max_size)


def _snappy_xerial(data) -> bytes:
    out = bytearray(XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_length(block: bytes) -> int:
    """Uncompressed length from a raw snappy block's varint preamble."""
    result = 0
    for i in range(min(5, len(block))):
        result |= (block[i] & 0x7F) << (7 * i)
        if block[i] < 0x80:
            return result
    raise CompressedStreamError("invalid snappy block preamble")


def _unsnappy_block(block: bytes, budget: int) -> bytes:
    if _snappy_length(block) > budget:
        raise CorruptRecordError("snappy data decompresses to more than the allowed size")
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise CompressedStreamError(f"invalid snappy data: {exc}") from None


def _unsnappy(data: bytes, max_size: int) -> bytes:
    """As xerial's ``SnappyInputStream`` (1.1.10.x, Kafka's): chunks until fewer than 4 bytes are left (those are
    never read); a chunk length that is the first 4 bytes of the xerial magic starts a concatenated stream's
    16-byte header, read on when its magic is whole (a version below 1 refused), else ending the stream."""
    if not (len(data) >= 16 and data[:8] == _XERIAL_MAGIC):
        return _unsnappy_block(data, max_size)
    out = bytearray()
    pos = 16  # version and compat ints are ignored (some producers write them little-endian)
    while pos + 4 <= len(data):
        (length,) = _INT32.unpack_from(data, pos)
        if length == _XERIAL_HEAD:
            if pos + 16 > len(data):
                raise CompressedStreamError("snappy xerial header of a concatenated stream truncated")
            if data[pos : pos + 8] != _XERIAL_MAGIC:
                break
            if _INT32.unpack_from(data, pos + 8)[0] < 1:
                raise CompressedStreamError("snappy xerial stream of an incompatible version")
            pos += 16
            continue
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CompressedStreamError(f"snappy xerial block length {length} out of range")
        out += _unsnappy_block(data[pos : pos + length], max_size - len(out))
        pos += length
    return bytes(out)
