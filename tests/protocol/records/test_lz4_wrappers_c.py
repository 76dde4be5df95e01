"""The C path for LZ4 batches (``_clz4.c`` via ``_cbatches``): takes what it should, same bytes as Python.

Every test converts with the accelerator and again with it switched off, and the
two answers must be equal byte for byte (or raise the same error). Where the
C path must decline (frames it does not read, corrupt data), the test checks
that it did, so the Python path's exact error is what the caller sees.
"""

from __future__ import annotations

import multiprocessing
import random
import shutil
import struct
import threading

import crc32c
import lz4.frame
import pytest

from protocol.errors import CompressedStreamError, CorruptRecordError, InvalidRecordError
from protocol.records import Codec, RecordBatchBuilder, TimestampType, down_convert, iter_batches
from protocol.records import _downconvert_runs, _cbatches
from protocol.records.v2 import RECORD_BATCH_OVERHEAD
from tests.protocol.records.helpers import python_only

if shutil.which("cc"):  # a compiler is here, so setup must have built the accelerator
    from protocol.records import _cdownconvert as cdc
else:
    cdc = pytest.importorskip("protocol.records._cdownconvert")
pytestmark = pytest.mark.skipif(not cdc.lz4_available(), reason="no liblz4.so.1 on this system")
MAX = 64 << 20


def lz4_batch(seed: int, base: int = 0, *, records: int = 60, lat: bool = False, headers: bool = False) -> bytes:
    rng = random.Random(seed)
    kw = {"timestamp_type": TimestampType.LOG_APPEND_TIME} if lat else {}
    b = RecordBatchBuilder(compression=Codec.LZ4, base_offset=base, **kw)
    for i in range(records):
        value = None if i % 11 == 5 else rng.randbytes(rng.randrange(0, 1500)) + bytes(rng.randrange(0, 900))
        key, ts = None if i % 7 == 3 else b"key-%d" % i, 1_700_000_000_000 + rng.randrange(-5, 5)
        hdrs = (("h", b"x" * (i % 4)),) if headers and i % 2 else ()
        b.append(key, value, timestamp=ts, headers=hdrs, attributes=1 if i % 13 == 1 else 0)
    return b.build()


def reframed(batch: bytes, frame: bytes) -> bytes:
    """``batch`` with its records section replaced by ``frame`` (length and CRC fixed)."""
    out = bytearray(batch[:RECORD_BATCH_OVERHEAD] + frame)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def payload(batch: bytes) -> bytes:
    return next(iter_batches(batch)).records_payload()


def python_way(data: bytes, magic: int, fetch_offset: int = 0, max_size: int = MAX):
    with python_only():
        return down_convert(data, target_magic=magic, fetch_offset=fetch_offset, max_decompressed_size=max_size)


def taken(data: bytes, magic: int, max_size: int = MAX, fetch_offset: int = 0) -> list[bool]:
    got = _cbatches.start(data, magic, fetch_offset, max_size, background=False)()
    if got is None:
        return []
    done, consumed, whole = got
    if whole is not None:  # the chunk's output is the one buffer all the entries are views of
        assert all(entry[0].obj is memoryview(whole).obj for entry in done) and b"".join(entry[0] for entry in done) == whole
        assert consumed == len(data)
    return [entry is not None for entry in done]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("lat", [False, True])
@pytest.mark.parametrize("headers", [False, True])
def test_batches_are_taken_and_give_pythons_bytes(magic, lat, headers):
    data = b"".join(lz4_batch(s, base=100 * s, lat=lat, headers=headers) for s in range(6))
    assert taken(data, magic) == [True] * 6
    for fetch_offset in (0, 250, 599):  # wrappers keep every record, whatever the fetch offset
        expected = python_way(data, magic, fetch_offset)
        assert down_convert(data, target_magic=magic, fetch_offset=fetch_offset) == expected


@pytest.mark.parametrize(
    "frame_options",
    [
        {"block_linked": False, "store_size": True},  # what kafka-python's producer writes
        {"block_linked": False, "store_size": True, "block_size": lz4.frame.BLOCKSIZE_MAX256KB},
        {"block_linked": False, "store_size": False, "block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_frames_other_producers_write_are_read(frame_options):
    source = lz4_batch(1, records=200)
    data = reframed(source, lz4.frame.compress(payload(source), **frame_options))
    assert taken(data, 1) == [True]
    assert down_convert(data, target_magic=1, fetch_offset=0) == python_way(data, 1)


def test_dependent_blocks_are_refused_both_ways():
    # Kafka's Lz4BlockInputStream (FLG.validate) throws "Dependent block stream is unsupported"
    source = lz4_batch(1, records=200)
    data = reframed(source, lz4.frame.compress(payload(source), block_linked=True, store_size=True))
    assert taken(data, 1) == [False]
    with pytest.raises(CompressedStreamError):
        python_way(data, 1)


def test_raw_blocks_in_and_out():
    b = RecordBatchBuilder(compression=Codec.LZ4)
    for i in range(3):
        b.append(b"k%d" % i, random.Random(i).randbytes(100_000), timestamp=i)  # incompressible: LZ4 stores it raw
    data = b.build()
    out = down_convert(data, target_magic=1, fetch_offset=0)
    assert taken(data, 1) == [True] and out == python_way(data, 1)
    value = out.records[34:]
    assert struct.unpack_from("<I", value, 7)[0] & 0x80000000  # the first output block went raw
    assert len(lz4.frame.decompress(value)) > 100_000


@pytest.mark.parametrize(
    "frame_options", [{"content_checksum": True}, {"block_checksum": True}], ids=["content checksum", "block checksum"]
)
def test_frames_with_checksums_go_the_python_way(frame_options):
    source = lz4_batch(2)
    data = reframed(source, lz4.frame.compress(payload(source), block_linked=False, **frame_options))
    assert taken(data, 0) == [False]
    assert down_convert(data, target_magic=0, fetch_offset=0) == python_way(data, 0)


def corrupt_frames() -> dict[str, bytes]:
    source = lz4_batch(3)
    frame = bytearray(lz4.frame.compress(payload(source), block_linked=False))
    bad_hc, bad_block, short = bytearray(frame), bytearray(frame), frame[:-9]
    bad_hc[6] ^= 0xFF
    bad_block[20:40] = bytes(20)
    return {"header checksum": reframed(source, bad_hc), "block": reframed(source, bad_block),
            "truncated": reframed(source, short)}  # fmt: skip


def raises_as_python(data: bytes, magic: int) -> None:
    """The C path declines ``data``'s one batch, and converting it raises exactly what the Python path raises."""
    assert taken(data, magic) == [False]
    with pytest.raises((CorruptRecordError, InvalidRecordError)) as c_error:
        down_convert(data, target_magic=magic, fetch_offset=0)
    with pytest.raises(type(c_error.value)) as py_error:
        python_way(data, magic)
    assert str(c_error.value) == str(py_error.value)


@pytest.mark.parametrize("name", list(corrupt_frames()))
def test_corrupt_frames_raise_pythons_error(name):
    raises_as_python(corrupt_frames()[name], 1)


def test_bytes_after_the_end_mark_are_not_read():
    # Kafka's Lz4BlockInputStream stops at the end mark; the C path leaves such a frame to Python, which agrees
    source = lz4_batch(3)
    frame = lz4.frame.compress(payload(source), block_linked=False)
    data = reframed(source, frame + b"\x00garbage")
    assert taken(data, 1) == [False]
    assert down_convert(data, target_magic=1, fetch_offset=0) == down_convert(reframed(source, frame), target_magic=1, fetch_offset=0)


def test_a_batch_with_a_bad_crc_is_left_to_python():
    data = bytearray(lz4_batch(4))
    data[-5] ^= 1
    assert taken(bytes(data), 1) == [False]  # planned, declined when its CRC-32C was checked
    with pytest.raises(CorruptRecordError, match="Record batch is corrupt"):
        down_convert(bytes(data), target_magic=1, fetch_offset=0)


def test_more_than_max_size_is_left_to_python():
    data = lz4_batch(5, records=100)
    assert taken(data, 1, max_size=1000) == [False]
    with pytest.raises(CorruptRecordError, match="more than 1000 bytes"):
        down_convert(data, target_magic=1, fetch_offset=0, max_decompressed_size=1000)


def test_a_bad_header_in_a_record_is_left_to_python():
    source = RecordBatchBuilder(compression=Codec.LZ4)
    source.append(b"k", b"v", timestamp=0, headers=(("h", b"x"),))
    source = source.build()
    records = bytearray(payload(source))
    records[-4] = 0x01  # the header key length varint becomes -1
    data = reframed(source, lz4.frame.compress(bytes(records), block_linked=False))
    assert taken(data, 1) == [False]
    with pytest.raises(InvalidRecordError, match="Invalid negative header key size"):
        down_convert(data, target_magic=1, fetch_offset=0)


def test_calls_from_two_threads_at_once():
    data = b"".join(lz4_batch(s, base=100 * s) for s in range(8))
    expected = python_way(data, 1)
    results: list = []

    def work():
        results.extend(down_convert(data, target_magic=1, fetch_offset=0) for _ in range(20))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 60 and all(r == expected for r in results)


def _convert_in_child(queue) -> None:
    data = b"".join(lz4_batch(s, base=100 * s) for s in range(4))
    queue.put(down_convert(data, target_magic=1, fetch_offset=0).records == python_way(data, 1).records)


def test_a_forked_child_starts_its_own_helper():
    data = b"".join(lz4_batch(s, base=100 * s) for s in range(4))
    down_convert(data, target_magic=1, fetch_offset=0)  # the helper thread is running in this process
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_convert_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and queue.get(timeout=5) is True


def test_switched_off_with_the_accelerator(monkeypatch):
    monkeypatch.setattr(_downconvert_runs, "C_EMIT", None)
    assert _cbatches.start(lz4_batch(6), 1, 0, MAX, background=False)() is None


def test_bad_arguments_are_python_errors():
    with pytest.raises(ValueError, match="7-byte frame header"):
        cdc.convert_chunk(b"", 1, b"\x04\x22", 0, MAX)
    with pytest.raises(ValueError, match="magic 0 or 1"):
        cdc.convert_chunk(b"", 2, bytes(7), 0, MAX)
    with pytest.raises(TypeError):
        cdc.convert_chunk(lz4_batch(6), 1, bytes(7), 0, "not a size")
