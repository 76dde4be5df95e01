"""A round of C jobs written in place from the front and in pieces from the back (``_clz4_threads.c``).

The jobs of a chunk write their entries straight into the round's one output
buffer from the front; the thread that needs the result takes the back half
of what is left as a piece of its own (again while jobs are left), and its
pieces are appended at the end. Which thread does what depends on timing, so
these tests force each way: the helper kept busy by a large round queued
ahead (the caller then takes a piece from the back and then the rest from
the front, or only the front), and rounds left to the helper and ended at
once or later. Every way must give the pure-Python converter's bytes, for
chunks of many shapes: LZ4 and uncompressed batches, tombstones (a null
value or the attributes flag), headers, a transaction marker, a gzip batch
and a corrupt batch (both left to Python), a cut entry at the end, any
fetch offset; and so must a Fetch answer fitted to a declared size below
the slice (``fitted_pieces``).
"""

from __future__ import annotations

import random
import time

import pytest

from protocol.records import Codec, RecordBatchBuilder, down_convert
from protocol.records._lz4 import frame_header
from protocol.records.convert import start_down_convert
from protocol.records.lazy_convert import BytesSource, fitted_pieces, start_down_conversion
from protocol.records.v2 import RECORD_BATCH_OVERHEAD

from .helpers import python_only
from .oracle import kp_read
from .test_lz4_wrappers_c import MAX, cdc, lz4_batch, python_way
from .test_plain_batches_c import TS0, plain_batch

pytestmark = pytest.mark.skipif(not cdc.lz4_available(), reason="no liblz4.so.1 on this system")


def _blocker() -> bytes:
    """A chunk that keeps the helper busy for a while: large LZ4 batches."""
    return b"".join(lz4_batch(900 + s, base=200 * s, records=200) for s in range(40))


def _marker(offset: int) -> bytes:
    b = RecordBatchBuilder(base_offset=offset, is_control=True, is_transactional=True, producer_id=3)
    b.append(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x01", timestamp=TS0)
    return b.build()


def _gzip(offset: int) -> bytes:
    b = RecordBatchBuilder(compression=Codec.GZIP, base_offset=offset)
    b.append(b"g", b"zipped", timestamp=TS0)
    return b.build()


def _shapes() -> dict[str, bytes]:
    """Chunks of whole entries (and one that ends in a cut entry), offsets rising through each."""
    many = b"".join(lz4_batch(s, base=60 * s) if s % 3 else plain_batch(s, 60 * s, records=60) for s in range(12))
    mixed = [plain_batch(1, 0), lz4_batch(2, base=40, records=40, headers=True), _gzip(80), _marker(81),
             plain_batch(3, 82, headers=True), lz4_batch(4, base=122, records=30), _marker(152),
             lz4_batch(5, base=153, records=50)]  # fmt: skip
    corrupt = bytearray(lz4_batch(7, base=60, records=30))
    corrupt[RECORD_BATCH_OVERHEAD + 9] ^= 0x10
    with_corrupt = [lz4_batch(6, base=0), bytes(corrupt), plain_batch(8, 90), lz4_batch(9, base=130, records=20)]
    return {
        "one lz4 batch": lz4_batch(11, base=0),
        "many batches": many,
        "markers, gzip, headers": b"".join(mixed),
        "a corrupt batch among good ones": b"".join(with_corrupt),
        "a cut entry at the end": many + lz4_batch(12, base=720)[:-40],
    }


SHAPES = _shapes()


def _expected(data: bytes, magic: int, fetch_offset: int):
    try:
        return python_way(data, magic, fetch_offset)
    except Exception as exc:  # noqa: BLE001 - the C path must raise the same
        return type(exc), str(exc)


def _converted(data: bytes, magic: int, fetch_offset: int, *, background: bool):
    try:
        return start_down_convert(data, target_magic=magic, fetch_offset=fetch_offset, background=background)()
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("fetch_offset", [0, 61, 125])
@pytest.mark.parametrize("background", [False, True], ids=["convert_chunk", "convert_chunk_start"])
def test_with_the_helper_busy_the_caller_converts_in_place_and_in_pieces(shape, magic, fetch_offset, background):
    data = SHAPES[shape]
    blocker = cdc.convert_chunk_start(_blocker(), 1, frame_header(1), 0, MAX)  # the helper takes it first
    try:
        got = _converted(data, magic, fetch_offset, background=background)
    finally:
        del blocker  # dropped unended: stopped after the job in hand
    assert got == _expected(data, magic, fetch_offset)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("magic", [0, 1])
def test_with_the_helper_free_any_split_gives_the_same_bytes(shape, magic):
    data = SHAPES[shape]
    expected = _expected(data, magic, 61)
    rng = random.Random(shape)
    for _ in range(12):  # ended at once (the caller takes the back half), soon, or once the helper is done
        end = start_down_convert(data, target_magic=magic, fetch_offset=61)
        time.sleep(rng.choice([0, 0, 0.0002, 0.001, 0.005]))
        try:
            got = end()
        except Exception as exc:  # noqa: BLE001
            got = type(exc), str(exc)
        assert got == expected
        assert _converted(data, magic, 61, background=False) == expected


def test_the_caller_appends_its_pieces_after_the_helpers_entries():
    data = SHAPES["many batches"]
    for _ in range(20):
        joined, lengths, written, consumed = cdc.convert_chunk(data, 1, frame_header(1), 0, MAX)
        assert bytes(joined) == python_way(data, 1).records and sum(lengths) == len(joined)
        assert None not in lengths and consumed == len(data) and sum(written) == 12 * 60


@pytest.mark.parametrize("cut", [1, 5000, 60_000])
@pytest.mark.parametrize("magic", [0, 1])
def test_a_fetch_answer_fitted_below_the_slice_is_pythons(monkeypatch, cut, magic):
    from protocol.records import lazy_convert

    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 30_000)  # several chunks, begun ahead
    data = SHAPES["many batches"] + SHAPES["one lz4 batch"][:-cut]  # the slice ends in a cut batch

    def answer() -> bytes:
        conv = start_down_conversion(BytesSource(data), target_magic=magic, fetch_offset=61)
        conv.size -= cut  # a declared size below the slice: the last piece is cut, as a max_bytes limit does
        return b"".join(bytes(piece) for piece, _ in fitted_pieces(conv))

    blocker = cdc.convert_chunk_start(_blocker(), 1, frame_header(1), 0, MAX)
    try:
        busy = answer()
    finally:
        del blocker
    free = answer()
    with python_only():
        expected = answer()
    assert busy == free == expected
    read, whole = kp_read(expected), kp_read(down_convert(data, target_magic=magic, fetch_offset=61).records)
    assert read and read == whole[: len(read)]  # a prefix of the records, as a client reads it
