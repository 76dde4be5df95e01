"""Interoperability with kafka-python's own record code, every magic and codec, both ways."""

from __future__ import annotations

import random

import pytest

from protocol.records import Codec, RecordBatchBuilder, TimestampType, compress, decompress, iter_batches

from .oracle import ALL_CODECS, kcodec, kp_batch_info, kp_build_legacy, kp_build_v2, kp_read, skip_unless_available

CASES = [(m, c) for m in (0, 1, 2) for c in ALL_CODECS if not (m < 2 and c == Codec.ZSTD)]


def _sample(n: int, seed: int, *, headers: bool) -> list[tuple]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 5 == 3 else rng.randbytes(rng.randrange(0, 20))
        value = None if i % 7 == 4 else rng.randbytes(8) * rng.randrange(0, 300 if i % 4 == 0 else 6)  # compressible
        hs = tuple((f"h{j}-é", None if j == 1 else rng.randbytes(j * 3)) for j in range(i % 3)) if headers else ()
        out.append((key, value, 1_700_000_000_000 + rng.randrange(-5000, 5000), hs))
    return out


def _ours(data: bytes) -> list[tuple]:
    return [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for batch in iter_batches(memoryview(data)) for r in batch
    ]


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_kafka_python_batches_decode_with_ours(magic, codec):
    skip_unless_available(codec, magic)
    sample = _sample(40, seed=magic * 10 + codec, headers=magic == 2)
    if magic == 2:
        data = kp_build_v2(sample, codec, base_offset=1000)
    else:
        data = kp_build_legacy([(k, v, ts) for k, v, ts, _ in sample], codec, magic)
    expected = kp_read(data)
    assert len(expected) == len(sample)
    assert _ours(data) == expected
    for batch in iter_batches(data):
        assert batch.is_valid()
        assert batch.magic == magic
        assert batch.compression == codec == kp_batch_info(bytes(batch.buffer))[0][1]


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_our_batches_read_by_kafka_python(magic, codec):
    skip_unless_available(codec, magic)
    sample = _sample(40, seed=100 + magic * 10 + codec, headers=magic == 2)
    builder = RecordBatchBuilder(magic=magic, compression=codec, base_offset=77)
    for key, value, ts, hs in sample:
        builder.append(key, value, timestamp=ts, headers=hs)
    data = builder.build()
    got = kp_read(data)
    assert got == _ours(data)
    assert [r[0] for r in got] == list(range(77, 77 + len(sample)))
    if magic == 0:
        assert all(r[1] == -1 for r in got)
    else:
        assert [r[1] for r in got] == [s[2] for s in sample]
    assert [(r[2], r[3], r[4]) for r in got] == [(k, v, hs) for k, v, _, hs in sample]
    for info in kp_batch_info(data):
        assert info[0] == magic and info[1] == codec and info[3] is True


@pytest.mark.parametrize("magic", [1, 2])
def test_log_append_time_agrees_with_kafka_python(magic):
    builder = RecordBatchBuilder(
        magic=magic, compression=Codec.GZIP, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=5555
    )
    for i in range(5):
        builder.append(b"k", b"v%d" % i, timestamp=1000 + i)
    data = builder.build()
    assert [r[1] for r in kp_read(data)] == [5555] * 5
    assert [r[1] for r in _ours(data)] == [5555] * 5
    assert kp_batch_info(data)[0][2] == TimestampType.LOG_APPEND_TIME


def test_lz4_magic0_uses_kafkas_broken_header_checksum_both_ways():
    skip_unless_available(Codec.LZ4, 0)
    payload = b"lz4 quirk " * 500
    ours = compress(Codec.LZ4, payload, magic=0)
    assert kcodec.lz4_decode_old_kafka(ours) == payload
    theirs = kcodec.lz4_encode_old_kafka(payload)
    assert decompress(Codec.LZ4, theirs, magic=0) == payload
    # The quirk is real: the magic-0 frame is not a valid standard frame, the magic-1 one is.
    with pytest.raises(RuntimeError):
        kcodec.lz4_decode(ours)
    assert kcodec.lz4_decode(compress(Codec.LZ4, payload, magic=1)) == payload
    assert ours[6] != compress(Codec.LZ4, payload, magic=1)[6]


def test_snappy_xerial_framing_both_ways():
    skip_unless_available(Codec.SNAPPY, 2)
    payload = bytes(range(256)) * 600  # > 32 KiB: several xerial blocks
    ours = compress(Codec.SNAPPY, payload)
    assert ours.startswith(b"\x82SNAPPY\x00")
    assert kcodec.snappy_decode(ours) == payload
    assert decompress(Codec.SNAPPY, kcodec.snappy_encode(payload, xerial_compatible=True)) == payload
    assert decompress(Codec.SNAPPY, kcodec.snappy_encode(payload, xerial_compatible=False)) == payload


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.ZSTD])
def test_other_codecs_match_kafka_python(codec):
    payload = b"interop " * 1000
    enc, dec = {Codec.GZIP: (kcodec.gzip_encode, kcodec.gzip_decode), Codec.ZSTD: (kcodec.zstd_encode, kcodec.zstd_decode)}[codec]
    assert decompress(codec, enc(payload)) == payload
    assert dec(compress(codec, payload)) == payload
