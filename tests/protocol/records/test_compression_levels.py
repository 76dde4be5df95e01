"""KIP-390 compression levels: what each codec writes at a topic's level, read back by independent decoders."""

from __future__ import annotations

import gzip
import os
import random
import struct

import lz4.frame
import pytest
import zstandard

from protocol.records import Codec, compress, decompress
from protocol.records._lz4 import frame_header


def _text(size: int, seed: int = 7) -> bytes:
    """Log-like lines: compressible, with enough variety that stronger levels find more."""
    rng = random.Random(seed)
    words = [rng.randbytes(rng.randint(3, 9)).hex() for _ in range(400)]
    out = bytearray()
    while len(out) < size:
        out += (" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) + "\n").encode()
    return bytes(out[:size])


def _blocks(frame: bytes) -> list[tuple[int, bool]]:
    """``(stored length, stored raw)`` of each block of a Kafka LZ4 frame, up to the end mark."""
    pos, out = 7, []
    while (word := struct.unpack_from("<I", frame, pos)[0]) != 0:
        length = word & 0x7FFFFFFF
        out.append((length, bool(word & 0x80000000)))
        pos += 4 + length
    assert pos + 4 == len(frame), "the end mark closes the frame"
    return out


def test_lz4_default_level_is_the_fast_mode_and_others_are_hc():
    data = _text(300_000)
    fast = compress(Codec.LZ4, data, level=None)
    assert compress(Codec.LZ4, data, level=9) == fast
    hc = {level: compress(Codec.LZ4, data, level=level) for level in (1, 4, 12, 17)}
    assert len(hc[12]) < len(fast) and len(hc[12]) <= len(hc[4])
    assert hc[17] == hc[12]  # LZ4 HC stops at 12; Kafka accepts up to 17 and the library caps it
    for frame in (fast, *hc.values()):
        assert lz4.frame.decompress(frame) == data  # an independent reader of the standard frame
        assert decompress(Codec.LZ4, frame) == data
        assert frame[:7] == frame_header(2)
        assert [length <= 65536 for length, _ in _blocks(frame)] == [True] * 5  # 64 KiB independent blocks


def test_lz4_hc_stores_incompressible_blocks_raw():
    data = os.urandom(70_000)
    frame = compress(Codec.LZ4, data, level=12)
    assert _blocks(frame) == [(65536, True), (70_000 - 65536, True)]
    assert frame[11 : 11 + 65536] == data[:65536]
    assert lz4.frame.decompress(frame) == data
    assert compress(Codec.LZ4, b"", level=3) == compress(Codec.LZ4, b"")  # header and end mark only


@pytest.mark.parametrize("magic", [0, 1])
def test_lz4_hc_in_legacy_wrappers_keeps_the_header_checksum_rule(magic):
    data = _text(100_000)
    frame = compress(Codec.LZ4, data, magic=magic, level=6)
    assert frame[:7] == compress(Codec.LZ4, b"", magic=magic)[:7]  # magic 0: Kafka's broken checksum
    assert decompress(Codec.LZ4, frame, magic=magic) == data


def test_gzip_levels():
    data = _text(200_000)
    assert compress(Codec.GZIP, data, level=-1) == compress(Codec.GZIP, data) == compress(Codec.GZIP, data, level=6)
    low, high = compress(Codec.GZIP, data, level=1), compress(Codec.GZIP, data, level=9)
    assert len(high) < len(low)
    assert gzip.decompress(low) == gzip.decompress(high) == data


def test_zstd_levels_including_negative_ones():
    data = _text(200_000)
    assert compress(Codec.ZSTD, data) == compress(Codec.ZSTD, data, level=3)
    sizes = {level: len(compress(Codec.ZSTD, data, level=level)) for level in (-50, 1, 19)}
    assert sizes[19] < sizes[1] < sizes[-50]
    for level in (-131072, -50, 22):
        assert zstandard.ZstdDecompressor().decompress(compress(Codec.ZSTD, data, level=level)) == data
