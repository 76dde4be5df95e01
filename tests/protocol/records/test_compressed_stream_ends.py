"""Where a compressed stream ends, codec by codec, as Kafka's readers decide it.

Each case was also run through kafka-clients 4.3's ``Compression.wrapForInput`` on JDK 17 (gzip, lz4,
zstd; snappy from xerial snappy-java 1.1.10.5's ``SnappyInputStream`` source): what it reads, we read;
where it throws, we raise ``CompressedStreamError`` (UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

import gzip
import random
import struct
import zlib

import lz4.frame
import pytest
import zstandard

from protocol.errors import CompressedStreamError, CorruptRecordError, ErrorCode
from protocol.records import Codec, compress, decompress
from protocol.records.compression import XERIAL_HEADER

ONE, TWO = gzip.compress(b"one ", mtime=0), gzip.compress(b"two", mtime=0)


def _stored_member(size: int) -> bytes:
    """A gzip member of ``size`` (< 64 KiB) random bytes in one stored block: 10 bytes of header, ``size`` + 5 of
    deflate data, 8 of trailer."""
    return gzip.compress(random.Random(size).randbytes(size), compresslevel=0, mtime=0)


@pytest.mark.parametrize("tail", [b"x", b"\x1f\x8b", b"x" * 8, b"x" * 30, TWO[:2] + b"\x07" + TWO[3:] + b"z" * 20])
def test_gzip_bytes_after_a_member_that_are_no_header_end_the_stream(tail):
    assert decompress(Codec.GZIP, ONE + tail) == b"one "
    assert decompress(Codec.GZIP, ONE + TWO + tail) == b"one two"


def test_gzip_a_member_whose_header_reads_must_be_whole_and_sound():
    for bad in (TWO[:-3], TWO[:-8] + bytes(8), TWO[:10] + b"\xff" * 20):
        with pytest.raises(CompressedStreamError):
            decompress(Codec.GZIP, ONE + bad)


def test_gzip_header_reserved_flags_are_not_looked_at_but_a_header_crc_is():
    assert decompress(Codec.GZIP, ONE[:3] + b"\x20" + ONE[4:] + TWO[:3] + b"\xe0" + TWO[4:]) == b"one two"
    head = TWO[:3] + b"\x02" + TWO[4:10]
    crc = (zlib.crc32(head) & 0xFFFF).to_bytes(2, "little")
    assert decompress(Codec.GZIP, ONE + head + crc + TWO[10:]) == b"one two"
    assert decompress(Codec.GZIP, ONE + head + b"\x00\x00" + TWO[10:]) == b"one "  # a next header failing: the end
    with pytest.raises(CompressedStreamError):
        decompress(Codec.GZIP, head + b"\x00\x00" + TWO[10:])  # the first one failing: an error


@pytest.mark.parametrize(("size", "read_on"), [(100, False), (8100, False), (8170, True), (8187, True), (8190, False)])
def test_gzip_at_most_18_bytes_left_in_the_jdk_buffer_are_not_tried_as_a_header(size, read_on):
    """GZIPInputStream tries a next header only with more than 26 bytes (trailer included) left in its 8 KiB
    buffer or bytes still unread behind it: 14 bytes (a whole header, no data) after a member are ignored
    unless they straddle the end of a buffer fill."""
    member = _stored_member(size)  # its header is 10 bytes; the buffer is filled from there in 8 KiB steps
    data = member + TWO[:14]
    assert (len(member) - 8 <= 10 + 8192 < len(data)) == read_on  # the deflate data ends in the first fill
    if read_on:
        with pytest.raises(CompressedStreamError):
            decompress(Codec.GZIP, data)
    else:
        assert len(decompress(Codec.GZIP, data)) == size


def test_gzip_many_members_cost_input_linear_in_their_number(monkeypatch):
    """The inflater is handed a bounded window per member, not all the rest of the batch (whose copy into
    ``unused_data`` made 2 MB of empty members take 2.6 s); large members still read whole."""
    handed: list[int] = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self, *args):
            self._d = real(*args)

        def decompress(self, data, *args):
            handed.append(len(data))
            return self._d.decompress(data, *args)

        def __getattr__(self, name):
            return getattr(self._d, name)

    monkeypatch.setattr("protocol.records._gzip.zlib.decompressobj", Counting)
    empty = gzip.compress(b"", mtime=0)
    assert decompress(Codec.GZIP, empty * 2000) == b""
    assert len(handed) == 2000 and sum(handed) <= 2000 * 8192
    big = random.Random(7).randbytes(300_000)
    assert decompress(Codec.GZIP, gzip.compress(big, mtime=0) + empty) == big


def test_gzip_the_budget_covers_all_members():
    data = gzip.compress(b"\x00" * 1000) * 3
    assert len(decompress(Codec.GZIP, data, max_size=3000)) == 3000
    with pytest.raises(CorruptRecordError, match="more than") as caught:
        decompress(Codec.GZIP, data, max_size=2999)
    assert caught.value.error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lz4_bytes_after_the_end_mark_are_never_read(magic):
    frame = compress(Codec.LZ4, b"payload", magic=magic)
    for tail in (b"x", b"garbage!", frame, frame[:-1]):
        assert decompress(Codec.LZ4, frame + tail, magic=magic) == b"payload"


def test_lz4_reads_as_kafkas_lz4_block_input_stream():
    kw = {"block_linked": False, "block_size": lz4.frame.BLOCKSIZE_MAX64KB}
    checked = lz4.frame.compress(b"payload", content_checksum=True, store_size=True, **kw)
    assert decompress(Codec.LZ4, checked[:-1] + bytes([checked[-1] ^ 1])) == b"payload"  # checksum not verified
    with pytest.raises(CompressedStreamError):
        decompress(Codec.LZ4, checked[:-2])  # but its 4 bytes are read
    linked = lz4.frame.compress(b"x" * 100_000, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    assert linked[4] & 0x20 == 0  # (a frame of one block is always written independent)
    for refused in (linked, bytes([*checked[:4], checked[4] | 1]) + checked[5:]):
        with pytest.raises(CompressedStreamError):  # dependent blocks; FLG's reserved (dictionary id) bit
            decompress(Codec.LZ4, refused)


@pytest.mark.parametrize("options", [{}, {"content_checksum": True, "store_size": True}], ids=["plain", "rewritten"])
def test_lz4_a_wrong_header_checksum_is_refused_unless_magic_0(options):
    # Kafka's Lz4BlockInputStream checks the HC (magic 0 aside: KAFKA-3160); a frame read as it is leaves the
    # check to python-lz4, one whose flags are rewritten is checked before the rewrite
    frame = bytearray(lz4.frame.compress(b"payload", block_linked=False, **options))
    frame[_HC_AT[bool(options)]] ^= 0xFF
    with pytest.raises(CompressedStreamError):
        decompress(Codec.LZ4, bytes(frame), magic=1)
    assert decompress(Codec.LZ4, bytes(frame), magic=0) == b"payload"


_HC_AT = {False: 6, True: 14}  # FLG, BD, then 8 bytes of content size when stored


def _xerial(*chunks: bytes) -> bytes:
    return XERIAL_HEADER + b"".join(compress(Codec.SNAPPY, c)[16:] for c in chunks)


@pytest.mark.parametrize("tail", [b"x", b"xyz", XERIAL_HEADER[:4] + b"XXXX" + bytes(8) + b"junk"])
def test_snappy_bytes_that_are_no_chunk_end_the_stream(tail):
    assert decompress(Codec.SNAPPY, _xerial(b"one ", b"two") + tail) == b"one two"


def test_snappy_concatenated_streams_are_read_and_a_bad_header_refused():
    data = compress(Codec.SNAPPY, b"one ") + compress(Codec.SNAPPY, b"two")
    assert decompress(Codec.SNAPPY, data) == b"one two"
    old = XERIAL_HEADER[:8] + struct.pack(">ii", 0, 0)
    for bad in (compress(Codec.SNAPPY, b"one ") + XERIAL_HEADER[:10], compress(Codec.SNAPPY, b"one ") + old):
        with pytest.raises(CompressedStreamError):
            decompress(Codec.SNAPPY, bad)


Z = zstandard.ZstdCompressor()
UNSIZED = zstandard.ZstdCompressor(write_content_size=False)
SKIPPABLE = struct.pack("<II", 0x184D2A50, 3) + b"abc"


def test_zstd_every_frame_is_read_and_skippable_frames_skipped():
    for c in (Z, UNSIZED):
        assert decompress(Codec.ZSTD, c.compress(b"one ") + SKIPPABLE + c.compress(b"two")) == b"one two"
    assert decompress(Codec.ZSTD, SKIPPABLE + Z.compress(b"one")) == b"one"


@pytest.mark.parametrize("tail", [b"g", b"garbage!", SKIPPABLE + b"gggg", Z.compress(b"two") + b"gg"])
def test_zstd_bytes_after_a_frame_that_are_no_frame_are_an_error(tail):
    with pytest.raises(CompressedStreamError) as caught:
        decompress(Codec.ZSTD, Z.compress(b"one ") + tail)
    assert caught.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_zstd_a_frame_cut_short_after_a_whole_one_in_the_same_read_ends_the_stream():
    """zstd-jni only clears its "frame finished" flag when it reads its source again (128 KiB + 3 at a time)."""
    raw = zstandard.ZstdCompressor(level=-5).compress(b"world")  # a raw block: its bytes come out as they arrive
    assert decompress(Codec.ZSTD, Z.compress(b"hello ") + raw[:-2]) == b"hello wor"
    assert decompress(Codec.ZSTD, Z.compress(b"hello ") + raw[:2]) == b"hello "  # a magic's first bytes
    big = Z.compress(random.Random(1).randbytes(200_000))  # past one read: the cut frame needs another
    assert 131_075 < len(big) < 2 * 131_075 - len(raw)
    assert len(decompress(Codec.ZSTD, big + raw[:-2])) == 200_003
    past = Z.compress(random.Random(2).randbytes(131_055))
    assert len(past) < 131_075 < len(past) + len(raw)
    with pytest.raises(CompressedStreamError):
        decompress(Codec.ZSTD, past + raw[:-2])


def test_zstd_the_budget_covers_all_frames():
    data = UNSIZED.compress(b"\x00" * 1000) * 3
    assert len(decompress(Codec.ZSTD, data, max_size=3000)) == 3000
    with pytest.raises(CorruptRecordError, match="more than"):
        decompress(Codec.ZSTD, data, max_size=2999)
