"""Compression codecs for record data, matching what Kafka writes and reads.

* gzip: a standard gzip stream (concatenated members are read too, as Java's
  ``GZIPInputStream`` does);
* snappy: written in the xerial ``SnappyOutputStream`` framing Kafka uses
  (16-byte header, then ``int32 length + raw snappy block`` per 32 KiB of
  input); read from xerial framing or, like xerial's reader, a plain raw block;
* lz4: Kafka's LZ4 frame (see ``_lz4``), with the wrong header checksum for
  magic 0;
* zstd: a standard zstd frame, magic 2 only.

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
import io
import struct
import zlib

import cramjam
import zstandard

from ..errors import CompressedStreamError, CorruptRecordError, UnsupportedCompressionError
from ._lz4 import compress_lz4, decompress_lz4
from ._model import Codec, codec_from_id

DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_MAGIC = XERIAL_HEADER[:8]
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
        return _gunzip(data, max_size)
    if c is Codec.SNAPPY:
        return _unsnappy(bytes(data), max_size)
    if c is Codec.LZ4:
        return decompress_lz4(data, magic=magic, max_size=max_size)
    return _unzstd(data, max_size)


def _gunzip(data, max_size: int) -> bytes:
    out = []
    total = 0
    rest = bytes(data)
    try:
        while True:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = d.decompress(rest, max_size + 1 - total)
            total += len(chunk)
            out.append(chunk)
            if total > max_size:
                raise CorruptRecordError(f"gzip data decompresses to more than {max_size} bytes")
            if not d.eof:
                raise CompressedStreamError("gzip stream truncated")
            rest = d.unused_data
            if not rest:
                return b"".join(out)
    except zlib.error as exc:
        raise CompressedStreamError(f"invalid gzip data: {exc}") from None


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
    if not (len(data) >= 16 and data[:8] == _XERIAL_MAGIC):
        return _unsnappy_block(data, max_size)
    out = bytearray()
    pos = 16  # version and compat ints are ignored (some producers write them little-endian)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressedStreamError("snappy xerial block length truncated")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CompressedStreamError(f"snappy xerial block length {length} out of range")
        out += _unsnappy_block(data[pos : pos + length], max_size - len(out))
        pos += length
    return bytes(out)


def _unzstd(data, max_size: int) -> bytes:
    data = bytes(data)
    try:
        declared = zstandard.frame_content_size(data)
        if declared > max_size:
            raise CorruptRecordError(f"zstd frame declares {declared} bytes, more than {max_size}")
        if declared >= 0:  # the output buffer is sized from the header
            return zstandard.ZstdDecompressor().decompress(data, max_output_size=max_size)
        return _unzstd_unsized(data, max_size)
    except zstandard.ZstdError as exc:
        raise CompressedStreamError(f"invalid zstd data: {exc}") from None


def _unzstd_unsized(data: bytes, max_size: int) -> bytes:
    """A frame without a content size (the Java producer writes those): budgets that double up to ``max_size``.

    python-zstandard allocates the whole ``max_output_size`` before decompressing, which for the
    64 MiB default costs ~5x the decompression of a 100 KiB batch; most frames fit the first budget
    (4x the frame). Too small a budget and a truncated frame fail alike, so the last budget's
    failure is told apart by reading the frame as a stream, one byte past the limit at most: a frame
    that gives that much is over the limit (CORRUPT_MESSAGE, as our cap refuses it), one that ends
    short of it was cut short, a stream error as Kafka's zstd-jni stream throws it.
    """
    dctx = zstandard.ZstdDecompressor()
    budget = min(max_size, max(4 * len(data), 1 << 16))
    while True:
        try:
            return dctx.decompress(data, max_output_size=budget)
        except zstandard.ZstdError as exc:
            if "full frame" not in str(exc):
                raise
            if budget >= max_size:
                break
            budget = min(max_size, 2 * budget)
    with dctx.stream_reader(io.BytesIO(data), read_across_frames=False) as reader:
        if len(reader.read(max_size + 1)) <= max_size:
            raise CompressedStreamError("zstd frame truncated")
    raise CorruptRecordError(f"zstd data decompresses to more than {max_size} bytes")
