"""Kafka's LZ4 framing, including the magic-0 header-checksum bug.

Kafka's LZ4 is the standard LZ4 frame format with independent 64 KiB blocks and
no content size, compressed by LZ4's fast mode at Kafka's default level (9) and
by LZ4 HC at any other level (KIP-390, as Kafka's ``Lz4BlockOutputStream``).
The frame descriptor ends with a one-byte header checksum (HC): the second byte
of xxHash32 (seed 0) over the descriptor (FLG, BD and any optional fields).
Kafka 0.8/0.9 hashed the 4-byte frame magic too; to stay
compatible, Kafka still *writes* that wrong HC for magic-0 message sets and
expects it there (KAFKA-3160). We write exactly that for magic 0. When reading
magic 0 we accept either HC (as kafka-python and librdkafka do: they simply
replace the HC with the right one before decoding), for magic >= 1 the frame
must be standard.

The tiny pure-Python xxHash32 below is only ever run on these <= 18-byte
headers, so it needs no speed.
"""

from __future__ import annotations

import functools
import struct

import lz4.block
import lz4.frame

from ..errors import CompressedStreamError, CorruptRecordError

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
FRAME_MAGIC = b"\x04\x22\x4d\x18"
_FLG_CONTENT_SIZE = 0x08
_FLG_DICT_ID = 0x01
_FLG_CONTENT_CHECKSUM = 0x04
_FLG_INDEPENDENT = 0x20
DEFAULT_LZ4_LEVEL = 9  # Kafka's default: the fast compressor; other levels use LZ4 HC
_BLOCK = 64 * 1024
_STORED_RAW = 0x80000000
_LE32 = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M32, 13) * _P1) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data`` (reference algorithm)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                v[i] = _round(v[i], int.from_bytes(data[pos : pos + 4], "little"))
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[pos : pos + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)


def _header_length(frame: bytes) -> int:
    """Bytes from the start of the frame through the HC byte."""
    if len(frame) < 7 or frame[:4] != FRAME_MAGIC:
        raise CompressedStreamError("not an LZ4 frame")
    flg = frame[4]
    length = 7 + (8 if flg & _FLG_CONTENT_SIZE else 0) + (4 if flg & _FLG_DICT_ID else 0)
    if len(frame) < length:
        raise CompressedStreamError("LZ4 frame header truncated")
    return length


def correct_hc(frame: bytes, header_length: int) -> int:
    return (xxh32(frame[4 : header_length - 1]) >> 8) & 0xFF


def broken_hc(frame: bytes, header_length: int) -> int:
    """Kafka's pre-0.10 HC: xxHash32 over the magic bytes too."""
    return (xxh32(frame[0 : header_length - 1]) >> 8) & 0xFF


@functools.cache
def frame_header(magic: int) -> bytes:
    """The 7 bytes ``compress_lz4`` starts every frame with (64 KiB independent blocks, no checksums)."""
    return compress_lz4(b"", magic=magic, level=None)[:7]


def compress_lz4(data: bytes, *, magic: int, level: int | None) -> bytes:
    """Kafka's frame: LZ4's fast mode at the default level (9), LZ4 HC at any other (KIP-390)."""
    if level is None or level == DEFAULT_LZ4_LEVEL:
        frame = lz4.frame.compress(
            data,
            compression_level=0,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    else:
        frame = frame_header(1) + _hc_blocks(data, level)
    if magic == 0:
        hl = _header_length(frame)
        frame = frame[: hl - 1] + bytes([broken_hc(frame, hl)]) + frame[hl:]
    return frame


def _hc_blocks(data: bytes, level: int) -> bytes:
    """Independent 64 KiB blocks compressed by LZ4 HC at ``level``, then the end mark; a block that
    does not shrink is stored raw (the high bit of its length set), as Kafka's writer does."""
    out = bytearray()
    view = memoryview(data)
    for start in range(0, len(view), _BLOCK):
        raw = view[start : start + _BLOCK]
        packed = lz4.block.compress(raw, mode="high_compression", compression=level, store_size=False)
        if len(packed) < len(raw):
            out += _LE32.pack(len(packed)) + packed
        else:
            out += _LE32.pack(len(raw) | _STORED_RAW) + raw
    out += _LE32.pack(0)
    return bytes(out)


def _as_kafka_reads(data: bytes, magic: int) -> tuple[bytes, int]:
    """The frame rewritten so that python-lz4 reads it as Kafka's ``Lz4BlockInputStream`` does, and how many
    bytes must follow its end mark.

    Kafka refuses FLG's reserved bits (the dictionary id among them), dependent blocks and versions other than
    1; checks the header checksum except for magic 0 (any HC there); skips the content size without checking
    it; and reads the content checksum's 4 bytes without verifying them. So both flags are cleared (the HC
    recomputed) and the checksum bytes are left after the end mark, where nothing is read.
    """
    hl = _header_length(data)
    flg = data[4]
    if flg & _FLG_DICT_ID or flg & 0x02 or not flg & _FLG_INDEPENDENT or flg >> 6 != 1:
        raise CompressedStreamError(f"LZ4 frame flags {flg:#04x} are not Kafka's")
    if magic != 0 and not flg & (_FLG_CONTENT_SIZE | _FLG_CONTENT_CHECKSUM):
        return data, 0  # read as it is: python-lz4 checks the header checksum itself
    if magic != 0 and data[hl - 1] != correct_hc(data, hl):
        raise CompressedStreamError("LZ4 frame descriptor checksum mismatch")
    head = FRAME_MAGIC + bytes([flg & ~(_FLG_CONTENT_SIZE | _FLG_CONTENT_CHECKSUM), data[5]])
    head += bytes([correct_hc(head + b"\x00", 7)])
    return head + data[hl:], (4 if flg & _FLG_CONTENT_CHECKSUM else 0)


def decompress_lz4(data: bytes, *, magic: int, max_size: int) -> bytes:
    data, after_end = _as_kafka_reads(bytes(data), magic)
    decoder = lz4.frame.LZ4FrameDecompressor()
    try:
        out = _bounded(decoder, data, max_size)
    except RuntimeError as exc:
        raise CompressedStreamError(f"invalid LZ4 data: {exc}") from None
    if not decoder.eof or len(decoder.unused_data or b"") < after_end:
        raise CompressedStreamError("LZ4 frame truncated")
    return out  # bytes after the end mark (and content checksum) are never read, as by Kafka's reader


def _bounded(decoder, data: bytes, max_size: int) -> bytes:
    """Decompress ``data`` in steps that double, stopping past ``max_size``.

    One call with ``max_length=max_size + 1`` would make python-lz4 allocate that
    much up front (tens of MiB for a 100 KiB batch), which costs more than the
    decompression itself; most batches fit the first step (4x the frame).
    """
    step = min(max_size + 1, max(4 * len(data), 1 << 16))
    parts = [decoder.decompress(data, max_length=step)]
    total = len(parts[0])
    while total <= max_size and not decoder.eof and not decoder.needs_input:
        step = min(max_size + 1 - total, 2 * step)
        parts.append(decoder.decompress(b"", max_length=step))
        total += len(parts[-1])
    if total > max_size:
        raise CorruptRecordError(f"LZ4 data decompresses to more than {max_size} bytes")
    return parts[0] if len(parts) == 1 else b"".join(parts)
