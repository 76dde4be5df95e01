"""Codecs (bounded, errors mapped) and zigzag varints against independent references."""

from __future__ import annotations

import gzip
import os
import random
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError, ErrorCode, InvalidRecordError, UnknownCodecError, UnsupportedCompressionError
from protocol.records import Codec, compress, decompress
from protocol.records._lz4 import xxh32
from protocol.records.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)

CODECS = list(Codec)
MB = 1 << 20


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("payload", [b"", b"x", os.urandom(70_000), b"abc" * 50_000])
def test_compress_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


def test_codecs_write_the_standard_streams():
    data = b"standard " * 1000
    assert gzip.decompress(compress(Codec.GZIP, data)) == data
    assert zstandard.ZstdDecompressor().decompress(compress(Codec.ZSTD, data)) == data
    assert lz4.frame.decompress(compress(Codec.LZ4, data, magic=1)) == data
    snappy = compress(Codec.SNAPPY, data)
    assert bytes(cramjam.snappy.decompress_raw(snappy[20:])) == data  # one xerial block after the 16+4 bytes


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic):
    with pytest.raises(UnsupportedCompressionError):
        compress(Codec.ZSTD, b"x", magic=magic)
    with pytest.raises(UnsupportedCompressionError):
        decompress(Codec.ZSTD, b"x", magic=magic)


@pytest.mark.parametrize("codec_id", [5, 6, 7, -1])
def test_unknown_codec_ids(codec_id):
    with pytest.raises(UnknownCodecError) as caught:
        decompress(codec_id, b"x")
    assert caught.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR  # Kafka's IllegalArgumentException


BOMB = b"\x00" * (16 * MB)


@pytest.mark.parametrize("codec", [c for c in CODECS if c != Codec.NONE])
def test_decompression_bomb_is_bounded(codec):
    bomb = compress(codec, BOMB)
    assert len(bomb) < len(BOMB) // 20
    with pytest.raises(CorruptRecordError, match="more than|larger|full frame"):
        decompress(codec, bomb, max_size=MB)
    assert len(decompress(codec, bomb, max_size=16 * MB)) == 16 * MB


@pytest.mark.parametrize("magic", [0, 1, 2])
@pytest.mark.parametrize("size", [1, 65_535, 65_536, 300_000, 3 * MB + 7])
def test_lz4_limit_is_exact_across_growth_steps(magic, size):
    # zeros compress ~250x, so these frames take several of the doubling steps to decompress
    frame = compress(Codec.LZ4, b"\x00" * size, magic=magic)
    assert decompress(Codec.LZ4, frame, magic=magic, max_size=size) == b"\x00" * size
    with pytest.raises(CorruptRecordError, match="more than"):
        decompress(Codec.LZ4, frame, magic=magic, max_size=size - 1)


@pytest.mark.parametrize("size", [1, 65_536, 300_000, 3 * MB + 7])
def test_zstd_without_content_size_is_bounded_exactly_across_budgets(size):
    # the Java producer's frames carry no content size; zeros compress so well that several budgets are tried
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"\x00" * size)
    assert zstandard.frame_content_size(frame) == -1
    assert decompress(Codec.ZSTD, frame, max_size=size) == b"\x00" * size
    with pytest.raises(CorruptRecordError):
        decompress(Codec.ZSTD, frame, max_size=size - 1)
    for bad in (frame[:-1], frame[: len(frame) // 2]):
        with pytest.raises(CorruptRecordError):
            decompress(Codec.ZSTD, bad, max_size=size)


def test_zstd_declared_content_size_over_limit_is_refused_before_allocating():
    huge = zstandard.ZstdCompressor().compress(b"\x00" * (2 * MB))
    assert zstandard.frame_content_size(huge) == 2 * MB
    with pytest.raises(CorruptRecordError, match="declares"):
        decompress(Codec.ZSTD, huge, max_size=MB)


def test_snappy_lying_block_preamble_is_refused():
    block = bytes(cramjam.snappy.compress_raw(b"a" * 100))
    liar = b"\xff\xff\xff\xff\x0f" + block[1:]  # claims 4 GiB
    with pytest.raises(CorruptRecordError):
        decompress(Codec.SNAPPY, liar, max_size=MB)


@pytest.mark.parametrize("codec", [c for c in CODECS if c != Codec.NONE])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_garbage_and_truncation_raise_corrupt_record(codec, magic):
    if codec == Codec.ZSTD and magic < 2:
        return
    # Seeded, not os.urandom: a few random bytes are sometimes a valid raw snappy block, and a
    # test must not pass or fail by chance.
    rng = random.Random(f"{codec}-{magic}")
    good = compress(codec, rng.randbytes(1000) * 3, magic=magic)
    tiny = b"\x00" if codec != Codec.SNAPPY else b"\x05"  # b"\x00" is a valid empty raw snappy block
    for bad in (b"", tiny, rng.randbytes(50), good[: len(good) // 2], good[:-1]):
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad, magic=magic)


def test_gzip_concatenated_members_are_read():
    data = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress(Codec.GZIP, data) == b"one two"


def test_xxh32_matches_reference():
    xxhash = pytest.importorskip("xxhash")
    for n in (0, 1, 3, 4, 6, 15, 16, 17, 31, 32, 100):
        data = os.urandom(n)
        assert xxh32(data) == xxhash.xxh32_intdigest(data)
        assert xxh32(data, 7) == xxhash.xxh32_intdigest(data, seed=7)


# -- varints ------------------------------------------------------------------


def _reference_zigzag(n: int, bits: int) -> bytes:
    u = (n << 1) ^ (n >> (bits - 1))
    u &= (1 << bits) - 1
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(n):
    enc = encode_varint(n)
    assert enc == _reference_zigzag(n, 32) and len(enc) == size_of_varint(n) <= 5
    assert decode_varint(enc + b"\xff", 0) == (n, len(enc))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    enc = encode_varlong(n)
    assert enc == _reference_zigzag(n, 64) and len(enc) == size_of_varlong(n) <= 10
    assert decode_varlong(b"\x00" + enc, 1) == (n, len(enc) + 1)


def test_varint_known_vectors():
    assert [encode_varint(n) for n in (0, -1, 1, -2, 63, -64, 64)] == [
        b"\x00", b"\x01", b"\x02", b"\x03", b"\x7e", b"\x7f", b"\x80\x01",
    ]  # fmt: skip
    assert encode_varint(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert encode_varint(-(2**31)) == b"\xff\xff\xff\xff\x0f"


def test_varint_length_limits_and_underflow():
    with pytest.raises(InvalidRecordError, match="Varint is too long"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00")
    with pytest.raises(InvalidRecordError, match="Varlong is too long"):
        decode_varlong(b"\x80" * 10 + b"\x00")
    assert decode_varlong(b"\x80" * 9 + b"\x00") == (0, 10)
    with pytest.raises(InvalidRecordError):
        decode_varint(b"\x80\x80")
    with pytest.raises(InvalidRecordError):
        decode_varint(b"")
    with pytest.raises(InvalidRecordError):
        encode_varint(2**31)


def test_crc_functions_are_the_kafka_ones():
    # CRC-32 (IEEE) for legacy, CRC-32C for v2: standard check values of "123456789".
    import crc32c

    assert zlib.crc32(b"123456789") == 0xCBF43926
    assert crc32c.crc32c(b"123456789") == 0xE3069283
